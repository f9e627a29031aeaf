package cloudapi

import (
	"fmt"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Managing users: deleting them, editing partner contacts, and each user's
// own password and settings.

// visibleUser returns user id if the caller may manage it: a partner user
// manages its partner's contacts and the users of the organizations its
// partner created; an organization user or admin token the users of its
// organization. Any other user, existing or not, is 404.
func visibleUser(c *gin.Context, tx *store.Tx, id int64) (*store.User, error) {
	p := principal(c)
	u, err := tx.User(id)
	if err != nil {
		return nil, notFound(fmt.Sprintf("user %d", id))
	}
	switch {
	case p.IsPartner() && u.PartnerID == p.PartnerID:
		if u.OrganizationID == 0 {
			return u, nil
		}
		if o, err := tx.Organization(u.OrganizationID); err == nil && o.PartnerID == p.PartnerID {
			return u, nil
		}
	case !p.IsPartner() && p.OrganizationID != 0 && u.OrganizationID == p.OrganizationID:
		return u, nil
	}
	return nil, notFound(fmt.Sprintf("user %d", id))
}

// checkManage refuses a change of user u by a user of lower access level
// than u's, as nobody grants more than they hold.
func checkManage(p Principal, u *store.User, verb string) error {
	if p.Kind == kindUser && accessRank[u.AccessLevel] > accessRank[p.AccessLevel] {
		return forbidden("a %s cannot %s a user with the %s access level", p.AccessLevel, verb, u.AccessLevel)
	}
	return nil
}

// checkLastEditor refuses to leave partner partnerID without a contact of
// the editor access level, who alone can manage the partner's contacts
// again: u is the contact about to be deleted or lowered.
func checkLastEditor(tx *store.Tx, u *store.User) error {
	if !u.IsPartnerUser() || u.AccessLevel != store.AccessEditor {
		return nil
	}
	contacts, _, err := tx.Users(store.UserFilter{PartnerID: u.PartnerID, PartnerUsersOnly: true}, store.Page{})
	if err != nil {
		return err
	}
	for _, o := range contacts {
		if o.ID != u.ID && o.AccessLevel == store.AccessEditor {
			return nil
		}
	}
	return conflict("user %d is the partner's last contact with the editor access level; give another contact that level first", u.ID)
}

// removeUser deletes user id after the rules every deletion follows: the
// caller may manage it (visibleUser, checkManage, and only if keep accepts
// it), a user does not delete itself, and a partner keeps an editor.
func (s *Server) removeUser(c *gin.Context, id int64, keep func(u *store.User) bool) error {
	p := principal(c)
	err := s.update(c, func(tx *store.Tx) error {
		u, err := visibleUser(c, tx, id)
		if err != nil {
			return err
		}
		if !keep(u) {
			return notFound(fmt.Sprintf("user %d", id))
		}
		if p.Kind == kindUser && u.ID == p.UserID {
			return forbidden("a user cannot delete itself")
		}
		if err := checkManage(p, u, "delete"); err != nil {
			return err
		}
		if err := checkLastEditor(tx, u); err != nil {
			return err
		}
		return tx.DeleteUser(u.ID)
	})
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"requestId": requestID(c)})
}

// deleteUser handles DELETE /users/{userId}: a partner contact, or a user of
// an organization the caller manages. Its tokens stop working at once.
func (s *Server) deleteUser(c *gin.Context) error {
	id, err := pathInt(c, "userId")
	if err != nil {
		return notFound("user")
	}
	return s.removeUser(c, id, func(*store.User) bool { return true })
}

// contactID returns the partnerContactId of the path if partnerId is the
// caller's partner.
func contactID(c *gin.Context) (int64, error) {
	if id, err := pathInt(c, "partnerId"); err != nil || id != principal(c).PartnerID {
		return 0, notFound("partner")
	}
	id, err := pathInt(c, "partnerContactId")
	if err != nil {
		return 0, notFound("partner contact")
	}
	return id, nil
}

// deletePartnerContact handles DELETE
// /partners/{partnerId}/contacts/{partnerContactId} (partners only).
func (s *Server) deletePartnerContact(c *gin.Context) error {
	id, err := contactID(c)
	if err != nil {
		return err
	}
	return s.removeUser(c, id, (*store.User).IsPartnerUser)
}

// patchContactRequest is the body of PATCH
// /partners/{partnerId}/contacts/{partnerContactId}; absent fields stay.
type patchContactRequest struct {
	ID          *int64  `json:"id"`
	Name        *string `json:"name"`
	Email       *string `json:"email"`
	AccessLevel *string `json:"accessLevel"`
}

// patchPartnerContact handles PATCH
// /partners/{partnerId}/contacts/{partnerContactId} (partners only): the
// contact's name and access level. A contact's e-mail is its sign-in and
// never changes; the body may repeat it.
func (s *Server) patchPartnerContact(c *gin.Context) error {
	id, err := contactID(c)
	if err != nil {
		return err
	}
	var req patchContactRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	p := principal(c)
	switch {
	case req.ID != nil && *req.ID != id:
		return badField("id", "must be the partnerContactId of the path")
	case req.AccessLevel != nil && !store.ValidAccessLevel(*req.AccessLevel):
		return badField("accessLevel", "must be one of viewer, editor, editorWithoutMediaAccess")
	case req.AccessLevel != nil && accessRank[*req.AccessLevel] > accessRank[p.AccessLevel]:
		return forbidden("a %s cannot grant the %s access level", p.AccessLevel, *req.AccessLevel)
	}
	var name string
	if req.Name != nil {
		if name, err = requiredName("name", *req.Name); err != nil {
			return err
		}
	}
	var out userDTO
	err = s.update(c, func(tx *store.Tx) error {
		u, err := visibleUser(c, tx, id)
		if err != nil || !u.IsPartnerUser() {
			return notFound(fmt.Sprintf("partner contact %d", id))
		}
		if req.Email != nil && store.NormalizeEmail(*req.Email) != u.Email {
			return badField("email", "cannot be changed: it is the contact's sign-in; create a new contact instead")
		}
		if err := checkManage(p, u, "change"); err != nil {
			return err
		}
		if req.Name != nil {
			u.Name = name
		}
		if req.AccessLevel != nil && *req.AccessLevel != u.AccessLevel {
			if err := checkLastEditor(tx, u); err != nil {
				return err
			}
			u.AccessLevel = *req.AccessLevel
		}
		if err := tx.UpdateUser(u, "user.update"); err != nil {
			return err
		}
		out = toUserDTO(u)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// ownUser refuses tokens that belong to no user (admin and scoped tokens),
// which have no password or settings of their own.
func ownUser(p Principal) error {
	if p.Kind != kindUser || p.UserID == 0 {
		return forbidden("only a user's own token can change its password or settings")
	}
	return nil
}

// settingsRequest is the body of PUT /users/update-settings.
type settingsRequest struct {
	Measurement *int `json:"measurement"`
	TimeFormat  *int `json:"timeFormat"`
}

// putUserSettings handles PUT /users/update-settings: the caller's own
// measurement units and time format, both required (PUT replaces). Any
// access level may set its own settings.
func (s *Server) putUserSettings(c *gin.Context) error {
	p := principal(c)
	if err := ownUser(p); err != nil {
		return err
	}
	var req settingsRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"measurement", req.Measurement}, {"timeFormat", req.TimeFormat}} {
		switch {
		case f.v == nil:
			return badField(f.name, "is required")
		case *f.v != 1 && *f.v != 2:
			return badField(f.name, "must be 1 or 2")
		}
	}
	settings := store.UserSettings{Measurement: *req.Measurement, TimeFormat: *req.TimeFormat}
	err := s.update(c, func(tx *store.Tx) error {
		u, err := tx.User(p.UserID)
		if err != nil {
			return err
		}
		u.Settings = settings
		return tx.UpdateUser(u, "user.settings")
	})
	if err != nil {
		return err
	}
	return ok(c, settingsDTO{Measurement: settings.Measurement, TimeFormat: settings.TimeFormat})
}

// settingsDTO are a user's regional settings as the API shows them.
type settingsDTO struct {
	Measurement int `json:"measurement,omitempty"`
	TimeFormat  int `json:"timeFormat,omitempty"`
}

// changePasswordRequest is the body of POST /users/{userId}/change-password.
type changePasswordRequest struct {
	CurrentPassword string `json:"currentPassword"`
	NewPassword     string `json:"newPassword"`
}

// changePassword handles POST /users/{userId}/change-password: the caller
// changes its own password (another userId is 404), giving the current
// one, which is braked like a sign-in. Every token issued to the user
// before stops working; the answer carries a new token for the caller.
func (s *Server) changePassword(c *gin.Context) error {
	p := principal(c)
	if err := ownUser(p); err != nil {
		return err
	}
	if id, err := pathInt(c, "userId"); err != nil || id != p.UserID {
		return notFound("user")
	}
	var req changePasswordRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	switch {
	case req.CurrentPassword == "":
		return badField("currentPassword", "is required")
	case req.NewPassword == "":
		return badField("newPassword", "is required")
	case req.NewPassword == req.CurrentPassword:
		return badField("newPassword", "must differ from currentPassword")
	}
	if err := checkPassword("newPassword", req.NewPassword); err != nil {
		return err
	}
	account := "email:" + p.Email
	if err := s.admitSignin(c, endpointChangePassword, account); err != nil {
		return err
	}
	var hash []byte
	if err := s.view(c, func(tx *store.Tx) error {
		u, err := tx.User(p.UserID)
		if err == nil {
			hash = u.PasswordHash
		}
		return err
	}); err != nil {
		s.signinUnchecked(c, account)
		return err
	}
	match, err := s.passwords.compare(c.Request.Context(), hash, req.CurrentPassword)
	if err != nil {
		s.signinFailed(endpointChangePassword, reasonBusy)
		s.signinUnchecked(c, account)
		return err
	}
	if !match {
		s.signinFailed(endpointChangePassword, reasonBadCredentials)
		return badField("currentPassword", "is wrong")
	}
	s.signinSucceeded(c, account)
	newHash, err := s.passwords.hash(c.Request.Context(), req.NewPassword)
	if err != nil {
		return err
	}
	var u *store.User
	err = s.update(c, func(tx *store.Tx) error {
		u, err = tx.SetPassword(p.UserID, newHash, "user.changePassword")
		return err
	})
	if err != nil {
		return err
	}
	p.Generation = u.TokenGeneration
	tok, exp, err := s.issue(p, s.cfg.Auth.UserTokenTTL)
	if err != nil {
		return err
	}
	return ok(c, authenticateResponse{Token: tok, OrganizationID: u.OrganizationID, PartnerID: u.PartnerID, ExpiresAt: isoTime(exp)})
}
