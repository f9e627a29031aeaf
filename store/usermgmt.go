package store

import (
	"crypto/sha256"
	"strconv"
	"time"
)

// Regional settings of a user: the measurement units and the time format
// the portal shows, numbered as the API numbers them. 0 is not set.
const (
	MeasurementImperial = 1
	MeasurementMetric   = 2
	TimeFormat24Hours   = 1
	TimeFormatAMPM      = 2
)

// UserSettings are a user's regional settings.
type UserSettings struct {
	Measurement int `json:"measurement,omitempty"`
	TimeFormat  int `json:"timeFormat,omitempty"`
}

// UpdateUser stores the changed name, access level and settings of u
// (never its e-mail or password) and audits the change under action.
func (tx *Tx) UpdateUser(u *User, action string) error {
	prev, err := tx.User(u.ID)
	if err != nil {
		return err
	}
	next := *prev
	next.Name, next.AccessLevel, next.Settings = u.Name, u.AccessLevel, u.Settings
	if !ValidAccessLevel(next.AccessLevel) && next.AccessLevel != "" {
		return Invalid("accessLevel", "must be one of viewer, editor, editorWithoutMediaAccess")
	}
	if s := next.Settings; s.Measurement < 0 || s.Measurement > MeasurementMetric || s.TimeFormat < 0 || s.TimeFormat > TimeFormatAMPM {
		return Invalid("", "user settings %+v out of range", s)
	}
	if err := tx.rec.Users().Put(&next); err != nil {
		return err
	}
	*u = next
	return tx.Audit(AuditChange{Action: action, EntityType: "user", EntityID: strconv.FormatInt(u.ID, 10),
		PartnerID: u.PartnerID, OrganizationID: u.OrganizationID, Before: prev.public(), After: next.public()})
}

// SetPassword gives user id the bcrypt hash of a new password, forgets its
// open invitation and reset tokens and moves its token generation on, so
// that every API token issued to it before is refused. The change is
// audited under action.
func (tx *Tx) SetPassword(id int64, passwordHash []byte, action string) (*User, error) {
	u, err := tx.User(id)
	if err != nil {
		return nil, err
	}
	if err := tx.rec.InviteTokens().DeleteUser(u.ID); err != nil {
		return nil, err
	}
	u.PasswordHash, u.InviteExpiresAt = passwordHash, time.Time{}
	u.TokenGeneration++
	if err := tx.rec.Users().Put(u); err != nil {
		return nil, err
	}
	return u, tx.Audit(AuditChange{Action: action, EntityType: "user", EntityID: strconv.FormatInt(u.ID, 10),
		PartnerID: u.PartnerID, OrganizationID: u.OrganizationID})
}

// SetResetToken records the hash of a password reset token for user id,
// valid until expires; it replaces every token the user had, so only the
// newest works. The token is redeemed like an invitation
// (RedeemInviteToken).
func (tx *Tx) SetResetToken(id int64, token string, expires time.Time) (*User, error) {
	u, err := tx.User(id)
	if err != nil {
		return nil, err
	}
	if err := tx.rec.InviteTokens().DeleteUser(u.ID); err != nil {
		return nil, err
	}
	u.InviteExpiresAt = expires
	if err := tx.rec.InviteTokens().Put(sha256.Sum256([]byte(token)), u.ID); err != nil {
		return nil, err
	}
	if err := tx.rec.Users().Put(u); err != nil {
		return nil, err
	}
	return u, tx.Audit(AuditChange{Action: "user.passwordReset.request", EntityType: "user", EntityID: strconv.FormatInt(u.ID, 10),
		PartnerID: u.PartnerID, OrganizationID: u.OrganizationID, Reason: "a password reset was e-mailed; it expires " + expires.UTC().Format(time.RFC3339)})
}

// DeleteUser deletes user id with its open tokens; its API tokens are
// refused from then on (the user no longer exists). The audit entry keeps
// the user as it was, without its password hash.
func (tx *Tx) DeleteUser(id int64) error {
	u, err := tx.User(id)
	if err != nil {
		return err
	}
	if err := tx.rec.Users().Delete(id); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "user.delete", EntityType: "user", EntityID: strconv.FormatInt(id, 10),
		PartnerID: u.PartnerID, OrganizationID: u.OrganizationID, Before: u.public()})
}
