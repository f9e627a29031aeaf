package bolt_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
	bbolt "go.etcd.io/bbolt"
)

func TestQueueKeysRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		org  int64
		url  string
		imei string
		id   int64
	}{
		{1, "https://a.example.com/x", "357660101000016", 7},
		{256, "http://b.example.com", "", 1 << 40},
		{3, "https://c.example.com/?q=\x01", "1", 256},
	} {
		next, created := time.Unix(100, 5).UTC(), time.Unix(50, 0).UTC()
		k := bolt.QueueKey(tc.org, tc.url, tc.imei, tc.id)
		q, ok := bolt.ParseQueueEntry(k, bolt.QueueValue(&store.Delivery{NextAttemptAt: next, CreatedAt: created}))
		if !ok || q.OrganizationID != tc.org || q.URL != tc.url || q.IMEI != tc.imei || q.DeliveryID != tc.id ||
			!q.NextAttemptAt.Equal(next) || !q.CreatedAt.Equal(created) {
			t.Errorf("round trip of %+v gave %+v", tc, q)
		}
	}
}

// A delivery is stored as JSON under its id, with an organization index
// entry (org, id → nothing) and, while pending, a queue entry (org, 0, url,
// 0, imei, id → next attempt and creation in unix nanoseconds); one an
// earlier version queued is read, attempted and finished like a new one.
func TestDeliveriesKeepTheirLayout(t *testing.T) {
	s := openWebhookStore(t)
	org := s.organization()
	const url, imei = "https://r.example.com/e", "490154203237518"
	created := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	queueValue := func(next, created time.Time) []byte {
		return append(be8(next.UnixNano()), be8(created.UnixNano())...)
	}
	s.raw(func(btx *bbolt.Tx) error {
		d := btx.Bucket([]byte("webhook_deliveries"))
		if err := d.SetSequence(9); err != nil {
			return err
		}
		if err := d.Put(be8(9), fmt.Appendf(nil, `{"id":9,"organizationId":%d,"url":%q,"messageSeq":4,`+
			`"webhookId":"msg_9","type":"event","imei":%q,"messageTime":"2026-02-01T00:00:00Z",`+
			`"createdAt":"2026-02-01T00:00:00Z","status":"pending","attempts":0,"body":{"n":9}}`, org, url, imei)); err != nil {
			return err
		}
		if err := btx.Bucket([]byte("webhook_org_deliv")).Put(key(org, int64(9)), nil); err != nil {
			return err
		}
		return btx.Bucket([]byte("webhook_queue")).Put(append(key(org, url, imei), be8(9)...), queueValue(created, created))
	})

	var added *store.Delivery
	s.update(func(tx *store.Tx) error {
		q := tx.PendingDeliveriesOf(org)
		if len(q) != 1 || q[0].DeliveryID != 9 || q[0].URL != url || q[0].IMEI != imei || !q[0].CreatedAt.Equal(created) {
			t.Errorf("queue %+v, want the stored delivery 9", q)
		}
		d, err := tx.Delivery(9)
		if err != nil {
			return err
		}
		if d.WebhookID != "msg_9" || string(d.Body) != `{"n":9}` {
			t.Errorf("delivery 9 is %+v", d)
		}
		added = &store.Delivery{OrganizationID: org, URL: url, IMEI: imei, Type: store.WebhookTypeEvent, Body: []byte(`{"n":10}`)}
		return tx.EnqueueDelivery(added)
	})
	if added.ID != 10 {
		t.Fatalf("new delivery has id %d, want 10 after the stored 9", added.ID)
	}
	s.raw(func(btx *bbolt.Tx) error {
		if btx.Bucket([]byte("webhook_deliveries")).Get(be8(10)) == nil {
			t.Error("delivery 10 is not under its id")
		}
		if v := btx.Bucket([]byte("webhook_org_deliv")).Get(key(org, int64(10))); v == nil || len(v) != 0 {
			t.Errorf("organization index entry of delivery 10: %x", v)
		}
		qk := append(key(org, url, imei), be8(10)...)
		if v := btx.Bucket([]byte("webhook_queue")).Get(qk); !bytes.Equal(v, queueValue(s.clock.Now(), s.clock.Now())) {
			t.Errorf("queue entry of delivery 10: %x", v)
		}
		return nil
	})

	// Finishing a delivery takes it off the queue; the log keeps it.
	s.update(func(tx *store.Tx) error {
		d, err := tx.Delivery(9)
		if err != nil {
			return err
		}
		d.Status, d.FinishedAt = store.DeliveryDelivered, s.clock.Now()
		return tx.PutDelivery(d)
	})
	s.view(func(tx *store.Tx) error {
		if q := tx.PendingDeliveries(); len(q) != 1 || q[0].DeliveryID != 10 {
			t.Errorf("queue %+v, want delivery 10 alone", q)
		}
		if page, total, err := tx.Deliveries(org, store.DeliveryFilter{}, store.Page{}); err != nil || total != 2 ||
			page[0].ID != 10 || page[1].ID != 9 || page[1].Status != store.DeliveryDelivered {
			t.Errorf("deliveries %+v of %d (%v), want 10 and the delivered 9", page, total, err)
		}
		return nil
	})
	s.raw(func(btx *bbolt.Tx) error {
		if btx.Bucket([]byte("webhook_queue")).Get(append(key(org, url, imei), be8(9)...)) != nil {
			t.Error("the queue entry of the delivered 9 is left")
		}
		return nil
	})
}

// The retention purge deletes a delivery with its organization index
// entry: afterwards every index entry names a delivery and every delivery
// has one.
func TestPurgeDeliveriesKeepsTheIndexWhole(t *testing.T) {
	s := openWebhookStore(t)
	org, other := s.organization(), s.organization()
	start := s.clock.Now()
	for i := range 9 {
		s.clock.Set(start.Add(time.Duration(i) * 24 * time.Hour))
		s.update(func(tx *store.Tx) error {
			d := &store.Delivery{OrganizationID: []int64{org, other}[i%2], URL: "https://r.example.com", Body: []byte(`{}`)}
			if err := tx.EnqueueDelivery(d); err != nil {
				return err
			}
			if i%3 == 2 {
				return nil // still pending
			}
			d.Status, d.FinishedAt = store.DeliveryDelivered, s.clock.Now()
			return tx.PutDelivery(d)
		})
	}
	// At day 40 with 35 days, the finished deliveries of days 0 to 4 go.
	s.clock.Set(start.Add(40 * 24 * time.Hour))
	res, err := s.db.Purge(t.Context(), s.clock.Now(), store.PurgeSettings{Batch: 2, WebhookDeliveryDays: 35})
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Deleted["webhookDeliveries"]; n != 4 {
		t.Errorf("purged %d deliveries, want the 4 finished before day 5", n)
	}
	s.raw(func(btx *bbolt.Tx) error {
		deliveries := btx.Bucket([]byte("webhook_deliveries"))
		n := 0
		c := btx.Bucket([]byte("webhook_org_deliv")).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
			if deliveries.Get(k[8:]) == nil {
				t.Errorf("index entry %x names a missing delivery", k)
			}
		}
		if left := deliveries.Stats().KeyN; n != 5 || left != 5 {
			t.Errorf("%d index entries and %d deliveries left, want 5", n, left)
		}
		return nil
	})
}
