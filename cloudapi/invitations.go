package cloudapi

import (
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Invitations to share an organization. The creating partner invites other
// partners with PATCH /organizations/{orgId} partnerIds; an invited partner
// lists its invitations and accepts or declines each. Only an accepted
// invitation shares the organization.

// Invitation states as the invited partner sees them.
const (
	invitationPending  = "pending"
	invitationAccepted = "accepted"
	invitationDeclined = "declined"
)

// invitationDTO is an invitation to share an organization, as the invited
// partner sees it.
type invitationDTO struct {
	OrganizationID   int64  `json:"organizationId"`
	OrganizationName string `json:"organizationName"`
	// PartnerID is the inviting partner, the one that created the organization.
	PartnerID    int64  `json:"partnerId"`
	ResellerName string `json:"resellerName,omitempty"`
	Status       string `json:"status"`
}

func toInvitationDTO(tx *store.Tx, o *store.Organization, status string) invitationDTO {
	d := invitationDTO{OrganizationID: o.ID, OrganizationName: o.Name, PartnerID: o.PartnerID, Status: status}
	if r, err := tx.Partner(o.PartnerID); err == nil {
		d.ResellerName = r.Name
	}
	return d
}

// listOrganizationInvitations handles GET /partners/organization-invitations
// (partners only): the invitations of the caller's partner not answered yet.
func (s *Server) listOrganizationInvitations(c *gin.Context) error {
	pg, err := s.page(c)
	if err != nil {
		return err
	}
	var out []invitationDTO
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		orgs, n, err := tx.Organizations(store.OrganizationFilter{InvitedPartnerID: principal(c).PartnerID}, pg)
		if err != nil {
			return err
		}
		total = n
		for i := range orgs {
			out = append(out, toInvitationDTO(tx, &orgs[i], invitationPending))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return okPage(c, out, total, pg)
}

// acceptOrganizationInvitation handles POST
// /partners/organization-invitations/{orgId}/accept: the organization is
// shared with the caller's partner from now on.
func (s *Server) acceptOrganizationInvitation(c *gin.Context) error {
	return s.answerOrganizationInvitation(c, true)
}

// declineOrganizationInvitation handles POST
// /partners/organization-invitations/{orgId}/decline: the invitation is gone
// and nothing is shared.
func (s *Server) declineOrganizationInvitation(c *gin.Context) error {
	return s.answerOrganizationInvitation(c, false)
}

func (s *Server) answerOrganizationInvitation(c *gin.Context, accept bool) error {
	status := invitationDeclined
	if accept {
		status = invitationAccepted
	}
	var out invitationDTO
	err := s.update(c, func(tx *store.Tx) error {
		id, err := pathInt(c, "orgId")
		if err != nil {
			return notFound("invitation")
		}
		o, err := tx.AnswerOrganizationInvitation(id, principal(c).PartnerID, accept)
		if err != nil {
			return err
		}
		out = toInvitationDTO(tx, o, status)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}
