package store

import (
	"bytes"
	"fmt"
	"time"
)

// Event indexes. An event page is a cursor walk over a time-ordered index,
// never a scan of the events bucket:
//
//	device_events  imei 0x00 unix-ms(8) id(8)  →  event type [0x00 ownership(8)]
//	org_events     org(8) unix-ms(8) id(8)     →  partner(8) imei 0x00 event type
//
// The index values carry what the filters need (type, ownership, partner,
// device), so a query counts its matches from the index alone and decodes
// only the records of the requested page. A device_events value without
// an ownership is of an event recorded before ownership numbers existed.

func deviceEventPrefix(imei string) []byte { return append([]byte(imei), 0) }

func deviceEventKey(imei string, t time.Time, id int64) []byte {
	return append(append(deviceEventPrefix(imei), itob(max(t.UnixMilli(), 0))...), itob(id)...)
}

func orgEventKey(org int64, t time.Time, id int64) []byte {
	return append(append(itob(org), itob(max(t.UnixMilli(), 0))...), itob(id)...)
}

func deviceEventValue(e *Event) []byte {
	if e.Ownership == 0 {
		return []byte(e.Type)
	}
	return append(append([]byte(e.Type), 0), itob(e.Ownership)...)
}

// splitDeviceEventValue returns the event type and ownership of a
// device_events value.
func splitDeviceEventValue(v []byte) (typ []byte, ownership int64) {
	typ, own, found := bytes.Cut(v, []byte{0})
	if found && len(own) == 8 {
		ownership = btoi(own)
	}
	return typ, ownership
}

func orgEventValue(e *Event) []byte {
	v := append(itob(e.PartnerID), e.IMEI...)
	return append(append(v, 0), e.Type...)
}

func (tx *Tx) indexEvent(e *Event) error {
	if err := tx.bucket(bucketDeviceEvents).Put(deviceEventKey(e.IMEI, e.Time, e.ID), deviceEventValue(e)); err != nil {
		return err
	}
	if err := tx.bucket(bucketOrgEvents).Put(orgEventKey(e.OrganizationID, e.Time, e.ID), orgEventValue(e)); err != nil {
		return err
	}
	return tx.countEventHour(e, 1)
}

func (tx *Tx) unindexEvent(e *Event) error {
	if err := tx.bucket(bucketDeviceEvents).Delete(deviceEventKey(e.IMEI, e.Time, e.ID)); err != nil {
		return err
	}
	org := tx.bucket(bucketOrgEvents)
	k := orgEventKey(e.OrganizationID, e.Time, e.ID)
	if org.Get(k) == nil {
		return nil
	}
	if err := org.Delete(k); err != nil {
		return err
	}
	return tx.countEventHour(e, -1)
}

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

// deviceEvents walks imei's events matching q; with owner set, only those
// of owner's current ownership.
func (tx *Tx) deviceEvents(imei string, q EventQuery, owner *Device, p Page) ([]Event, int, error) {
	prefix := deviceEventPrefix(imei)
	from := deviceEventKey(imei, q.Start, 0)
	to := append(deviceEventKey(imei, q.End, 0)[:len(prefix)+8], bytes.Repeat([]byte{0xff}, 8)...)
	var match func(k, v []byte) bool
	if q.Types != nil || owner != nil {
		match = func(k, v []byte) bool {
			typ, ownership := splitDeviceEventValue(v)
			if q.Types != nil && !q.Types[string(typ)] {
				return false
			}
			switch {
			case owner == nil:
				return true
			case ownership != owner.Ownership:
				return false
			case ownership != 0:
				return true
			}
			// Both from before ownership numbers: the record says more.
			e, err := tx.Event(btoi(k[len(k)-8:]))
			return err == nil && owner.HoldsEvent(e)
		}
	}
	return tx.walkEvents(bucketDeviceEvents, from, to, match, q.Status, p)
}

// OrgEvents returns the page of organization org's events matching q,
// oldest first, and their total count. Without a device or status filter
// the count comes from hourly counts (eventcounts.go).
func (tx *Tx) OrgEvents(org int64, q EventQuery, p Page) ([]Event, int, error) {
	if q.Devices != nil {
		devs, _, err := tx.Devices(*q.Devices, Page{})
		if err != nil {
			return nil, 0, err
		}
		imeis := map[string]bool{}
		for _, d := range devs {
			if q.IMEIs == nil || q.IMEIs[d.IMEI] {
				imeis[d.IMEI] = true
			}
		}
		q.IMEIs, q.Devices = imeis, nil
	}
	from := orgEventKey(org, q.Start, 0)
	to := append(orgEventKey(org, q.End, 0)[:16], bytes.Repeat([]byte{0xff}, 8)...)
	var match func(k, v []byte) bool
	if q.PartnerID != 0 || q.Types != nil || q.IMEIs != nil {
		partner := itob(q.PartnerID)
		match = func(_, v []byte) bool {
			if len(v) < 9 {
				return false
			}
			if q.PartnerID != 0 && !bytes.Equal(v[:8], partner) {
				return false
			}
			if q.Types == nil && q.IMEIs == nil {
				return true
			}
			imei, typ, _ := bytes.Cut(v[8:], []byte{0})
			return (q.Types == nil || q.Types[string(typ)]) && (q.IMEIs == nil || q.IMEIs[string(imei)])
		}
	}
	if q.Status == "" && q.IMEIs == nil && p.Limit > 0 {
		return tx.orgEventsByHour(org, q, match, p)
	}
	return tx.walkEvents(bucketOrgEvents, from, to, match, q.Status, p)
}

// OrgEvent is an entry of an organization's event list: an event and the
// name its device has now.
type OrgEvent struct {
	Event
	// DeviceName is empty when the device is gone.
	DeviceName string
}

// OrgEventList is OrgEvents with the name of each event's device (an SQL
// engine joins the devices).
func (tx *Tx) OrgEventList(org int64, q EventQuery, p Page) ([]OrgEvent, int, error) {
	events, total, err := tx.OrgEvents(org, q, p)
	if err != nil {
		return nil, 0, err
	}
	out := make([]OrgEvent, len(events))
	names := map[string]string{}
	for i, e := range events {
		name, known := names[e.IMEI]
		if !known {
			if d, err := tx.Device(e.IMEI); err == nil {
				name = d.Name
			}
			names[e.IMEI] = name
		}
		out[i] = OrgEvent{Event: e, DeviceName: name}
	}
	return out, total, nil
}

// walkEvents walks index keys from..to (inclusive), counts those match
// keeps (all when match is nil) and decodes the records of page p.
func (tx *Tx) walkEvents(index, from, to []byte, match func(k, v []byte) bool, status string, p Page) ([]Event, int, error) {
	w := &eventWalk{tx: tx, index: index, match: match, status: status, page: p}
	if err := w.walk(from, to); err != nil {
		return nil, 0, err
	}
	return w.out, w.total, nil
}

func errMissingEvent(err error) error {
	return fmt.Errorf("store: event index points to a missing record: %w", err)
}
