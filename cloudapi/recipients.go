package cloudapi

import (
	"fmt"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Alarm e-mail recipients: /recipients/alarms (optionally limited to some
// alarm definitions) and /recipients/health (every device-health alarm).
// A partner adds them for one organization (organizationId) or, leaving it
// out, for all of its devices; anyone else for its own organization.

// alarmDefinitionRef names an alarm definition in a recipient.
type alarmDefinitionRef struct {
	ID   int64  `json:"id"`
	Name string `json:"name,omitempty"`
}

// recipientDTO is an alarm e-mail recipient.
type recipientDTO struct {
	ID                    int64                `json:"id"`
	Email                 string               `json:"email"`
	ReportIntervalSeconds int                  `json:"reportIntervalSeconds"`
	OrganizationID        int64                `json:"organizationId,omitempty"`
	AlarmDefinitions      []alarmDefinitionRef `json:"alarmDefinitions,omitempty"`
	CreatedByAudienceName string               `json:"createdByAudienceName"`
	CreatedByID           int64                `json:"createdById"`
	TargetEntity          string               `json:"targetEntity"`
	TargetID              int64                `json:"targetId"`
	LastReportAt          *string              `json:"lastReportAt,omitempty"`
}

func toRecipientDTO(r *store.AlarmRecipient) recipientDTO {
	out := recipientDTO{ID: r.ID, Email: r.Email, ReportIntervalSeconds: r.ReportIntervalSeconds, OrganizationID: r.OrganizationID,
		CreatedByAudienceName: store.AudienceShown(r.CreatedByAudienceName), CreatedByID: r.CreatedByID, TargetEntity: "organization",
		TargetID: r.OrganizationID, LastReportAt: isoTimeOrNull(r.LastReportAt)}
	if r.OrganizationID == 0 {
		out.TargetEntity, out.TargetID = "partner", r.PartnerID
	}
	for _, id := range r.AlarmDefinitions {
		d, _ := store.AlarmDefinitionByID(id)
		out.AlarmDefinitions = append(out.AlarmDefinitions, alarmDefinitionRef{ID: id, Name: d.Name})
	}
	return out
}

// canSeeRecipient applies tenancy to a recipient.
func canSeeRecipient(p Principal, r *store.AlarmRecipient) bool {
	if p.IsPartner() {
		return r.PartnerID == p.PartnerID
	}
	return p.Kind != kindScoped && p.inOrg(r.OrganizationID)
}

// recipientRequest is the body of POST /recipients/alarms and /recipients/health.
type recipientRequest struct {
	Email                 string               `json:"email"`
	ReportIntervalSeconds *int                 `json:"reportIntervalSeconds"`
	OrganizationID        *int64               `json:"organizationId"`
	AlarmDefinitions      []alarmDefinitionRef `json:"alarmDefinitions"`
}

func definitionIDs(refs []alarmDefinitionRef) ([]int64, error) {
	var out []int64
	for i, r := range refs {
		if _, found := store.AlarmDefinitionByID(r.ID); !found {
			return nil, badField(fmt.Sprintf("alarmDefinitions[%d].id", i), "must be one of "+alarmDefinitionIDs())
		}
		out = append(out, r.ID)
	}
	return out, nil
}

// listRecipients handles GET /recipients/alarms and /recipients/health.
func (s *Server) listRecipients(kind string) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		q, err := queryOrgID(c)
		if err != nil {
			return err
		}
		p := principal(c)
		out := []recipientDTO{}
		err = s.view(c, func(tx *store.Tx) error {
			if q != 0 {
				if _, err := s.orgByID(c, tx, q); err != nil {
					return err
				}
			}
			rs, err := tx.AlarmRecipients(func(r *store.AlarmRecipient) bool {
				return r.Kind == kind && canSeeRecipient(p, r) && (q == 0 || r.OrganizationID == q)
			})
			for i := range rs {
				out = append(out, toRecipientDTO(&rs[i]))
			}
			return err
		})
		if err != nil {
			return err
		}
		return ok(c, out)
	}
}

// addRecipient handles POST /recipients/alarms and /recipients/health.
func (s *Server) addRecipient(kind string) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		var req recipientRequest
		if err := decode(c, &req); err != nil {
			return err
		}
		if req.Email == "" {
			return badField("email", "is required")
		}
		if req.ReportIntervalSeconds == nil && kind == store.RecipientHealth {
			return badField("reportIntervalSeconds", "is required")
		}
		if kind == store.RecipientHealth && req.AlarmDefinitions != nil {
			return badField("alarmDefinitions", "is for alarm recipients (/recipients/alarms) only")
		}
		defs, err := definitionIDs(req.AlarmDefinitions)
		if err != nil {
			return err
		}
		q, err := queryOrgID(c)
		if err != nil {
			return err
		}
		if req.OrganizationID != nil && q != 0 && *req.OrganizationID != q {
			return badField("organizationId", fmt.Sprintf("must equal the organizationId query parameter (%d)", q))
		}
		if req.OrganizationID != nil {
			q = *req.OrganizationID
		}
		p := principal(c)
		r := &store.AlarmRecipient{Kind: kind, Email: req.Email, ReportIntervalSeconds: deref(req.ReportIntervalSeconds),
			AlarmDefinitions: defs, PartnerID: p.PartnerID}
		err = s.update(c, func(tx *store.Tx) error {
			if q == 0 && !p.IsPartner() {
				q = p.OrganizationID
			}
			if q != 0 {
				o, err := s.orgByID(c, tx, q)
				if err != nil {
					return err
				}
				r.OrganizationID = o.ID
				if !p.IsPartner() {
					r.PartnerID = o.PartnerID
				}
			}
			return tx.AddAlarmRecipient(r)
		})
		if err != nil {
			return err
		}
		return ok(c, toRecipientDTO(r))
	}
}

// recipient returns the recipient of the path parameter recipientId of kind if the caller may see it.
func (s *Server) recipient(c *gin.Context, tx *store.Tx, kind string) (*store.AlarmRecipient, error) {
	id, err := pathInt(c, "recipientId")
	if err != nil {
		return nil, err
	}
	r, err := tx.AlarmRecipient(id)
	if err != nil || r.Kind != kind || !canSeeRecipient(principal(c), r) {
		return nil, notFound(fmt.Sprintf("recipient %d", id))
	}
	if o, err := tx.Organization(r.OrganizationID); err == nil {
		if err := checkHost(c, o); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// recipientPatch is the body of PATCH /recipients/alarms/{recipientId}.
type recipientPatch struct {
	ReportIntervalSeconds *int                  `json:"reportIntervalSeconds"`
	AlarmDefinitions      *[]alarmDefinitionRef `json:"alarmDefinitions"`
}

// updateRecipient handles PATCH /recipients/alarms/{recipientId}.
func (s *Server) updateRecipient(c *gin.Context) error {
	var req recipientPatch
	if err := decode(c, &req); err != nil {
		return err
	}
	var defs []int64
	if req.AlarmDefinitions != nil {
		var err error
		if defs, err = definitionIDs(*req.AlarmDefinitions); err != nil {
			return err
		}
	}
	var out recipientDTO
	err := s.update(c, func(tx *store.Tx) error {
		r, err := s.recipient(c, tx, store.RecipientAlarms)
		if err != nil {
			return err
		}
		if req.ReportIntervalSeconds != nil {
			r.ReportIntervalSeconds = *req.ReportIntervalSeconds
		}
		if req.AlarmDefinitions != nil {
			r.AlarmDefinitions = defs
		}
		if err := tx.UpdateAlarmRecipient(r); err != nil {
			return err
		}
		out = toRecipientDTO(r)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// deleteRecipient handles DELETE /recipients/alarms/{recipientId} and /recipients/health/{recipientId}.
func (s *Server) deleteRecipient(kind string) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		err := s.update(c, func(tx *store.Tx) error {
			r, err := s.recipient(c, tx, kind)
			if err != nil {
				return err
			}
			return tx.DeleteAlarmRecipient(r.ID)
		})
		if err != nil {
			return err
		}
		return ok(c, gin.H{"deleted": true})
	}
}
