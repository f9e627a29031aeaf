package cloudapi

import (
	"strconv"
	"strings"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// auditEntryDTO is one audit log entry: who did what to which entity, with
// the value before and after.
// auditEntryDTO is an audit entry in the reference contract's shape: message
// (the same as action) and reason always named, the ids as strings, the
// values before and after as JSON text, and source one of the contract's
// (apiV2 for a change made through the API, absent otherwise); origin says
// who made the change in fleetcam's terms.
type auditEntryDTO struct {
	ID             int64  `json:"id"`
	CreatedAt      string `json:"createdAt"`
	Message        string `json:"message"`
	Action         string `json:"action"`
	Reason         string `json:"reason"`
	EntityType     string `json:"entityType"`
	EntityID       string `json:"entityId"`
	OrganizationID int64  `json:"organizationId,omitempty,string"`
	PartnerID      int64  `json:"partnerId,omitempty,string"`
	UserID         int64  `json:"userId,omitempty,string"`
	UserEmail      string `json:"userEmail,omitempty"`
	Source         string `json:"source,omitempty"`
	Origin         string `json:"origin,omitempty"`
	RequestID      string `json:"requestId,omitempty"`
	PreviousValue  string `json:"previousValue,omitempty"`
	Value          string `json:"value,omitempty"`
}

// auditSourceAPI is the reference contract's source of a change made through this API.
const auditSourceAPI = "apiV2"

func toAuditEntryDTO(e *store.AuditEntry) auditEntryDTO {
	out := auditEntryDTO{ID: e.ID, CreatedAt: isoTime(e.Time), Message: e.Action, Action: e.Action, Reason: e.Reason,
		EntityType: e.EntityType, EntityID: e.EntityID, OrganizationID: e.OrganizationID, PartnerID: e.PartnerID,
		UserID: e.UserID, UserEmail: e.UserEmail, Origin: e.Source, RequestID: e.RequestID,
		PreviousValue: string(e.Before), Value: string(e.After)}
	if e.Source == "api" || strings.HasPrefix(e.Source, "api:") {
		out.Source = auditSourceAPI
	}
	return out
}

// auditEntityTypes are the entity types audit entries name, the values
// of GET /audit-logs?entityType: account and address are the sign-in
// brake's lockouts (signin.go), the others what the API and the store
// change.
var auditEntityTypes = []string{"account", "address", "alarm", entityDevice, "driver", "event", entityGroup,
	"oauthClient", entityOrganization, "partner", "recipient", "user", "webhook", "webhookDelivery", "webhookEndpoint"}

// auditFilter reads the query filters of GET /audit-logs and narrows them to
// what the caller may read: a partner its partner's entries, anyone else its
// organization's.
func (s *Server) auditFilter(c *gin.Context) (store.AuditFilter, error) {
	f := store.AuditFilter{EntityID: c.Query("entityId"), Action: c.Query("action")}
	var err error
	if f.EntityType, err = queryEnum(c, "entityType", auditEntityTypes...); err != nil {
		return f, err
	}
	if imei := c.Query("imei"); imei != "" {
		if f.EntityType != "" && f.EntityType != entityDevice {
			return f, badField("imei", "filters device entries and cannot go with entityType "+f.EntityType)
		}
		if f.EntityID != "" && f.EntityID != imei {
			return f, badField("imei", "and entityId name different entities")
		}
		f.EntityType, f.EntityID = entityDevice, imei
	}
	for _, q := range []struct {
		name string
		dst  *int64
	}{{"userId", &f.UserID}, {"organizationId", &f.OrganizationID}} {
		v := c.Query(q.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return f, badField(q.name, "must be a positive integer id")
		}
		*q.dst = n
	}
	if f.Start, f.End, err = queryRange(c); err != nil {
		return f, err
	}
	p := principal(c)
	if p.IsPartner() {
		f.PartnerID = p.PartnerID
		if f.OrganizationID != 0 {
			err := s.view(c, func(tx *store.Tx) error { _, err := s.orgByID(c, tx, f.OrganizationID); return err })
			if err != nil {
				return f, err
			}
		}
		return f, nil
	}
	if p.OrganizationID == 0 {
		return f, forbidden("the audit log is for partners and organizations")
	}
	if f.OrganizationID != 0 && !p.inOrg(f.OrganizationID) {
		return f, notFound("organization")
	}
	if f.OrganizationID == 0 {
		f.OrganizationID = p.OrganizationID
	}
	return f, nil
}

// listAuditLogs handles GET /audit-logs, newest entries first.
func (s *Server) listAuditLogs(c *gin.Context) error {
	pg, err := s.page(c)
	if err != nil {
		return err
	}
	f, err := s.auditFilter(c)
	if err != nil {
		return err
	}
	entries, total, err := s.store.AuditLog(c.Request.Context(), f, pg)
	if err != nil {
		return err
	}
	out := make([]auditEntryDTO, 0, len(entries))
	for i := range entries {
		out = append(out, toAuditEntryDTO(&entries[i]))
	}
	if p := principal(c); p.IsPartner() {
		if err := s.view(c, func(tx *store.Tx) error { hideOtherPartnersUsers(tx, p, out); return nil }); err != nil {
			return err
		}
	}
	return okPage(c, out, total, pg)
}

// hideOtherPartnersUsers leaves out who made an entry when it is not a user
// of partner p: a partner sharing an organization sees the changes the host
// makes to its devices there (the host's event settings, say), not the
// host's users.
func hideOtherPartnersUsers(tx *store.Tx, p Principal, out []auditEntryDTO) {
	for i := range out {
		if out[i].UserID == 0 {
			continue
		}
		if u, err := tx.User(out[i].UserID); err != nil || u.PartnerID != p.PartnerID {
			out[i].UserID, out[i].UserEmail = 0, ""
		}
	}
}
