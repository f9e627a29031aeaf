package cloudapi

import (
	"net/http"
	"slices"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// roleAdministrator is the role of the reference contract an external
// user has in the organizations it was added to.
const roleAdministrator = "administrator"

// externalUserDTO is an external user of an organization as the reference
// contract lists it.
type externalUserDTO struct {
	ID             int64  `json:"id"`
	Email          string `json:"email"`
	Role           string `json:"role"`
	OrganizationID int64  `json:"organizationId"`
}

// externalUserRequest is the body of POST and DELETE
// /organizations/{orgId}/external-users.
type externalUserRequest struct {
	Email string `json:"email"`
}

// listExternalUsers handles GET /organizations/{orgId}/external-users.
func (s *Server) listExternalUsers(c *gin.Context) {
	out := []externalUserDTO{}
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		users, _, err := tx.Users(store.UserFilter{ExternalOrganizationID: o.ID}, store.Page{})
		for _, u := range users {
			out = append(out, externalUserDTO{ID: u.ID, Email: u.Email, Role: roleAdministrator, OrganizationID: u.OrganizationID})
		}
		return err
	})
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"users": out, "data": out, "requestId": requestID(c)})
}

// externalCandidate returns the user of email if it may be an external user
// of organization o: a user of another organization of o's creating
// partner. Any other address, registered or not, is the same 404, so the
// call tells nothing of other tenants' users.
func externalCandidate(tx *store.Tx, o *store.Organization, email string) (*store.User, error) {
	u, err := tx.UserByEmail(email)
	if err != nil || u.OrganizationID == 0 || u.PartnerID != o.PartnerID {
		return nil, notFound("user " + email)
	}
	own, err := tx.Organization(u.OrganizationID)
	if err != nil || own.PartnerID != o.PartnerID {
		return nil, notFound("user " + email)
	}
	return u, nil
}

// addExternalUser handles POST /organizations/{orgId}/external-users: a
// user with the editor access level (the contract's administrator) in
// another organization of the same partner also acts in this one, with
// that access level.
func (s *Server) addExternalUser(c *gin.Context) {
	s.changeExternalUser(c, func(tx *store.Tx, o *store.Organization, email string) error {
		u, err := externalCandidate(tx, o, email)
		if err != nil {
			return err
		}
		if u.AccessLevel != store.AccessEditor {
			return badField("email", "must be the e-mail of a user with the editor access level (an administrator) in its own organization")
		}
		_, err = tx.AddExternalUser(u.ID, o.ID)
		return err
	})
}

// removeExternalUser handles DELETE /organizations/{orgId}/external-users:
// the user stays in its own organization.
func (s *Server) removeExternalUser(c *gin.Context) {
	s.changeExternalUser(c, func(tx *store.Tx, o *store.Organization, email string) error {
		u, err := tx.UserByEmail(email)
		if err != nil || !slices.Contains(u.ExternalOrganizationIDs, o.ID) {
			return notFound("external user " + email)
		}
		_, err = tx.RemoveExternalUser(u.ID, o.ID)
		return err
	})
}

// changeExternalUser reads the e-mail of an external user request and runs
// change with it and the path's organization in a write transaction.
func (s *Server) changeExternalUser(c *gin.Context, change func(tx *store.Tx, o *store.Organization, email string) error) {
	var req externalUserRequest
	if err := decode(c, &req); err != nil {
		s.fail(c, err)
		return
	}
	email, err := checkEmail("email", req.Email)
	if err != nil {
		s.fail(c, err)
		return
	}
	err = s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		return change(tx, o, email)
	})
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"requestId": requestID(c)})
}
