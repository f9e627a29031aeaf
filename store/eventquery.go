package store

import "time"

// The event pages of a device and of an organization: a time window,
// filters, a page and the total. The engine answers them from its indexes
// (EventSet's ByDevice and ByOrganization); the store decides whose events
// a caller sees and joins what the events do not carry.

// EventQuery selects events in a time range. Zero members do not filter.
type EventQuery struct {
	// Start and End bound the event time, both inclusive.
	Start, End time.Time
	// Types, when not nil, keeps only these API-syntax types.
	Types map[string]bool
	// PartnerID keeps only events of this partner's devices (shared organizations).
	PartnerID int64
	// IMEIs, when not nil, keeps only these devices.
	IMEIs map[string]bool
	// Devices, when set, keeps only the events of the devices it selects
	// now, as Devices does (a scoped token's device or group): a join with
	// the devices.
	Devices *DeviceFilter
	// Status keeps only events in this review status (needs the records).
	Status string
}

// DeviceEvents returns every stored event of imei, whichever ownership of
// the device recorded it, with a time from start to end inclusive, oldest
// first, the requested page of them and their total count. What a device's
// owner may see is QueryDeviceEvents.
func (tx *Tx) DeviceEvents(imei string, start, end time.Time, p Page) ([]Event, int, error) {
	return tx.deviceEvents(imei, EventQuery{Start: start, End: end}, nil, p)
}

// QueryDeviceEvents returns the page of d's events matching q that were
// recorded for d's current ownership, oldest first, and their total count.
func (tx *Tx) QueryDeviceEvents(d *Device, q EventQuery, p Page) ([]Event, int, error) {
	return tx.deviceEvents(d.IMEI, q, d, p)
}

// deviceEvents returns imei's events matching q; with owner set, only
// those of owner's current ownership.
func (tx *Tx) deviceEvents(imei string, q EventQuery, owner *Device, p Page) ([]Event, int, error) {
	f := DeviceEventFilter{Start: q.Start, End: q.End, Types: q.Types, Status: q.Status, Holder: owner}
	return tx.rec.Events().ByDevice(imei, f, p)
}

// OrgEvents returns the page of organization org's events matching q,
// oldest first, and their total count. A device filter is resolved to the
// devices it selects now.
func (tx *Tx) OrgEvents(org int64, q EventQuery, p Page) ([]Event, int, error) {
	f, err := tx.orgEventFilter(q)
	if err != nil {
		return nil, 0, err
	}
	return tx.rec.Events().ByOrganization(org, f, p)
}

// orgEventFilter is the engine's filter of q: a device filter becomes the
// set of the devices it selects now.
func (tx *Tx) orgEventFilter(q EventQuery) (OrgEventFilter, error) {
	if q.Devices != nil {
		devs, _, err := tx.Devices(*q.Devices, Page{})
		if err != nil {
			return OrgEventFilter{}, err
		}
		imeis := map[string]bool{}
		for _, d := range devs {
			if q.IMEIs == nil || q.IMEIs[d.IMEI] {
				imeis[d.IMEI] = true
			}
		}
		q.IMEIs, q.Devices = imeis, nil
	}
	return OrgEventFilter{Start: q.Start, End: q.End, Types: q.Types, PartnerID: q.PartnerID, IMEIs: q.IMEIs, Status: q.Status}, nil
}

// OrgEvent is an entry of an organization's event list: an event and the
// name its device has now.
type OrgEvent struct {
	Event
	// DeviceName is empty when the device is gone.
	DeviceName string
}

// OrgEventList is OrgEvents with the name of each event's device: joined
// by the engine's query when it can (OrgEventNamer), else each device of
// the page read once.
func (tx *Tx) OrgEventList(org int64, q EventQuery, p Page) ([]OrgEvent, int, error) {
	f, err := tx.orgEventFilter(q)
	if err != nil {
		return nil, 0, err
	}
	set := tx.rec.Events()
	if namer, ok := set.(OrgEventNamer); ok {
		return namer.ByOrganizationNamed(org, f, p)
	}
	events, total, err := set.ByOrganization(org, f, p)
	if err != nil {
		return nil, 0, err
	}
	out := make([]OrgEvent, len(events))
	devices := map[string]*Device{} // nil: gone
	for i, e := range events {
		d, known := devices[e.IMEI]
		if !known {
			var err error
			if d, err = tx.rec.Devices().Get(e.IMEI); err != nil && !isNotFound(err) {
				return nil, 0, err
			}
			devices[e.IMEI] = d
		}
		out[i] = OrgEvent{Event: e}
		if d != nil && d.HoldsEvent(&out[i].Event) {
			out[i].DeviceName = d.Name
		}
	}
	return out, total, nil
}
