package store

import (
	"crypto/sha256"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Access levels of a user.
const (
	AccessViewer                   = "viewer"
	AccessEditor                   = "editor"
	AccessEditorWithoutMediaAccess = "editorWithoutMediaAccess"
)

// ValidAccessLevel reports whether s names an access level.
func ValidAccessLevel(s string) bool {
	return s == AccessViewer || s == AccessEditor || s == AccessEditorWithoutMediaAccess
}

// CheckPassword enforces the password rules wherever a password is set (the
// API, the operator commands and the first partner of a new data dir): at
// least 8 characters with an upper-case letter, a lower-case letter and a
// digit; at most 72 bytes (bcrypt); not one of the 10,000 most used
// passwords, whatever the case of its letters (IsCommonPassword). The error
// is the rule that failed, worded to follow the name of the field or flag
// that carried the password.
func CheckPassword(pw string) error {
	var upper, lower, digit bool
	for _, r := range pw {
		upper = upper || unicode.IsUpper(r)
		lower = lower || unicode.IsLower(r)
		digit = digit || unicode.IsDigit(r)
	}
	switch {
	case len([]rune(pw)) < 8:
		return errors.New("must be at least 8 characters long")
	case len(pw) > 72:
		return errors.New("must be at most 72 bytes long")
	case !upper || !lower || !digit:
		return errors.New("must contain an upper-case letter, a lower-case letter and a digit")
	case IsCommonPassword(pw):
		return ErrCommonPassword
	}
	return nil
}

// Partner is a reseller: it creates organizations and owns devices in them.
type Partner struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}

// User is a person who logs in. A partner user has PartnerID set and no
// OrganizationID; an organization user has OrganizationID set (and the
// PartnerID of the organization's creator, for scoping).
type User struct {
	ID             int64     `json:"id"`
	Email          string    `json:"email"`
	Name           string    `json:"name,omitempty"`
	PasswordHash   []byte    `json:"passwordHash,omitempty"`
	PartnerID      int64     `json:"partnerId,omitempty"`
	OrganizationID int64     `json:"organizationId,omitempty"`
	AccessLevel    string    `json:"accessLevel"`
	CreatedAt      time.Time `json:"createdAt"`
	// InviteExpiresAt bounds the user's open invitation or password reset
	// tokens, whose hashes are indexed in the invite_tokens bucket.
	InviteExpiresAt time.Time `json:"inviteExpiresAt,omitzero"`
	// Settings are the user's regional settings for the portal.
	Settings UserSettings `json:"settings,omitzero"`
	// TokenGeneration is carried by every API token issued to the user; a
	// password change or reset moves it on, which ends the user's other
	// sessions (tokens of an older generation are refused).
	TokenGeneration int64 `json:"tokenGeneration,omitempty"`
	// ExternalOrganizationIDs are the other organizations the user was
	// added to as an external user (externalusers.go), in the order added.
	ExternalOrganizationIDs []int64 `json:"externalOrganizationIds,omitempty"`
}

// IsPartnerUser reports whether u acts for a partner rather than one organization.
func (u *User) IsPartnerUser() bool { return u.OrganizationID == 0 && u.PartnerID != 0 }

// NormalizeEmail is the form emails are compared and indexed in.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// CreatePartner adds a partner.
func (tx *Tx) CreatePartner(name string) (*Partner, error) {
	p := &Partner{Name: name, CreatedAt: tx.now}
	if err := tx.rec.Partners().Insert(p); err != nil {
		return nil, err
	}
	return p, tx.Audit(AuditChange{Action: "partner.create", EntityType: "partner", EntityID: strconv.FormatInt(p.ID, 10), PartnerID: p.ID, After: p})
}

// Partner returns the partner with id.
func (tx *Tx) Partner(id int64) (*Partner, error) {
	p, err := tx.rec.Partners().Get(id)
	if err != nil {
		return nil, missing(err, "partner %d", id)
	}
	return p, nil
}

// PartnerCount is the number of partners in the store (0 when they cannot
// be counted).
func (tx *Tx) PartnerCount() int {
	n, err := tx.rec.Partners().Count()
	if err != nil {
		return 0
	}
	return n
}

// CreateUser adds u, refusing an email already in use. u.ID and CreatedAt are set.
func (tx *Tx) CreateUser(u *User) error {
	u.Email = NormalizeEmail(u.Email)
	switch _, err := tx.rec.Users().ByEmail(u.Email); {
	case err == nil:
		return Conflict("user email %s already exists", u.Email)
	case !errors.Is(err, ErrNotFound):
		return err
	}
	u.CreatedAt = tx.now
	if err := tx.rec.Users().Insert(u); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "user.create", EntityType: "user", EntityID: strconv.FormatInt(u.ID, 10),
		PartnerID: u.PartnerID, OrganizationID: u.OrganizationID, After: u.public()})
}

// public is the user without secrets, for the audit log.
func (u *User) public() User {
	c := *u
	c.PasswordHash = nil
	return c
}

// User returns the user with id.
func (tx *Tx) User(id int64) (*User, error) {
	u, err := tx.rec.Users().Get(id)
	if err != nil {
		return nil, missing(err, "user %d", id)
	}
	return u, nil
}

// UserByEmail returns the user registered with email.
func (tx *Tx) UserByEmail(email string) (*User, error) {
	u, err := tx.rec.Users().ByEmail(NormalizeEmail(email))
	if err != nil {
		return nil, missing(err, "user %s", email)
	}
	return u, nil
}

// SetInviteToken records the hash of an invitation token for u, valid until expires.
func (tx *Tx) SetInviteToken(u *User, token string, expires time.Time) error {
	u.InviteExpiresAt = expires
	if err := tx.rec.InviteTokens().Put(sha256.Sum256([]byte(token)), u.ID); err != nil {
		return err
	}
	return tx.rec.Users().Put(u)
}

// RedeemInviteToken sets the password hash of the user the token was issued to
// (SetPassword: its tokens are forgotten, its sessions end). An unknown or
// expired token is ErrNotFound.
func (tx *Tx) RedeemInviteToken(token string, passwordHash []byte) (*User, error) {
	h := sha256.Sum256([]byte(token))
	u, err := tx.invitedUser(h)
	if err != nil {
		return nil, err
	}
	if err := tx.rec.InviteTokens().Delete(h); err != nil {
		return nil, err
	}
	if tx.now.After(u.InviteExpiresAt) {
		return nil, NotFound("invitation expired")
	}
	return tx.SetPassword(u.ID, passwordHash, "user.setPassword")
}

// InvitedUser returns the user an invitation token was issued to, without
// redeeming it. An unknown or expired token is ErrNotFound.
func (tx *Tx) InvitedUser(token string) (*User, error) {
	u, err := tx.invitedUser(sha256.Sum256([]byte(token)))
	if err != nil {
		return nil, err
	}
	if tx.now.After(u.InviteExpiresAt) {
		return nil, NotFound("invitation expired")
	}
	return u, nil
}

// invitedUser returns the user the token of hash was issued to, expired or
// not; an unknown token is ErrNotFound.
func (tx *Tx) invitedUser(hash [sha256.Size]byte) (*User, error) {
	id, err := tx.rec.InviteTokens().UserID(hash)
	if err != nil {
		return nil, missing(err, "invitation")
	}
	return tx.User(id)
}

// UserFilter selects users; zero fields do not filter.
type UserFilter struct {
	PartnerID      int64
	OrganizationID int64
	// PartnerUsersOnly keeps only partner users (no organization).
	PartnerUsersOnly bool
	// ExternalOrganizationID keeps the external users of this organization.
	ExternalOrganizationID int64
}

// Match reports whether f selects u.
func (f UserFilter) Match(u *User) bool {
	return (f.ExternalOrganizationID == 0 || slices.Contains(u.ExternalOrganizationIDs, f.ExternalOrganizationID)) &&
		(f.PartnerID == 0 || u.PartnerID == f.PartnerID) &&
		(f.OrganizationID == 0 || u.OrganizationID == f.OrganizationID) &&
		(!f.PartnerUsersOnly || u.OrganizationID == 0)
}

// Users returns the page p of the users matching f, in id order, and their
// total count.
func (tx *Tx) Users(f UserFilter, p Page) ([]User, int, error) {
	return tx.rec.Users().List(f, p)
}
