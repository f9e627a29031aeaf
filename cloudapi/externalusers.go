package cloudapi

import (
	"errors"
	"slices"
	"strconv"

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
func (s *Server) listExternalUsers(c *gin.Context) error {
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
		return err
	}
	return okBody(c, gin.H{"users": out, "data": out, "requestId": requestID(c)})
}

// externalCandidate returns the user of email if it may be an external user
// of organization o: a user with the editor access level of another
// organization of o's creating partner (a user of o itself goes on to the
// store, which answers that it is one already). Every other address,
// registered or not, is the same refusal: a 404 as for an unknown address,
// so the call tells nothing of which addresses exist or at what access
// level, in o's partner or in another. Each refusal writes two audit
// entries: one in o that says no more than the answer, and one the caller
// cannot read (unless it may see the user anyway) with the reason: in the
// organization of a refused user of o's partner, else in the partner alone.
// The audit log so looks the same to the caller whatever the address was.
func externalCandidate(tx *store.Tx, o *store.Organization, email string) (*store.User, error) {
	refuse := func(detail store.AuditChange) error {
		detail.Action = actionExternalRefuse
		detail.Reason = "not added as an external user of organization " + strconv.FormatInt(o.ID, 10) + ": " + detail.Reason
		return &refusal{answer: notFound("user " + email), entries: []store.AuditChange{{
			Action: actionExternalRefuse, EntityType: entityOrganization, EntityID: strconv.FormatInt(o.ID, 10),
			OrganizationID: o.ID, PartnerID: o.PartnerID,
			Reason: email + " is not the e-mail of a user with the editor access level in another organization of this partner"},
			detail}}
	}
	partnerOnly := store.AuditChange{EntityType: entityOrganization, EntityID: strconv.FormatInt(o.ID, 10), PartnerID: o.PartnerID, PartnerOnly: true}
	u, err := tx.UserByEmail(email)
	if err != nil || u.PartnerID != o.PartnerID {
		partnerOnly.Reason = "no user of this partner has the e-mail " + email
		return nil, refuse(partnerOnly)
	}
	if u.OrganizationID == 0 {
		partnerOnly.Reason = email + " is a user of the partner, not of an organization"
		return nil, refuse(partnerOnly)
	}
	own, err := tx.Organization(u.OrganizationID)
	if err != nil || own.PartnerID != o.PartnerID {
		partnerOnly.Reason = "no user of an organization of this partner has the e-mail " + email
		return nil, refuse(partnerOnly)
	}
	if u.OrganizationID != o.ID && u.AccessLevel != store.AccessEditor {
		return nil, refuse(store.AuditChange{EntityType: "user", EntityID: strconv.FormatInt(u.ID, 10),
			OrganizationID: own.ID, PartnerID: own.PartnerID,
			Reason: "an external user must have the editor access level in its own organization, and " + email + " has " + u.AccessLevel})
	}
	return u, nil
}

// actionExternalRefuse is the audit action of a refused external user.
const actionExternalRefuse = "organization.externalUser.refuse"

// addExternalUser handles POST /organizations/{orgId}/external-users: a
// user with the editor access level (the contract's administrator) in
// another organization of the same partner also acts in this one, with
// that access level.
func (s *Server) addExternalUser(c *gin.Context) error {
	return s.changeExternalUser(c, func(tx *store.Tx, o *store.Organization, email string) error {
		u, err := externalCandidate(tx, o, email)
		if err != nil {
			return err
		}
		_, err = tx.AddExternalUser(u.ID, o.ID)
		return err
	})
}

// removeExternalUser handles DELETE /organizations/{orgId}/external-users:
// the user stays in its own organization.
func (s *Server) removeExternalUser(c *gin.Context) error {
	return s.changeExternalUser(c, func(tx *store.Tx, o *store.Organization, email string) error {
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
func (s *Server) changeExternalUser(c *gin.Context, change func(tx *store.Tx, o *store.Organization, email string) error) error {
	var req externalUserRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	email, err := checkEmail("email", req.Email)
	if err != nil {
		return err
	}
	err = s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		return change(tx, o, email)
	})
	var refused *refusal
	switch {
	case errors.As(err, &refused):
		return s.refuse(c, refused)
	case err != nil:
		return err
	}
	return okBody(c, gin.H{"requestId": requestID(c)})
}
