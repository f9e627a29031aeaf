package store

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Alarms report device-health problems. fleetcam raises them from the
// devices' health reports (alarmhealth.go) at most once per device and
// definition while open; a simulated alarm is the same record with a
// customer comment. Every new or closed alarm is a MessageAlarm for the
// alarm webhooks, and alarm e-mail follows the alarms' id sequence.

// AlarmDefinition is one kind of alarm.
type AlarmDefinition struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// Severity runs from 10 (least severe) to 60 (most severe).
	Severity       int    `json:"severity"`
	Recommendation string `json:"recommendation"`
}

// Alarm definition ids.
const (
	AlarmRecordingFailed    int64 = 1001
	AlarmSDCardMissing      int64 = 1002
	AlarmSDCardFailing      int64 = 1003
	AlarmCameraDisconnected int64 = 1004
	AlarmPowerDisconnected  int64 = 1005
	AlarmDeviceOffline      int64 = 1006
)

var alarmDefinitions = []AlarmDefinition{
	{AlarmRecordingFailed, "Recording health test failed", 60,
		"The dashcam is not recording video. Reboot it; if the test still fails, format the SD card (GET /devices/{imei}/format-storage) or replace the device."},
	{AlarmSDCardMissing, "SD card missing", 60,
		"No SD card is mounted, so nothing is recorded. Insert a supported SD card and close the cover."},
	{AlarmSDCardFailing, "SD card failing", 50,
		"The SD card reports errors. Format it (GET /devices/{imei}/format-storage); replace it if the alarm returns."},
	{AlarmCameraDisconnected, "Camera disconnected", 40,
		"A built-in camera stopped delivering video. Check the in-cabin camera cable and reboot the device."},
	{AlarmPowerDisconnected, "Power disconnected", 40,
		"The device lost vehicle power and runs on its backup battery. Check the power cable and fuse."},
	{AlarmDeviceOffline, "Device offline for a long time", 30,
		"The device has not connected for a long time. Check vehicle power, cellular coverage and the SIM."},
}

// AlarmDefinitions returns the catalogue of alarm definitions, by id.
func AlarmDefinitions() []AlarmDefinition { return slices.Clone(alarmDefinitions) }

// AlarmDefinitionByID returns the definition with id.
func AlarmDefinitionByID(id int64) (AlarmDefinition, bool) {
	for _, d := range alarmDefinitions {
		if d.ID == id {
			return d, true
		}
	}
	return AlarmDefinition{}, false
}

// Alarm action types.
const (
	AlarmActionOpen   = "open"
	AlarmActionClose  = "close"
	AlarmActionRead   = "read"
	AlarmActionUnread = "unread"
)

// ValidAlarmAction reports whether s names an alarm action.
func ValidAlarmAction(s string) bool {
	return s == AlarmActionOpen || s == AlarmActionClose || s == AlarmActionRead || s == AlarmActionUnread
}

// Audience names for who made a comment or an action.
const (
	AudienceSystem       = "fleetcam"
	AudiencePartner      = "partner"
	AudienceOrganization = "organization"
)

// AudienceShown is the name the API and the webhooks give audience a: the
// platform's own comments and actions are the reference contract's
// "surfsight", the others their own name.
func AudienceShown(a string) string {
	if a == AudienceSystem {
		return "surfsight"
	}
	return a
}

// AlarmComment is a note on an alarm.
type AlarmComment struct {
	ID                    int64     `json:"id"`
	AlarmID               int64     `json:"alarmId"`
	Details               string    `json:"details"`
	CreatedByAudienceName string    `json:"createdByAudienceName"`
	CreatedByID           int64     `json:"createdById"`
	CommentorName         string    `json:"commentorName"`
	CreatedAt             time.Time `json:"createdAt"`
}

// AlarmAction is one open, close, read or unread of an alarm.
type AlarmAction struct {
	ID                    int64     `json:"id"`
	AlarmID               int64     `json:"alarmId"`
	Type                  string    `json:"type"`
	CreatedByAudienceName string    `json:"createdByAudienceName"`
	CreatedByID           int64     `json:"createdById"`
	CreatedAt             time.Time `json:"createdAt"`
	UpdatedAt             time.Time `json:"updatedAt"`
}

// Alarm is one raised alarm of one device.
type Alarm struct {
	ID                int64     `json:"id"`
	IMEI              string    `json:"imei"`
	OrganizationID    int64     `json:"organizationId"`
	PartnerID         int64     `json:"partnerId"`
	UserID            int64     `json:"userId,omitempty"`
	AlarmDefinitionID int64     `json:"alarmDefinitionId"`
	Details           string    `json:"details"`
	CreatedAt         time.Time `json:"createdAt"`
	LastReadAt        time.Time `json:"lastReadAt,omitzero"`
	LastCloseAt       time.Time `json:"lastCloseAt,omitzero"`
	Open              bool      `json:"open"`
	Read              bool      `json:"read"`
	Simulated         bool      `json:"simulated,omitempty"`
	// AutoClosed is set when fleetcam closed the alarm because the device reported healthy again.
	AutoClosed bool           `json:"autoClosed,omitempty"`
	Comments   []AlarmComment `json:"comments"`
	Actions    []AlarmAction  `json:"actions"`
}

// dropOpenAlarms forgets which system alarms of a removed device are open;
// the alarms themselves stay.
func dropOpenAlarms(tx *Tx, d *Device) error {
	return tx.rec.OpenAlarms().DeleteDevice(d.IMEI)
}

// audience says who the transaction's actor is, for comments and actions.
func (tx *Tx) audience() (string, int64) {
	a := tx.actor
	switch {
	case a.UserID == 0 && a.OrganizationID == 0 && a.PartnerID == 0:
		return AudienceSystem, 0
	case a.OrganizationID != 0:
		return AudienceOrganization, a.UserID
	default:
		return AudiencePartner, a.UserID
	}
}

// RaiseAlarm opens an alarm of definition def for dev at time at unless one
// is already open; it returns the open alarm and whether it is new.
func (tx *Tx) RaiseAlarm(dev *Device, def int64, at time.Time, details string) (*Alarm, bool, error) {
	open := tx.rec.OpenAlarms()
	if id, err := open.Get(dev.IMEI, def); err != nil {
		return nil, false, err
	} else if id != 0 {
		a, err := tx.Alarm(id)
		return a, false, err
	}
	if taken, err := tx.rec.Alarms().TripleTaken(dev.IMEI, def, at); err != nil {
		return nil, false, err
	} else if taken {
		at = at.Add(time.Millisecond)
	}
	a, err := tx.createAlarm(dev, def, at, details, false)
	if err != nil {
		return nil, false, err
	}
	return a, true, open.Put(dev.IMEI, def, a.ID)
}

// SimulateAlarm creates a simulated alarm: a system alarm of definition def
// created at createdAt, with comment as the customer comment. The triple
// (imei, definition, createdAt) must be new, even if its alarm was closed.
func (tx *Tx) SimulateAlarm(dev *Device, def int64, createdAt time.Time, comment string) (*Alarm, error) {
	if taken, err := tx.rec.Alarms().TripleTaken(dev.IMEI, def, createdAt); err != nil {
		return nil, err
	} else if taken {
		return nil, Conflict("an alarm with imei %s, alarmDefinitionId %d and createdAt %s already exists",
			dev.IMEI, def, createdAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	d, ok := AlarmDefinitionByID(def)
	if !ok {
		return nil, Invalid("", "alarmDefinitionId %d is not a known alarm definition", def)
	}
	if strings.TrimSpace(comment) == "" {
		comment = "Simulated alarm"
	}
	return tx.createAlarm(dev, def, createdAt, d.Name+" (simulated)", true, comment)
}

func (tx *Tx) createAlarm(dev *Device, def int64, at time.Time, details string, simulated bool, comment ...string) (*Alarm, error) {
	if _, ok := AlarmDefinitionByID(def); !ok {
		return nil, Invalid("", "alarmDefinitionId %d is not a known alarm definition", def)
	}
	id, err := tx.rec.Alarms().NextID()
	if err != nil {
		return nil, err
	}
	a := &Alarm{ID: id, IMEI: dev.IMEI, OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID,
		UserID: tx.actor.UserID, AlarmDefinitionID: def, Details: details, CreatedAt: at.UTC(), Open: true,
		Simulated: simulated, Comments: []AlarmComment{}, Actions: []AlarmAction{}}
	if err := tx.appendAction(a, AlarmActionOpen); err != nil {
		return nil, err
	}
	for _, c := range comment {
		if _, err := tx.appendComment(a, c); err != nil {
			return nil, err
		}
	}
	if err := tx.rec.Alarms().Insert(a); err != nil {
		return nil, err
	}
	action := "alarm.create"
	if simulated {
		action = "alarm.simulate"
	}
	if err := tx.Audit(AuditChange{Action: action, EntityType: "alarm", EntityID: strconv.FormatInt(id, 10),
		OrganizationID: a.OrganizationID, PartnerID: a.PartnerID, After: a}); err != nil {
		return nil, err
	}
	return a, tx.emitAlarm(a, "created")
}

func (tx *Tx) appendAction(a *Alarm, typ string) error {
	id, err := tx.rec.Alarms().NextNoteID()
	if err != nil {
		return err
	}
	aud, by := tx.audience()
	a.Actions = append(a.Actions, AlarmAction{ID: id, AlarmID: a.ID, Type: typ, CreatedByAudienceName: aud,
		CreatedByID: by, CreatedAt: tx.now, UpdatedAt: tx.now})
	return nil
}

func (tx *Tx) appendComment(a *Alarm, details string) (*AlarmComment, error) {
	id, err := tx.rec.Alarms().NextNoteID()
	if err != nil {
		return nil, err
	}
	aud, by := tx.audience()
	name := tx.actor.Email
	if by != 0 {
		if u, err := tx.User(by); err == nil && u.Name != "" {
			name = u.Name
		}
	}
	c := AlarmComment{ID: id, AlarmID: a.ID, Details: details, CreatedByAudienceName: aud, CreatedByID: by,
		CommentorName: name, CreatedAt: tx.now}
	a.Comments = append(a.Comments, c)
	return &c, nil
}

// Alarm returns the alarm with id.
func (tx *Tx) Alarm(id int64) (*Alarm, error) {
	a, err := tx.rec.Alarms().Get(id)
	if err != nil {
		return nil, missing(err, "alarm %d", id)
	}
	return a, nil
}

// ActOnAlarm applies an action (open, close, read, unread) to alarm id and
// returns the action recorded. Closing frees the device and definition for
// a new system alarm and is a MessageAlarm; reopening takes them back when
// they are free.
func (tx *Tx) ActOnAlarm(id int64, typ string) (*AlarmAction, error) {
	if !ValidAlarmAction(typ) {
		return nil, Invalid("type", "must be one of open, close, read, unread")
	}
	a, err := tx.Alarm(id)
	if err != nil {
		return nil, err
	}
	before := *a
	open := tx.rec.OpenAlarms()
	switch typ {
	case AlarmActionClose:
		a.Open, a.LastCloseAt = false, tx.now
		owner, err := open.Get(a.IMEI, a.AlarmDefinitionID)
		if err != nil {
			return nil, err
		}
		if owner == id {
			if err := open.Delete(a.IMEI, a.AlarmDefinitionID); err != nil {
				return nil, err
			}
		}
	case AlarmActionOpen:
		a.Open = true
		if !a.Simulated {
			owner, err := open.Get(a.IMEI, a.AlarmDefinitionID)
			if err != nil {
				return nil, err
			}
			if owner == 0 {
				if err := open.Put(a.IMEI, a.AlarmDefinitionID, id); err != nil {
					return nil, err
				}
			}
		}
	case AlarmActionRead:
		a.Read, a.LastReadAt = true, tx.now
	case AlarmActionUnread:
		a.Read = false
	}
	if err := tx.appendAction(a, typ); err != nil {
		return nil, err
	}
	if err := tx.rec.Alarms().Put(a); err != nil {
		return nil, err
	}
	if err := tx.Audit(AuditChange{Action: "alarm." + typ, EntityType: "alarm", EntityID: strconv.FormatInt(id, 10),
		OrganizationID: a.OrganizationID, PartnerID: a.PartnerID, Before: before.state(), After: a.state()}); err != nil {
		return nil, err
	}
	if typ == AlarmActionClose && before.Open {
		if err := tx.emitAlarm(a, "closed"); err != nil {
			return nil, err
		}
	}
	act := a.Actions[len(a.Actions)-1]
	return &act, nil
}

// state is the part of an alarm an action changes, for the audit log.
func (a *Alarm) state() map[string]any {
	return map[string]any{"open": a.Open, "read": a.Read, "lastReadAt": a.LastReadAt, "lastCloseAt": a.LastCloseAt}
}

// CommentOnAlarm adds a comment by the transaction's actor to alarm id.
func (tx *Tx) CommentOnAlarm(id int64, details string) (*AlarmComment, error) {
	if strings.TrimSpace(details) == "" {
		return nil, Invalid("details", "must not be empty")
	}
	a, err := tx.Alarm(id)
	if err != nil {
		return nil, err
	}
	c, err := tx.appendComment(a, details)
	if err != nil {
		return nil, err
	}
	if err := tx.rec.Alarms().Put(a); err != nil {
		return nil, err
	}
	return c, tx.Audit(AuditChange{Action: "alarm.comment", EntityType: "alarm", EntityID: strconv.FormatInt(id, 10),
		OrganizationID: a.OrganizationID, PartnerID: a.PartnerID, After: c})
}

// AlarmNames resolves the organization and partner names of a.
func (tx *Tx) AlarmNames(a *Alarm) (orgName, partnerName string) {
	if o, err := tx.Organization(a.OrganizationID); err == nil {
		orgName = o.Name
	}
	if p, err := tx.Partner(a.PartnerID); err == nil {
		partnerName = p.Name
	}
	return orgName, partnerName
}

func (tx *Tx) emitAlarm(a *Alarm, event string) error {
	org, partner := tx.AlarmNames(a)
	return tx.Emit(Message{Kind: MessageAlarm, SubType: event, OrganizationID: a.OrganizationID,
		PartnerID: a.PartnerID, IMEI: a.IMEI, Alarm: &AlarmFact{Alarm: *a, OrganizationName: org, PartnerName: partner}})
}

// LastAlarmID is the id of the newest alarm (0: none yet, or an engine
// that could not tell).
func (tx *Tx) LastAlarmID() int64 {
	id, _ := tx.rec.Alarms().LastID()
	return id
}

// Due reports whether alarm a goes in the purge: it is closed and was
// created before the cutoff of its organization.
func (p AlarmPurge) Due(a *Alarm) bool {
	t, ok := p.Cutoffs[a.OrganizationID]
	return ok && !a.Open && a.CreatedAt.Before(t)
}

// purgeAlarms deletes closed alarms created before their cutoff. The
// (imei, definition, createdAt) triples stay, so a purged simulated alarm
// still blocks its triple.
func purgeAlarms(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	return tx.rec.Alarms().Purge(AlarmPurge{Cutoffs: cut, From: from, Limit: limit})
}
