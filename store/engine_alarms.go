package store

import "time"

// AlarmRecords are the record sets of alarms, their notes, the health state behind them and their recipients, whose rules are in alarms.go, alarmhealth.go, alarmrecipients.go, alarmlist.go.
type AlarmRecords interface {
	// Alarms are the alarms, with the ids of their notes and the triples
	// (imei, definition, createdAt) ever used.
	Alarms() AlarmSet
	// OpenAlarms say which system alarm holds each device and definition.
	OpenAlarms() OpenAlarmSet
	// DeviceHealthStates are the devices' last health states.
	DeviceHealthStates() KeyedRecords[string, HealthState]
	// AlarmRecipients are the e-mail recipients of alarm reports.
	AlarmRecipients() AlarmRecipientSet
}

// AlarmSet is the alarms of every device, by id. An alarm's comments and
// actions are part of it. Each alarm's triple (imei, definition, createdAt
// to the millisecond) is kept beside it and outlives it: a purged alarm
// still holds its triple.
type AlarmSet interface {
	// Get returns the alarm with id; ErrNotFound when there is none.
	Get(id int64) (*Alarm, error)
	// NextID returns a new alarm id, greater than every one returned
	// before; ids are never reused.
	NextID() (int64, error)
	// LastID is the greatest id NextID has returned (0: none yet), whether
	// or not its alarm is still stored.
	LastID() (int64, error)
	// Insert stores the new alarm a under a.ID, which NextID returned, and
	// records its triple, taking it over from any alarm that held it.
	Insert(a *Alarm) error
	// Put replaces the stored alarm a.ID with a, whose device, definition
	// and createdAt are those it was inserted with; ErrNotFound when there
	// is none.
	Put(a *Alarm) error
	// TripleTaken reports whether an alarm of imei and definition def was
	// ever inserted with createdAt at, to the millisecond, even one
	// deleted since.
	TripleTaken(imei string, def int64, at time.Time) (bool, error)
	// NextNoteID returns a new id for a comment or an action of any
	// alarm, greater than every one returned before.
	NextNoteID() (int64, error)
	// List returns the page p of the alarms f keeps (AlarmFilter.Match),
	// in the order s (AlarmOrder), and how many f keeps in all. s.Key is
	// one of the AlarmBy keys or empty. names gives the current names of
	// devices, organizations and partners to an engine that cannot join
	// them to the alarms itself.
	List(f AlarmFilter, s Sort, p Page, names AlarmNames) ([]Alarm, int, error)
	// Purge runs one batch p of the alarm purge: it deletes, in id order
	// from p.From, each alarm p.Due says goes, at most p.Limit of them,
	// and returns how many it deleted and where the next batch resumes
	// (nil when it reached the end). The triples stay.
	Purge(p AlarmPurge) (int, []byte, error)
}

// AlarmNames gives the names the alarm list filters and sorts by, as they
// are now; a device, organization or partner that is gone has the empty
// name, as has a device no longer with the alarm's organization and
// partner (Alarm.HeldBy): its name is its new owner's.
type AlarmNames interface {
	DeviceName(a *Alarm) string
	OrganizationName(id int64) string
	PartnerName(id int64) string
}

// AlarmPurge is one batch of the purge of closed alarms, as the store asks
// an engine for it: From is the opaque resume position the previous batch
// returned (nil: the start), Limit bounds the alarms deleted (0 or less:
// no bound), and Cutoffs gives each organization's time before which its
// closed alarms go (Due). An organization Cutoffs leaves out keeps its
// alarms.
type AlarmPurge struct {
	Cutoffs Cutoffs
	From    []byte
	Limit   int
}

// OpenAlarmSet records, for each device and alarm definition, the id of
// the one system alarm that is open for them; no second system alarm of
// that device and definition is raised while it is recorded. The record
// is the store's to keep: a simulated alarm is open without one.
type OpenAlarmSet interface {
	// Get returns the id of the alarm recorded for imei and def; 0 when
	// none is.
	Get(imei string, def int64) (int64, error)
	// Put records id for imei and def, replacing any alarm recorded.
	Put(imei string, def int64, id int64) error
	// Delete forgets the alarm recorded for imei and def; none recorded is
	// no error.
	Delete(imei string, def int64) error
	// DeleteDevice forgets the alarms recorded for imei and any definition.
	DeleteDevice(imei string) error
}

// AlarmRecipientSet is the alarm report recipients, by id.
type AlarmRecipientSet interface {
	// Get returns the recipient with id; ErrNotFound when there is none.
	Get(id int64) (*AlarmRecipient, error)
	// Insert stores the new recipient r under a new id, greater than every
	// recipient id given before, which it sets in r.ID.
	Insert(r *AlarmRecipient) error
	// Put replaces the stored recipient r.ID with r; ErrNotFound when there
	// is none.
	Put(r *AlarmRecipient) error
	// Delete deletes recipient id; one not stored is no error.
	Delete(id int64) error
	// List returns every recipient, in id order.
	List() ([]AlarmRecipient, error)
}
