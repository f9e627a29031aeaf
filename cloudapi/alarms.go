package cloudapi

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fleetcam/fleetcam/cloudapi/apiform"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// alarmActionDTO is an open, close, read or unread of an alarm.
type alarmActionDTO struct {
	ID                    int64  `json:"id"`
	AlarmID               int64  `json:"alarmId"`
	Type                  string `json:"type"`
	CreatedByAudienceName string `json:"createdByAudienceName"`
	CreatedByID           int64  `json:"createdById"`
	CreatedAt             string `json:"createdAt"`
	UpdatedAt             string `json:"updatedAt"`
}

// alarmDTO is an alarm as the API shows it. lastReadAt and lastCloseAt are
// absent until the alarm is first read or closed; userId is absent for an
// alarm the system raised (the reference contract does not allow null).
type alarmDTO struct {
	ID                      int64                  `json:"id"`
	IMEI                    string                 `json:"imei"`
	DeviceName              string                 `json:"deviceName,omitempty"`
	Details                 string                 `json:"details"`
	OrganizationID          int64                  `json:"organizationId"`
	OrganizationName        string                 `json:"organizationName"`
	PartnerID               int64                  `json:"partnerId"`
	PartnerName             string                 `json:"partnerName"`
	UserID                  *int64                 `json:"userId,omitempty"`
	AlarmDefinitionID       int64                  `json:"alarmDefinitionId"`
	AlarmDefinitionName     string                 `json:"alarmDefinitionName"`
	AlarmDefinitionSeverity int                    `json:"alarmDefinitionSeverity"`
	CreatedAt               string                 `json:"createdAt"`
	LastReadAt              *string                `json:"lastReadAt,omitempty"`
	LastCloseAt             *string                `json:"lastCloseAt,omitempty"`
	IsOpen                  bool                   `json:"isOpen"`
	IsRead                  bool                   `json:"isRead"`
	IsSimulated             bool                   `json:"isSimulated"`
	Comments                []apiform.AlarmComment `json:"comments"`
	Actions                 []alarmActionDTO       `json:"actions"`
}

func toActionDTO(a store.AlarmAction) alarmActionDTO {
	return alarmActionDTO{ID: a.ID, AlarmID: a.AlarmID, Type: a.Type, CreatedByAudienceName: store.AudienceShown(a.CreatedByAudienceName),
		CreatedByID: a.CreatedByID, CreatedAt: isoTime(a.CreatedAt), UpdatedAt: isoTime(a.UpdatedAt)}
}

func toAlarmDTO(tx *store.Tx, a *store.Alarm) alarmDTO {
	def, _ := store.AlarmDefinitionByID(a.AlarmDefinitionID)
	org, partner := tx.AlarmNames(a)
	out := alarmDTO{ID: a.ID, IMEI: a.IMEI, Details: a.Details, OrganizationID: a.OrganizationID, OrganizationName: org,
		PartnerID: a.PartnerID, PartnerName: partner, AlarmDefinitionID: a.AlarmDefinitionID,
		AlarmDefinitionName: def.Name, AlarmDefinitionSeverity: def.Severity, CreatedAt: isoTime(a.CreatedAt),
		LastReadAt: isoTimeOrNull(a.LastReadAt), LastCloseAt: isoTimeOrNull(a.LastCloseAt), IsOpen: a.Open,
		IsRead: a.Read, IsSimulated: a.Simulated, Comments: []apiform.AlarmComment{}, Actions: []alarmActionDTO{}}
	if a.UserID != 0 {
		out.UserID = &a.UserID
	}
	out.DeviceName = tx.AlarmDeviceName(a)
	for _, c := range a.Comments {
		out.Comments = append(out.Comments, apiform.NewAlarmComment(c))
	}
	for _, x := range a.Actions {
		out.Actions = append(out.Actions, toActionDTO(x))
	}
	return out
}

// canSeeAlarm applies device tenancy to an alarm: a partner sees the alarms
// of its own devices, anyone else those of its organization.
func canSeeAlarm(p Principal, a *store.Alarm) bool {
	if p.IsPartner() {
		return a.PartnerID == p.PartnerID
	}
	return p.Kind != kindScoped && p.inOrg(a.OrganizationID)
}

// alarm returns the alarm of the path parameter alarmId if the caller may see it.
func (s *Server) alarm(c *gin.Context, tx *store.Tx) (*store.Alarm, error) {
	id, err := pathInt(c, "alarmId")
	if err != nil {
		return nil, err
	}
	a, err := tx.Alarm(id)
	if err != nil || !canSeeAlarm(principal(c), a) {
		return nil, notFound(fmt.Sprintf("alarm %d", id))
	}
	return a, nil
}

// simulateAlarmRequest is the body of POST /devices/{imei}/alarm-simulator.
type simulateAlarmRequest struct {
	AlarmDefinitionID *int64  `json:"alarmDefinitionId"`
	CreatedAt         *string `json:"createdAt"`
	Metadata          *string `json:"metadata"`
}

// maxAlarmText bounds comments and simulator metadata.
const maxAlarmText = 2000

// simulateAlarm handles POST /devices/{imei}/alarm-simulator: an alarm like
// one the system raises, with metadata as the customer comment. The triple
// (imei, alarmDefinitionId, createdAt) can be used once, even after close.
// isWebhookSent reports whether the alarm webhook message was recorded for
// delivery in the same transaction: false when no URL of the organization
// (settings or subscription) receives alarm webhooks. createdAt may be in the
// past, as a replayed alarm is, but not ahead of the server's clock.
func (s *Server) simulateAlarm(c *gin.Context) error {
	var req simulateAlarmRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.AlarmDefinitionID == nil {
		return badField("alarmDefinitionId", "is required")
	}
	if _, found := store.AlarmDefinitionByID(*req.AlarmDefinitionID); !found {
		return badField("alarmDefinitionId", "must be one of "+alarmDefinitionIDs()+" (GET /v2/alarm-definitions)")
	}
	if req.CreatedAt == nil {
		return badField("createdAt", "is required")
	}
	at, err := parseAPITime("createdAt", *req.CreatedAt)
	if err != nil {
		return err
	}
	if at.After(s.now().Add(maxClockSkew)) {
		return badField("createdAt", "must not be in the future")
	}
	if req.Metadata != nil && len(*req.Metadata) > maxAlarmText {
		return badField("metadata", fmt.Sprintf("must be at most %d characters", maxAlarmText))
	}
	var id int64
	var sent bool
	err = s.update(c, func(tx *store.Tx) error {
		dev, err := s.device(c, tx)
		if err != nil {
			return err
		}
		a, err := tx.SimulateAlarm(dev, *req.AlarmDefinitionID, at, deref(req.Metadata))
		if err != nil {
			return err
		}
		id = a.ID
		sent = tx.HasWebhookReceivers(a.OrganizationID, store.WebhookTypeAlarms)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, gin.H{"alarmId": id, "isWebhookSent": sent})
}

func alarmDefinitionIDs() string {
	var ids []string
	for _, d := range store.AlarmDefinitions() {
		ids = append(ids, strconv.FormatInt(d.ID, 10))
	}
	return strings.Join(ids, ", ")
}

// getAlarm handles GET /alarms/{alarmId}.
func (s *Server) getAlarm(c *gin.Context) error {
	var out alarmDTO
	err := s.view(c, func(tx *store.Tx) error {
		a, err := s.alarm(c, tx)
		if err != nil {
			return err
		}
		out = toAlarmDTO(tx, a)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// alarmSorts maps the sort keys of GET /alarms to the store's.
var alarmSorts = map[string]string{
	"name":                    store.AlarmByDeviceName,
	"imei":                    store.AlarmByIMEI,
	"organizationName":        store.AlarmByOrganizationName,
	"partnerName":             store.AlarmByPartnerName,
	"alarmDefinitionSeverity": store.AlarmBySeverity,
	"alarmDefinitionName":     store.AlarmByDefinitionName,
	"createdAt":               store.AlarmByCreatedAt,
}

// alarmFilter reads the filters of GET /alarms.
func alarmFilter(c *gin.Context) (store.AlarmFilter, error) {
	f := store.AlarmFilter{IMEI: c.Query("imei"), DefinitionName: c.Query("alarmDefinitionName"), DeviceName: c.Query("name")}
	if v, given := c.GetQuery("alarmDefinitionId"); given {
		id, err := strconv.ParseInt(v, 10, 64)
		if _, found := store.AlarmDefinitionByID(id); err != nil || !found {
			return f, badField("alarmDefinitionId", "must be one of "+alarmDefinitionIDs())
		}
		f.DefinitionID = id
	}
	severity, err := queryEnum(c, "alarmDefinitionSeverity", "10", "20", "30", "40", "50", "60")
	if err != nil {
		return f, err
	}
	if severity != "" {
		f.Severity, _ = strconv.Atoi(severity)
	}
	// open, close, read and unread are flags: given without a value (or
	// true); open=false is refused rather than read as open.
	flag := func(on, off string) (*bool, error) {
		for _, name := range []string{on, off} {
			if v, given := c.GetQuery(name); given && v != "" && v != "true" {
				return nil, badField(name, fmt.Sprintf("is a flag: give it without a value (or true), not %s", quoteShort(v)))
			}
		}
		_, hasOn := c.GetQuery(on)
		_, hasOff := c.GetQuery(off)
		switch {
		case hasOn && hasOff:
			return nil, badField(on, "and "+off+" cannot be given together")
		case hasOn:
			v := true
			return &v, nil
		case hasOff:
			v := false
			return &v, nil
		}
		return nil, nil
	}
	if f.Open, err = flag("open", "close"); err != nil {
		return f, err
	}
	if f.Read, err = flag("read", "unread"); err != nil {
		return f, err
	}
	f.Start, f.End, err = queryRange(c)
	return f, err
}

// listAlarms handles GET /alarms: the alarm report, filtered, sorted and paginated.
func (s *Server) listAlarms(c *gin.Context) error {
	p, err := s.page(c)
	if err != nil {
		return err
	}
	f, err := alarmFilter(c)
	if err != nil {
		return err
	}
	sortBy := c.DefaultQuery("sort", "createdAt")
	key, found := alarmSorts[sortBy]
	if !found {
		return badField("sort", "must be one of name, imei, organizationName, partnerName, alarmDefinitionSeverity, alarmDefinitionName, createdAt")
	}
	desc, err := queryOrder(c)
	if err != nil {
		return err
	}
	pr := principal(c)
	var out []alarmDTO
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		orgs, err := s.readOrgs(c, tx)
		if err != nil {
			return err
		}
		f.OrganizationIDs = orgIDs(orgs)
		if pr.IsPartner() {
			f.PartnerID = pr.PartnerID
		}
		alarms, n, err := tx.Alarms(f, store.Sort{Key: key, Desc: desc}, p)
		if err != nil {
			return err
		}
		total = n
		for i := range alarms {
			out = append(out, toAlarmDTO(tx, &alarms[i]))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return okPage(c, out, total, p)
}

// alarmActionRequest is the body of POST /alarms/{alarmId}/actions.
type alarmActionRequest struct {
	Type string `json:"type"`
}

// actOnAlarm handles POST /alarms/{alarmId}/actions: open, close, read or unread.
func (s *Server) actOnAlarm(c *gin.Context) error {
	var req alarmActionRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if !store.ValidAlarmAction(req.Type) {
		return badField("type", "must be one of open, close, read, unread")
	}
	var out alarmActionDTO
	err := s.update(c, func(tx *store.Tx) error {
		a, err := s.alarm(c, tx)
		if err != nil {
			return err
		}
		act, err := tx.ActOnAlarm(a.ID, req.Type)
		if err != nil {
			return err
		}
		out = toActionDTO(*act)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// alarmCommentRequest is the body of POST /alarms/{alarmId}/comments.
type alarmCommentRequest struct {
	Details string `json:"details"`
}

// commentOnAlarm handles POST /alarms/{alarmId}/comments.
func (s *Server) commentOnAlarm(c *gin.Context) error {
	var req alarmCommentRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(req.Details) == "":
		return badField("details", "is required")
	case len(req.Details) > maxAlarmText:
		return badField("details", fmt.Sprintf("must be at most %d characters", maxAlarmText))
	}
	var out apiform.AlarmComment
	err := s.update(c, func(tx *store.Tx) error {
		a, err := s.alarm(c, tx)
		if err != nil {
			return err
		}
		cm, err := tx.CommentOnAlarm(a.ID, req.Details)
		if err != nil {
			return err
		}
		out = apiform.NewAlarmComment(*cm)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// alarmDefinitionDTO is one kind of alarm; severity runs from 10 (least) to 60 (most severe).
type alarmDefinitionDTO struct {
	ID             int64  `json:"id"`
	Name           string `json:"name"`
	Severity       int    `json:"severity"`
	Recommendation string `json:"recommendation"`
}

// listAlarmDefinitions handles GET /alarm-definitions: the alarm catalogue.
func (s *Server) listAlarmDefinitions(c *gin.Context) error {
	var out []alarmDefinitionDTO
	for _, d := range store.AlarmDefinitions() {
		out = append(out, alarmDefinitionDTO{ID: d.ID, Name: d.Name, Severity: d.Severity, Recommendation: d.Recommendation})
	}
	return ok(c, out)
}
