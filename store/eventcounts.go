package store

import (
	"bytes"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Hourly event counts of each organization, so that an organization's
// event page counts its window from whole hours instead of visiting every
// index entry of it:
//
//	org_event_hours  org(8) hour(8) partner(8) type  →  count(8)
//
// where hour is the unix millisecond of the event divided by hourMs. The
// counts follow the org_events index exactly: indexEvent and unindexEvent
// change both, and a store written before the counts existed got them from
// migration 1 (backfillEventHours).

var (
	// keyEventHours in the meta bucket says the counts are complete.
	keyEventHours = []byte("org_event_hours")
)

// hourMs is an hour in milliseconds.
const hourMs = int64(time.Hour / time.Millisecond)

func eventHourKey(org, hour, partner int64, typ string) []byte {
	k := binary.BigEndian.AppendUint64(itob(org), uint64(hour))
	k = binary.BigEndian.AppendUint64(k, uint64(partner))
	return append(k, typ...)
}

// countEventHour adds delta to the count of e's organization, hour,
// partner and type, dropping the row at zero.
func (tx *Tx) countEventHour(e *Event, delta int64) error {
	k := eventHourKey(e.OrganizationID, max(e.Time.UnixMilli(), 0)/hourMs, e.PartnerID, e.Type)
	b := tx.bucket(bucketOrgEventHours)
	var n int64
	if v := b.Get(k); len(v) == 8 {
		n = btoi(v)
	}
	if n += delta; n <= 0 {
		return b.Delete(k)
	}
	return b.Put(k, itob(n))
}

// backfillEventHours counts the org_events index of a store that has no
// hourly counts yet (migration 1). It also keeps its own mark in the meta
// bucket, which stores from before versioned migrations carry, so that
// running it again on such a store changes nothing.
func backfillEventHours(tx *Tx) error {
	meta := tx.bucket(bucketMeta)
	if meta.Get(keyEventHours) != nil {
		return nil
	}
	counts := map[string]int64{}
	err := tx.bucket(bucketOrgEvents).ForEach(func(k, v []byte) error {
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
	b := tx.bucket(bucketOrgEventHours)
	for k, n := range counts {
		if err := b.Put([]byte(k), itob(n)); err != nil {
			return err
		}
	}
	return meta.Put(keyEventHours, []byte{1})
}

// orgEventsByHour is OrgEvents for queries the hourly counts can answer
// (no device or status filter, a bounded page): the partial hours at the
// ends of the window are walked, whole hours before the page or after it
// are counted from their rows, and only the hours that hold the page are
// walked entry by entry.
func (tx *Tx) orgEventsByHour(org int64, q EventQuery, match func(k, v []byte) bool, p Page) ([]Event, int, error) {
	startMs, endMs := max(q.Start.UnixMilli(), 0), max(q.End.UnixMilli(), 0)
	first := (startMs + hourMs - 1) / hourMs // first hour that starts inside the window
	last := (endMs+1)/hourMs - 1             // last hour that ends inside it
	w := &eventWalk{tx: tx, index: bucketOrgEvents, match: match, page: p}
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
	c := tx.bucket(bucketOrgEventHours).Cursor()
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
		if q.PartnerID != 0 && btoi(k[16:24]) != q.PartnerID {
			continue
		}
		if q.Types != nil && !q.Types[string(k[24:])] {
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

// eventWalk counts the index entries a query keeps and decodes the records
// of its page, over one or more key ranges visited in order.
type eventWalk struct {
	tx     *Tx
	index  []byte
	match  func(k, v []byte) bool // nil keeps every entry
	status string
	page   Page
	out    []Event
	total  int
	cursor *bolt.Cursor
}

// pageDone reports whether the page is complete, so later entries only count.
func (w *eventWalk) pageDone() bool { return w.page.Limit > 0 && len(w.out) >= w.page.Limit }

// walk visits the index keys from..to (inclusive). The event id is the
// key's last 8 bytes. With a status filter every candidate record is read.
func (w *eventWalk) walk(from, to []byte) error {
	if w.cursor == nil {
		w.cursor = w.tx.bucket(w.index).Cursor()
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
		e, err := w.tx.Event(btoi(k[len(k)-8:]))
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
