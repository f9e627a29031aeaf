package store

import "time"

// EventRecords are the record sets of events and of the devices' own event
// ids, whose rules are in events.go, eventcounts.go, eventquery.go,
// eventrules.go, driverevents.go.
type EventRecords interface {
	// Events are the events and their comments.
	Events() EventSet
	// EventDeviceIDs remember which event each device's own event id was
	// stored as, for the deduplication of redeliveries.
	EventDeviceIDs() EventDeviceIDSet
	// EventMails are the e-mails queued to tell recipients of events
	// (eventmail.go).
	EventMails() EventMailSet
}

// EventMailSet is the durable queue of event notification e-mails, one job
// per event and recipient.
type EventMailSet interface {
	// Put stores m under its event id and recipient, replacing the job
	// stored there.
	Put(m *EventMail) error
	// Due returns up to limit jobs whose NextAttemptAt is at or before now
	// (every one when limit is 0 or less), by event id then recipient.
	Due(now time.Time, limit int) ([]EventMail, error)
	// List returns every job, by event id then recipient.
	List() ([]EventMail, error)
	// Delete removes the job of eventID and recipient; none is no error.
	Delete(eventID int64, recipient string) error
}

// EventSet is the events of every device, with what an engine keeps to
// answer the event pages of a device and of an organization from an index:
// by time, and for organizations the counts of their windows.
type EventSet interface {
	// Get returns the event with id; store.ErrNotFound when there is none.
	Get(id int64) (*Event, error)
	// Insert gives e the next event id, greater than every id given
	// before (ids are never reused), and stores it.
	Insert(e *Event) error
	// Update stores e over the stored event of its id, which the caller
	// read in this transaction; store.ErrNotFound when none is stored.
	// What the queries select on (device, organization, partner, type,
	// time, ownership) must be as stored.
	Update(e *Event) error
	// Delete removes e, as read in this transaction, from the events and
	// from every query; an event no longer stored is no error.
	Delete(e *Event) error
	// NextCommentID returns a new event comment id, greater than every one
	// returned before.
	NextCommentID() (int64, error)
	// ByDevice returns the page p of imei's events that f keeps, ordered
	// by time then id, and how many f keeps in all.
	ByDevice(imei string, f DeviceEventFilter, p Page) ([]Event, int, error)
	// ByOrganization returns the page p of organization org's events that
	// f keeps, ordered by time then id, and how many f keeps in all.
	ByOrganization(org int64, f OrgEventFilter, p Page) ([]Event, int, error)
	// ByOrganizationBefore returns at most limit of organization org's
	// events with a time before before, oldest first (by time then id):
	// the next batch of a retention purge.
	ByOrganizationBefore(org int64, before time.Time, limit int) ([]Event, error)
	// BackfillHourlyCounts brings whatever the engine keeps to count an
	// organization's events by the hour up to date with the events, in a
	// store written before it kept them (migration 1). It changes nothing
	// in a store whose counts are complete, nor in an engine that keeps
	// none.
	BackfillHourlyCounts() error
}

// OrgEventNamer is implemented by an EventSet that answers an
// organization's event page together with the name each event's device has
// now, in one query (an SQL engine joins the devices). OrgEventList uses
// it when the engine's EventSet has it, and looks the devices up itself
// otherwise.
type OrgEventNamer interface {
	// ByOrganizationNamed is ByOrganization with the current name of
	// each event's device, empty when the device is gone.
	ByOrganizationNamed(org int64, f OrgEventFilter, p Page) ([]OrgEvent, int, error)
}

// DeviceEventFilter selects among one device's events. Zero members do not
// filter.
type DeviceEventFilter struct {
	// Start and End bound the event time, both inclusive.
	Start, End time.Time
	// Types, when not nil, keeps only these API-syntax types.
	Types map[string]bool
	// Status keeps only events in this review status.
	Status string
	// Holder, when set, keeps only the events recorded for its current
	// ownership of the device (Device.HoldsEvent).
	Holder *Device
}

// OrgEventFilter selects among one organization's events. Zero members do
// not filter.
type OrgEventFilter struct {
	// Start and End bound the event time, both inclusive.
	Start, End time.Time
	// Types, when not nil, keeps only these API-syntax types.
	Types map[string]bool
	// PartnerID keeps only the events of this partner's devices.
	PartnerID int64
	// IMEIs, when not nil, keeps only the events of these devices.
	IMEIs map[string]bool
	// Status keeps only events in this review status.
	Status string
}

// EventDeviceID says which event a device's own event id was stored as.
type EventDeviceID struct {
	IMEI string
	// DeviceEventID is the id the device gave the event.
	DeviceEventID string
	// EventID is the stored event's id; the event may have been deleted
	// since.
	EventID int64
	// Ownership is the device's ownership the event was stored for: the
	// device's ids are unique within one ownership only.
	Ownership int64
}

// EventDeviceIDSet is the device event ids of every device, one entry per
// device and id.
type EventDeviceIDSet interface {
	// Get returns what imei's event id deviceEventID was last stored as;
	// store.ErrNotFound when it never was.
	Get(imei, deviceEventID string) (EventDeviceID, error)
	// Put records r, replacing what r's device and id were stored as
	// before.
	Put(r EventDeviceID) error
}
