package store

import (
	"slices"
	"strconv"
)

// Sharing an organization takes the consent of the partner it is shared
// with: the creating partner invites (Organization.InvitedPartnerIDs, set
// with UpdateOrganization), and only the invited partner's acceptance adds
// it to PartnerIDs. An invitation names a partner id as given, so that
// inviting tells nothing about whether that partner exists. The
// organizations inviting a partner are those OrganizationFilter's
// InvitedPartnerID selects.

// MaxInvitedPartners bounds the open invitations of one organization.
const MaxInvitedPartners = 100

// AnswerOrganizationInvitation accepts (or declines) partnerID's invitation
// to share organization orgID: accepting adds the partner to PartnerIDs;
// either way the invitation is gone. An organization that does not invite
// the partner is ErrNotFound, whether or not it exists.
func (tx *Tx) AnswerOrganizationInvitation(orgID, partnerID int64, accept bool) (*Organization, error) {
	o, err := tx.Organization(orgID)
	if err != nil || !slices.Contains(o.InvitedPartnerIDs, partnerID) {
		return nil, NotFound("invitation to organization %d", orgID)
	}
	if _, err := tx.Partner(partnerID); err != nil {
		return nil, err
	}
	prev := o.public()
	o.InvitedPartnerIDs = slices.DeleteFunc(slices.Clone(o.InvitedPartnerIDs), func(id int64) bool { return id == partnerID })
	action := "organization.invitation.decline"
	if accept {
		o.PartnerIDs = append(slices.Clone(o.PartnerIDs), partnerID)
		action = "organization.invitation.accept"
	}
	if err := tx.rec.Organizations().Put(o); err != nil {
		return nil, err
	}
	// The answer is in the creating partner's audit log, with the
	// organization before and after, and in the answering partner's, which
	// learns nothing there of the organization's other partners.
	if err := tx.Audit(AuditChange{Action: action, EntityType: "organization",
		EntityID: strconv.FormatInt(o.ID, 10), OrganizationID: o.ID, PartnerID: o.PartnerID,
		Before: prev, After: o.public()}); err != nil {
		return nil, err
	}
	return o, tx.Audit(AuditChange{Action: action, EntityType: "organization",
		EntityID: strconv.FormatInt(o.ID, 10), OrganizationID: o.ID, PartnerID: partnerID})
}
