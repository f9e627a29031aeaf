package cloudapi

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// userDTO is a partner contact or an organization user as the API shows it.
type userDTO struct {
	ID             int64  `json:"id"`
	Email          string `json:"email"`
	Name           string `json:"name"`
	Role           string `json:"role"`
	AccessLevel    string `json:"accessLevel"`
	PartnerID      int64  `json:"partnerId,omitempty"`
	OrganizationID int64  `json:"organizationId,omitempty"`
	// PasswordSet is false while the user has not yet redeemed its invitation.
	PasswordSet bool   `json:"passwordSet"`
	CreatedAt   string `json:"createdAt"`
}

// rolePartnerContact is the role of a partner's own users.
const rolePartnerContact = "partnerContact"

// levelRole is the reference contract's role an organization user is shown
// with: the first role of roleAccess with the user's access level.
var levelRole = map[string]string{
	store.AccessEditor:                   roleAdministrator,
	store.AccessEditorWithoutMediaAccess: "user",
	store.AccessViewer:                   "restricted",
}

func toUserDTO(u *store.User) userDTO {
	role := levelRole[u.AccessLevel]
	if u.IsPartnerUser() {
		role = rolePartnerContact
	}
	return userDTO{ID: u.ID, Email: u.Email, Name: u.Name, Role: role, AccessLevel: u.AccessLevel,
		PartnerID: u.PartnerID, OrganizationID: u.OrganizationID, PasswordSet: len(u.PasswordHash) > 0,
		CreatedAt: isoTime(u.CreatedAt)}
}

// createUserRequest is the body of POST /partners/{partnerId}/contacts and
// POST /organizations/{orgId}/users.
type createUserRequest struct {
	Name        string `json:"name"`
	Email       string `json:"email"`
	Password    string `json:"password"`
	AccessLevel string `json:"accessLevel"`
	// Role is the reference contract's spelling of the access level
	// (roleAccess); GroupIDs its groups, which are all of them (-2).
	Role     string  `json:"role"`
	GroupIDs []int64 `json:"groupIds"`
}

// createdUserDTO is a new user; without a password it carries the
// invitation token to set one with POST /reset-password/{token}.
type createdUserDTO struct {
	userDTO
	UserID              int64  `json:"userId"`
	InvitationToken     string `json:"invitationToken,omitempty"`
	InvitationExpiresAt string `json:"invitationExpiresAt,omitempty"`
}

// accessRank orders access levels so that nobody grants more than they hold.
var accessRank = map[string]int{store.AccessViewer: 1, store.AccessEditorWithoutMediaAccess: 2, store.AccessEditor: 3}

// validate checks the request and fills the default access level. The
// creator cannot grant a higher access level than its own.
func (req *createUserRequest) validate(creator Principal) error {
	email, err := checkEmail("email", req.Email)
	if err != nil {
		return err
	}
	req.Email = email
	req.Name = strings.TrimSpace(req.Name)
	if len([]rune(req.Name)) > maxNameLength {
		return badField("name", fmt.Sprintf("must be at most %d characters", maxNameLength))
	}
	if req.Role != "" {
		level, known := roleAccess[req.Role]
		switch {
		case !known:
			return badField("role", "must be one of "+roleNames)
		case req.AccessLevel != "" && req.AccessLevel != level:
			return badField("role", fmt.Sprintf("%s is the %s access level, not %s: give role or accessLevel", req.Role, level, req.AccessLevel))
		}
		req.AccessLevel = level
	}
	if req.GroupIDs != nil && (len(req.GroupIDs) != 1 || req.GroupIDs[0] != allGroups) {
		return badField("groupIds", fmt.Sprintf("must be [%d] or left out: a user has access to all of the organization's groups", allGroups))
	}
	if req.AccessLevel == "" {
		req.AccessLevel = store.AccessEditor
	}
	if !store.ValidAccessLevel(req.AccessLevel) {
		return badField("accessLevel", "must be one of viewer, editor, editorWithoutMediaAccess")
	}
	if creator.Kind == kindUser && accessRank[req.AccessLevel] > accessRank[creator.AccessLevel] {
		return forbidden("a %s cannot grant the %s access level", creator.AccessLevel, req.AccessLevel)
	}
	if req.Password != "" {
		return checkPassword("password", req.Password)
	}
	return nil
}

// checkEmail trims v and checks, naming field, that it is an e-mail address.
func checkEmail(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", badField(field, "is required")
	}
	if a, err := mail.ParseAddress(v); err != nil || a.Address != v || !strings.Contains(v[strings.LastIndex(v, "@"):], ".") {
		return "", badField(field, "must be an e-mail address such as name@example.com")
	}
	return v, nil
}

// checkPassword enforces the password rules (store.CheckPassword) on field.
func checkPassword(field, pw string) error {
	if err := store.CheckPassword(pw); err != nil {
		return badField(field, err.Error())
	}
	return nil
}

// newUser builds the user of req. Without a password it makes an
// invitation token, recorded (hashed) by the caller's transaction.
func (s *Server) newUser(c *gin.Context, req createUserRequest) (*store.User, string, error) {
	u := &store.User{Email: req.Email, Name: req.Name, AccessLevel: req.AccessLevel}
	if req.Password != "" {
		hash, err := s.passwords.hash(c.Request.Context(), req.Password)
		if err != nil {
			return nil, "", err
		}
		u.PasswordHash = hash
		return u, "", nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, "", err
	}
	return u, base64.RawURLEncoding.EncodeToString(b), nil
}

// addUser stores u and, with an invitation token, its hash and expiry.
func (s *Server) addUser(c *gin.Context, u *store.User, invite string, check func(tx *store.Tx) error) (createdUserDTO, error) {
	var out createdUserDTO
	err := s.update(c, func(tx *store.Tx) error {
		if err := check(tx); err != nil {
			return err
		}
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		if invite != "" {
			exp := tx.Now().Add(s.cfg.Auth.InviteTTL)
			if err := tx.SetInviteToken(u, invite, exp); err != nil {
				return err
			}
			out.InvitationToken, out.InvitationExpiresAt = invite, isoTime(exp)
		}
		return nil
	})
	out.userDTO, out.UserID = toUserDTO(u), u.ID
	return out, err
}

// createPartnerContact handles POST /partners/{partnerId}/contacts (partners
// only, for their own partner id).
func (s *Server) createPartnerContact(c *gin.Context) error {
	p := principal(c)
	if id, err := pathInt(c, "partnerId"); err != nil || id != p.PartnerID {
		return notFound("partner")
	}
	var req createUserRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if err := req.validate(p); err != nil {
		return err
	}
	u, invite, err := s.newUser(c, req)
	if err != nil {
		return err
	}
	u.PartnerID = p.PartnerID
	out, err := s.addUser(c, u, invite, func(*store.Tx) error { return nil })
	if err != nil {
		return err
	}
	// The reference contract gives the contact at the top level; data
	// carries it too, as every data call of the API does.
	return okBody(c, struct {
		userDTO
		Data      createdUserDTO `json:"data"`
		RequestID string         `json:"requestId"`
	}{out.userDTO, out, requestID(c)})
}

// listPartnerContacts handles GET /partners/{partnerId}/contacts and its
// alias GET /partner-contacts: the users of the caller's partner.
func (s *Server) listPartnerContacts(c *gin.Context) error {
	p := principal(c)
	if c.Param("partnerId") != "" {
		if id, err := pathInt(c, "partnerId"); err != nil || id != p.PartnerID {
			return notFound("partner")
		}
	}
	return s.listUsers(c, store.UserFilter{PartnerID: p.PartnerID, PartnerUsersOnly: true}, false)
}

// createOrganizationUser handles POST /organizations/{orgId}/users. Another
// partner sharing the organization cannot add its users.
func (s *Server) createOrganizationUser(c *gin.Context) error {
	var req createUserRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	p := principal(c)
	if err := req.validate(p); err != nil {
		return err
	}
	u, invite, err := s.newUser(c, req)
	if err != nil {
		return err
	}
	out, err := s.addUser(c, u, invite, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		if p.IsPartner() && p.PartnerID != o.PartnerID {
			return forbidden("only the partner that created organization %d can add its users", o.ID)
		}
		u.OrganizationID, u.PartnerID = o.ID, o.PartnerID
		return nil
	})
	if err != nil {
		return err
	}
	// The reference contract gives the new user's id at the top level.
	return okBody(c, struct {
		UserID    int64          `json:"userId"`
		Data      createdUserDTO `json:"data"`
		RequestID string         `json:"requestId"`
	}{out.UserID, out, requestID(c)})
}

// listOrganizationUsers handles GET /organizations/{orgId}/users.
func (s *Server) listOrganizationUsers(c *gin.Context) error {
	var orgID int64
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err == nil {
			orgID = o.ID
		}
		return err
	})
	if err != nil {
		return err
	}
	return s.listUsers(c, store.UserFilter{OrganizationID: orgID}, true)
}

// listUsers answers a page of the users f keeps; withUsers repeats them
// under "users", where the reference contract lists an organization's users.
func (s *Server) listUsers(c *gin.Context, f store.UserFilter, withUsers bool) error {
	pg, err := s.page(c)
	if err != nil {
		return err
	}
	var users []store.User
	var total int
	if err := s.view(c, func(tx *store.Tx) error { users, total, err = tx.Users(f, pg); return err }); err != nil {
		return err
	}
	out := make([]userDTO, 0, len(users))
	for i := range users {
		out = append(out, toUserDTO(&users[i]))
	}
	if !withUsers {
		return okPage(c, out, total, pg)
	}
	return okBody(c, struct {
		pageBody
		Users []userDTO `json:"users"`
	}{pageBody{Data: out, Metadata: Metadata{Count: total, Limit: pg.Limit, Offset: pg.Offset}, RequestID: requestID(c)}, out})
}

type resetPasswordRequest struct {
	NewPassword string `json:"newPassword"`
}

// resetPassword handles POST /reset-password/{token}: an invitation token
// sets its user's password once. Unknown, used and expired tokens are 404,
// found before any password is hashed so that the time taken tells
// nothing; guessing is braked per client address like sign-ins.
func (s *Server) resetPassword(c *gin.Context) error {
	var req resetPasswordRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.NewPassword == "" {
		return badField("newPassword", "is required")
	}
	if err := s.admitSignin(c, endpointResetPassword, ""); err != nil {
		return err
	}
	token := c.Param("token")
	err := s.view(c, func(tx *store.Tx) error { _, err := tx.InvitedUser(token); return err })
	if errors.Is(err, store.ErrNotFound) {
		s.signinFailed(endpointResetPassword, reasonBadCredentials)
		return notFound("invitation token")
	}
	if err != nil {
		return err
	}
	// The token is right: what follows is not a guess.
	s.signinSucceeded(c, "")
	if err := checkPassword("newPassword", req.NewPassword); err != nil {
		return err
	}
	hash, err := s.passwords.hash(c.Request.Context(), req.NewPassword)
	if err != nil {
		return err
	}
	var u *store.User
	actor := store.Actor{Source: "api:invitation", RequestID: requestID(c)}
	err = s.store.Update(c.Request.Context(), actor, func(tx *store.Tx) error {
		u, err = tx.RedeemInviteToken(token, hash)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return notFound("invitation token")
	}
	if err != nil {
		return err
	}
	return ok(c, gin.H{"userId": u.ID, "email": u.Email})
}
