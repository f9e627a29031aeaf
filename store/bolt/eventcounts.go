package bolt

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Hourly event counts of each organization, so that an organization's
// event page counts its window from whole hours instead of visiting every
// index entry of it:
//
//	org_event_hours  org(8) hour(8) partner(8) type  →  count(8)
//
// where hour is the unix millisecond of the event divided by hourMs. The
// counts follow the org_events index exactly: Insert and Delete change
// both, and a store written before the counts existed got them from
// migration 1 (BackfillHourlyCounts).

// keyEventHours in the meta bucket says the counts are complete.
var keyEventHours = []byte("org_event_hours")

// hourMs is an hour in milliseconds.
const hourMs = int64(time.Hour / time.Millisecond)

func eventHourKey(org, hour, partner int64, typ string) []byte {
	k := binary.BigEndian.AppendUint64(itob(org), uint64(hour))
	k = binary.BigEndian.AppendUint64(k, uint64(partner))
	return append(k, typ...)
}

// countEventHour adds delta to the count of e's organization, hour,
// partner and type, dropping the row at zero.
func (t *tx) countEventHour(e *store.Event, delta int64) error {
	k := eventHourKey(e.OrganizationID, max(e.Time.UnixMilli(), 0)/hourMs, e.PartnerID, e.Type)
	b := t.bucket(bucketOrgEventHours)
	var n int64
	if v := b.Get(k); len(v) == 8 {
		n = btoi(v)
	}
	if n += delta; n <= 0 {
		return b.Delete(k)
	}
	return b.Put(k, itob(n))
}

// BackfillHourlyCounts implements store.EventSet: it counts the org_events
// index of a store that has no hourly counts yet. It also keeps its own
// mark in the meta bucket, which stores from before versioned migrations
// carry, so that running it again on such a store changes nothing.
func (s events) BackfillHourlyCounts() error {
	meta := s.t.bucket(bucketMeta)
	if meta.Get(keyEventHours) != nil {
		return nil
	}
	counts := map[string]int64{}
	err := s.t.bucket(bucketOrgEvents).ForEach(func(k, v []byte) error {
		if len(k) != 24 || len(v) < 9 {
			return nil
		}
		_, typ, _ := bytes.Cut(v[8:], []byte{0})
		hk := eventHourKey(btoi(k[:8]), btoi(k[8:16])/hourMs, btoi(v[:8]), string(typ))
		counts[string(hk)]++
		return nil
	})
	if err != nil {
		return err
	}
	b := s.t.bucket(bucketOrgEventHours)
	for k, n := range counts {
		if err := b.Put([]byte(k), itob(n)); err != nil {
			return err
		}
	}
	return meta.Put(keyEventHours, []byte{1})
}

// orgEventsByHour is ByOrganization for queries the hourly counts can
// answer (no device or status filter, a bounded page): the partial hours
// at the ends of the window are walked, whole hours before the page or
// after it are counted from their rows, and only the hours that hold the
// page are walked entry by entry.
func (s events) orgEventsByHour(org int64, f store.OrgEventFilter, match func(k, v []byte) bool, p store.Page) ([]store.Event, int, error) {
	startMs, endMs := max(f.Start.UnixMilli(), 0), max(f.End.UnixMilli(), 0)
	first := (startMs + hourMs - 1) / hourMs // first hour that starts inside the window
	last := (endMs+1)/hourMs - 1             // last hour that ends inside it
	w := &eventWalk{events: s, index: bucketOrgEvents, match: match, page: p}
	span := func(fromMs, toMs int64) error {
		return w.walk(orgEventKey(org, time.UnixMilli(fromMs), 0), append(orgEventKey(org, time.UnixMilli(toMs), 0)[:16], bytes.Repeat([]byte{0xff}, 8)...))
	}
	if first > last {
		return w.out, w.total, span(startMs, endMs)
	}
	if startMs < first*hourMs {
		if err := span(startMs, first*hourMs-1); err != nil {
			return nil, 0, err
		}
	}
	// One pass over the count rows of the whole hours, hour by hour.
	hour, n := int64(-1), 0
	settle := func() error {
		if hour < 0 || n == 0 {
			return nil
		}
		if w.pageDone() || w.total+n <= p.Offset {
			w.total += n
			return nil
		}
		return span(hour*hourMs, (hour+1)*hourMs-1)
	}
	prefix := itob(org)
	stop := binary.BigEndian.AppendUint64(itob(org), uint64(last))
	c := s.t.bucket(bucketOrgEventHours).Cursor()
	for k, v := c.Seek(binary.BigEndian.AppendUint64(itob(org), uint64(first))); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k[:16], stop) <= 0; k, v = c.Next() {
		if len(k) < 24 || len(v) != 8 {
			continue
		}
		if h := btoi(k[8:16]); h != hour {
			if err := settle(); err != nil {
				return nil, 0, err
			}
			hour, n = h, 0
		}
		if f.PartnerID != 0 && btoi(k[16:24]) != f.PartnerID {
			continue
		}
		if f.Types != nil && !f.Types[string(k[24:])] {
			continue
		}
		n += int(btoi(v))
	}
	if err := settle(); err != nil {
		return nil, 0, err
	}
	if (last+1)*hourMs <= endMs {
		if err := span((last+1)*hourMs, endMs); err != nil {
			return nil, 0, err
		}
	}
	return w.out, w.total, nil
}
