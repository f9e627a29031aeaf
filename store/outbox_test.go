package store

import (
	"testing"
	"time"
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
		k := queueKey(tc.org, tc.url, tc.imei, tc.id)
		q, ok := parseQueueEntry(k, queueValue(&Delivery{NextAttemptAt: next, CreatedAt: created}))
		if !ok || q.OrganizationID != tc.org || q.URL != tc.url || q.IMEI != tc.imei || q.DeliveryID != tc.id ||
			!q.NextAttemptAt.Equal(next) || !q.CreatedAt.Equal(created) {
			t.Errorf("round trip of %+v gave %+v", tc, q)
		}
	}
}

func TestOutbox(t *testing.T) {
	db, clock := openTest(t)
	sig, stop := db.OutboxSignal()
	defer stop()
	var org, other int64
	err := db.Update(Actor{Source: "test"}, func(tx *Tx) error {
		p, _ := tx.CreatePartner("P")
		o1, _ := tx.CreateOrganization(p.ID, "A", nil)
		o2, err := tx.CreateOrganization(p.ID, "B", nil)
		org, other = o1.ID, o2.ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-sig:
		t.Fatal("signalled without an outbox change")
	default:
	}

	// Emitting wakes the watchers once the transaction commits.
	db.Update(Actor{}, func(tx *Tx) error { return tx.Emit(Message{Kind: MessageGPS, OrganizationID: org}, nil) })
	select {
	case <-sig:
	default:
		t.Fatal("no signal after Emit")
	}

	var ids []int64
	err = db.Update(Actor{}, func(tx *Tx) error {
		for _, url := range []string{"https://a.example.com", "https://a.example.com/more", "https://a.example.com"} {
			d := &Delivery{OrganizationID: org, URL: url, IMEI: "1", Type: WebhookTypeGPS, Body: []byte(`{}`)}
			if err := tx.EnqueueDelivery(d); err != nil {
				return err
			}
			ids = append(ids, d.ID)
		}
		return tx.EnqueueDelivery(&Delivery{OrganizationID: other, URL: "https://a.example.com", Body: []byte(`{}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if n := len(tx.PendingDeliveries()); n != 4 {
			t.Errorf("%d pending, want 4", n)
		}
		if n := len(tx.PendingDeliveriesOf(org)); n != 3 {
			t.Errorf("%d pending for the organization, want 3", n)
		}
		page, total, _ := tx.Deliveries(org, DeliveryFilter{}, Page{Limit: 2})
		if total != 3 || len(page) != 2 || page[0].ID != ids[2] || page[1].ID != ids[1] {
			t.Errorf("newest first: total %d, page %v", total, page)
		}
		page, total, _ = tx.Deliveries(org, DeliveryFilter{URL: "https://a.example.com"}, Page{Offset: 1})
		if total != 2 || len(page) != 1 || page[0].ID != ids[0] {
			t.Errorf("filtered: total %d, page %v", total, page)
		}
		return nil
	})

	// Disabling an endpoint gives up its queue, and only its own.
	db.Update(Actor{}, func(tx *Tx) error {
		gave, err := tx.DisableWebhookEndpoint(org, "https://a.example.com", "answered 410 Gone")
		if len(gave) != 2 {
			t.Errorf("gave up %d, want 2", len(gave))
		}
		return err
	})
	db.View(func(tx *Tx) error {
		if q := tx.PendingDeliveriesOf(org); len(q) != 1 || q[0].URL != "https://a.example.com/more" {
			t.Errorf("left pending %+v", q)
		}
		return nil
	})

	// A redelivery is for the organization that owns the delivery only, and
	// enables the endpoint again.
	err = db.Update(Actor{}, func(tx *Tx) error {
		if _, err := tx.Redeliver(other, ids[0]); err == nil {
			t.Error("redelivered another organization's delivery")
		}
		gen := tx.OutboxGeneration()
		d, err := tx.Redeliver(org, ids[0])
		if err != nil {
			return err
		}
		ep, _ := tx.WebhookEndpoint(org, d.URL)
		if ep.Disabled || tx.OutboxGeneration() == gen || d.RedeliveryOf != ids[0] {
			t.Errorf("after redelivery: endpoint %+v, delivery %+v", ep, d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Finished deliveries go after the retention; pending ones stay.
	clock.Advance(8 * 24 * time.Hour)
	db.Update(Actor{}, func(tx *Tx) error {
		n, err := tx.PurgeDeliveries(tx.Now().Add(-7 * 24 * time.Hour))
		if n != 2 {
			t.Errorf("purged %d, want the 2 given up", n)
		}
		return err
	})
	db.View(func(tx *Tx) error {
		if _, total, _ := tx.Deliveries(org, DeliveryFilter{}, Page{}); total != 2 {
			t.Errorf("%d deliveries left, want 2", total)
		}
		return nil
	})
}
