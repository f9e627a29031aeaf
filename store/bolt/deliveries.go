package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Webhook deliveries and their queue:
//
//	webhook_deliveries  id → Delivery
//	webhook_queue       org, 0, url, 0, imei, id → next attempt, created (unix ns, 8 bytes each); pending only
//	webhook_org_deliv   org, id → nil, to list an organization's deliveries
//
// Ids come from the sequence of webhook_deliveries, so they grow with
// creation time. The queue's keys put a URL's deliveries together, a
// device's in order within them, which is the order they are sent in.

// Deliveries implements store.WebhookRecords.
func (t *tx) Deliveries() store.DeliveryRecords { return deliveries{t} }

type deliveries struct{ t *tx }

// Insert implements store.DeliveryRecords.
func (r deliveries) Insert(d *store.Delivery) error {
	if err := r.t.drawID(bucketDeliveries, &d.ID); err != nil {
		return err
	}
	return r.put(d)
}

// put stores the new delivery d under its id, with its organization's
// index entry and, while it is pending, its queue entry.
func (r deliveries) put(d *store.Delivery) error {
	if err := r.t.bucket(bucketOrgDeliveries).Put(compositeKey(d.OrganizationID, d.ID), nil); err != nil {
		return err
	}
	return r.Put(d)
}

// Get implements store.DeliveryRecords.
func (r deliveries) Get(id int64) (*store.Delivery, error) {
	d, err := lookupJSON(r.t.bucket(bucketDeliveries), itob(id), store.Delivery{})
	return d, store.NotFoundAs(err, "delivery %d", id)
}

// Put implements store.DeliveryRecords.
func (r deliveries) Put(d *store.Delivery) error {
	if err := putJSON(r.t.bucket(bucketDeliveries), itob(d.ID), d); err != nil {
		return err
	}
	qk := queueKey(d.OrganizationID, d.URL, d.IMEI, d.ID)
	if d.Status == store.DeliveryPending {
		return r.t.bucket(bucketQueue).Put(qk, queueValue(d))
	}
	return r.t.bucket(bucketQueue).Delete(qk)
}

// Pending implements store.DeliveryRecords: one range of the queue.
func (r deliveries) Pending(orgID int64, url string) ([]store.QueueEntry, error) {
	var prefix []byte
	switch {
	case orgID != 0 && url != "":
		prefix = append(compositeKey(orgID, url), 0)
	case orgID != 0:
		prefix = append(itob(orgID), 0)
	}
	var out []store.QueueEntry
	c := r.t.bucket(bucketQueue).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if q, ok := parseQueueEntry(k, v); ok {
			out = append(out, q)
		}
	}
	return out, nil
}

// List implements store.DeliveryRecords. It walks the organization's index
// from its newest entry back; without a filter it decodes only the
// deliveries of the page.
func (r deliveries) List(orgID int64, f store.DeliveryFilter, p store.Page) ([]store.Delivery, int, error) {
	var out []store.Delivery
	total := 0
	all := f.IsZero()
	prefix := itob(orgID)
	c := r.t.bucket(bucketOrgDeliveries).Cursor()
	for k, _ := seekBefore(c, itob(orgID+1)); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
		inPage := total >= p.Offset && (p.Limit <= 0 || len(out) < p.Limit)
		if all && !inPage {
			total++
			continue
		}
		d, err := r.Get(btoi(k[8:]))
		if err != nil {
			return nil, 0, err
		}
		if !f.Match(d) {
			continue
		}
		if inPage {
			out = append(out, *d)
		}
		total++
	}
	return out, total, nil
}

// PurgeFinished implements store.DeliveryRecords. Deliveries are walked in
// id order, which is creation order, and the walk stops at the first one
// created after the latest cutoff, which cannot have finished before it.
func (r deliveries) PurgeFinished(cut store.Cutoffs, from []byte, limit int) (int, []byte, error) {
	latest := cut.Latest()
	var index [][]byte // the organization's index entries of the doomed
	_, resume, err := purgeFrom(r.t.bucket(bucketDeliveries), from, limit, func(k, v []byte) (bool, bool, error) {
		var d struct {
			OrganizationID int64     `json:"organizationId"`
			Status         string    `json:"status"`
			CreatedAt      time.Time `json:"createdAt"`
			FinishedAt     time.Time `json:"finishedAt"`
		}
		if err := json.Unmarshal(v, &d); err != nil {
			return false, false, fmt.Errorf("store: decode: %w", err)
		}
		if !d.CreatedAt.Before(latest) {
			return false, false, nil
		}
		t, ok := cut[d.OrganizationID]
		doom := ok && d.Status != store.DeliveryPending && d.FinishedAt.Before(t)
		if doom {
			index = append(index, compositeKey(d.OrganizationID, btoi(k)))
		}
		return doom, true, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return deleteKeys(r.t.bucket(bucketOrgDeliveries), index, resume)
}

// queueKey is the queue key of a delivery: org, 0, url, 0, imei, id.
func queueKey(orgID int64, url, imei string, id int64) []byte {
	k := append(compositeKey(orgID, url), 0)
	k = append(k, imei...)
	return append(k, itob(id)...)
}

// queueValue is the queue value of a delivery: its next attempt and its
// creation, unix nanoseconds.
func queueValue(d *store.Delivery) []byte {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, uint64(d.NextAttemptAt.UnixNano()))
	binary.BigEndian.PutUint64(v[8:], uint64(d.CreatedAt.UnixNano()))
	return v
}

// parseQueueEntry reads a queue entry; false when k or v is not one.
func parseQueueEntry(k, v []byte) (store.QueueEntry, bool) {
	if len(k) < 8+1+1+8 || len(v) != 16 {
		return store.QueueEntry{}, false
	}
	q := store.QueueEntry{OrganizationID: btoi(k[:8])}
	rest := k[9:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 || len(rest) < i+1+8 {
		return store.QueueEntry{}, false
	}
	q.URL = string(rest[:i])
	rest = rest[i+1:]
	q.IMEI = string(rest[:len(rest)-8])
	q.DeliveryID = btoi(rest[len(rest)-8:])
	q.NextAttemptAt = time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
	q.CreatedAt = time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))).UTC()
	return q, true
}
