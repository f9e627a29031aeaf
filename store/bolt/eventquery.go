package bolt

import (
	"bytes"
	"fmt"
	"math"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
)

// An event page is a cursor walk over a time-ordered index (events.go),
// never a scan of the events bucket; an organization's page counts whole
// hours of its window from the hourly counts (eventcounts.go).

// ByDevice implements store.EventSet from the device_events index. With a
// holder, an entry of its ownership counts from the index alone; both from
// before ownership numbers, the record says more.
func (s events) ByDevice(imei string, f store.DeviceEventFilter, p store.Page) ([]store.Event, int, error) {
	if f.Holder != nil && f.Holder.IMEI != imei {
		return nil, 0, nil // holds none of imei's events
	}
	f.End = windowEnd(f.End)
	prefix := deviceEventPrefix(imei)
	from := deviceEventKey(imei, f.Start, 0)
	to := append(deviceEventKey(imei, f.End, 0)[:len(prefix)+8], bytes.Repeat([]byte{0xff}, 8)...)
	var match func(k, v []byte) bool
	if f.Types != nil || f.Holder != nil {
		holder := f.Holder
		match = func(k, v []byte) bool {
			typ, ownership := splitDeviceEventValue(v)
			if f.Types != nil && !f.Types[string(typ)] {
				return false
			}
			switch {
			case holder == nil:
				return true
			case ownership != holder.Ownership:
				return false
			case ownership != 0:
				return true
			}
			e, err := s.Get(btoi(k[len(k)-8:]))
			return err == nil && holder.HoldsEvent(e)
		}
	}
	return s.walk(bucketDeviceEvents, from, to, match, f.Status, p)
}

// ByOrganization implements store.EventSet from the org_events index.
// Without a device or status filter and with a bounded page the window is
// counted by the hour.
func (s events) ByOrganization(org int64, f store.OrgEventFilter, p store.Page) ([]store.Event, int, error) {
	f.End = windowEnd(f.End)
	match := orgEventMatch(f)
	if f.Status == "" && f.IMEIs == nil && p.Limit > 0 {
		return s.orgEventsByHour(org, f, match, p)
	}
	return s.walkOrg(org, f, match, p)
}

// windowEnd is the end of a window that ends at end, or, when end is zero
// (a window with no end), an instant later than any event's time (with
// room to count hours past it without overflow).
func windowEnd(end time.Time) time.Time {
	if end.IsZero() {
		return time.UnixMilli(math.MaxInt64 / 2)
	}
	return end
}

// walkOrg is ByOrganization walking every index entry of the window.
func (s events) walkOrg(org int64, f store.OrgEventFilter, match func(k, v []byte) bool, p store.Page) ([]store.Event, int, error) {
	from := orgEventKey(org, f.Start, 0)
	to := append(orgEventKey(org, f.End, 0)[:16], bytes.Repeat([]byte{0xff}, 8)...)
	return s.walk(bucketOrgEvents, from, to, match, f.Status, p)
}

// orgEventMatch is the test of an org_events entry against f's partner,
// types and devices; nil when f keeps every entry.
func orgEventMatch(f store.OrgEventFilter) func(k, v []byte) bool {
	if f.PartnerID == 0 && f.Types == nil && f.IMEIs == nil {
		return nil
	}
	partner := itob(f.PartnerID)
	return func(_, v []byte) bool {
		if len(v) < 9 {
			return false
		}
		if f.PartnerID != 0 && !bytes.Equal(v[:8], partner) {
			return false
		}
		if f.Types == nil && f.IMEIs == nil {
			return true
		}
		imei, typ, _ := bytes.Cut(v[8:], []byte{0})
		return (f.Types == nil || f.Types[string(typ)]) && (f.IMEIs == nil || f.IMEIs[string(imei)])
	}
}

// walk walks index keys from..to (inclusive), counts those match keeps
// (all when match is nil) and decodes the records of page p.
func (s events) walk(index, from, to []byte, match func(k, v []byte) bool, status string, p store.Page) ([]store.Event, int, error) {
	w := &eventWalk{events: s, index: index, match: match, status: status, page: p}
	if err := w.walk(from, to); err != nil {
		return nil, 0, err
	}
	return w.out, w.total, nil
}

// eventWalk counts the index entries a query keeps and decodes the records
// of its page, over one or more key ranges visited in order.
type eventWalk struct {
	events events
	index  []byte
	match  func(k, v []byte) bool // nil keeps every entry
	status string
	page   store.Page
	out    []store.Event
	total  int
	cursor *bbolt.Cursor
}

// pageDone reports whether the page is complete, so later entries only count.
func (w *eventWalk) pageDone() bool { return w.page.Limit > 0 && len(w.out) >= w.page.Limit }

// walk visits the index keys from..to (inclusive). The event id is the
// key's last 8 bytes. With a status filter every candidate record is read.
func (w *eventWalk) walk(from, to []byte) error {
	if w.cursor == nil {
		w.cursor = w.events.t.bucket(w.index).Cursor()
	}
	p := w.page
	for k, v := w.cursor.Seek(from); k != nil && bytes.Compare(k, to) <= 0; k, v = w.cursor.Next() {
		if w.match != nil && !w.match(k, v) {
			continue
		}
		inPage := w.total >= p.Offset && (p.Limit <= 0 || len(w.out) < p.Limit)
		if w.status == "" && !inPage {
			w.total++
			continue
		}
		e, err := w.events.Get(btoi(k[len(k)-8:]))
		if err != nil {
			return errMissingEvent(err)
		}
		if w.status != "" && e.Status != w.status {
			continue
		}
		if inPage {
			w.out = append(w.out, *e)
		}
		w.total++
	}
	return nil
}

func errMissingEvent(err error) error {
	return fmt.Errorf("store: event index points to a missing record: %w", err)
}
