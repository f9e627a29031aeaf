package store

import (
	"slices"
	"strconv"
)

// External users: a user of one organization added to other organizations
// of the same partner, where it acts with its own access level. The user
// keeps its own organization; the others are listed in
// User.ExternalOrganizationIDs.

// AddExternalUser adds user userID to organization orgID as an external
// user; adding it again is ErrConflict.
func (tx *Tx) AddExternalUser(userID, orgID int64) (*User, error) {
	return tx.setExternal(userID, orgID, true)
}

// RemoveExternalUser takes organization orgID from the organizations of
// external user userID; a user that is not one of its external users is
// ErrNotFound.
func (tx *Tx) RemoveExternalUser(userID, orgID int64) (*User, error) {
	return tx.setExternal(userID, orgID, false)
}

// setExternal adds or removes orgID among the external organizations of
// user userID, audited as organization.externalUser.add or .remove.
func (tx *Tx) setExternal(userID, orgID int64, add bool) (*User, error) {
	u, err := tx.User(userID)
	if err != nil {
		return nil, err
	}
	has := slices.Contains(u.ExternalOrganizationIDs, orgID)
	action := "organization.externalUser.add"
	switch {
	case add && has:
		return nil, Conflict("user %d is already an external user of organization %d", userID, orgID)
	case add && u.OrganizationID == orgID:
		return nil, Conflict("user %d is a user of organization %d already", userID, orgID)
	case add:
		u.ExternalOrganizationIDs = append(slices.Clone(u.ExternalOrganizationIDs), orgID)
	case !has:
		return nil, NotFound("external user %d of organization %d", userID, orgID)
	default:
		action = "organization.externalUser.remove"
		u.ExternalOrganizationIDs = slices.DeleteFunc(slices.Clone(u.ExternalOrganizationIDs), func(id int64) bool { return id == orgID })
	}
	if err := tx.rec.Users().Put(u); err != nil {
		return nil, err
	}
	return u, tx.Audit(AuditChange{Action: action, EntityType: "user", EntityID: strconv.FormatInt(userID, 10),
		OrganizationID: orgID, PartnerID: u.PartnerID, After: u.public()})
}
