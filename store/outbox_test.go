package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestOutbox(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, clock := openTest(t)
		sig, stop := db.OutboxSignal()
		defer stop()
		var org, other int64
		err := db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
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
		db.Update(t.Context(), Actor{}, func(tx *Tx) error { return tx.Emit(Message{Kind: MessageGPS, OrganizationID: org}) })
		select {
		case <-sig:
		default:
			t.Fatal("no signal after Emit")
		}

		var ids []int64
		err = db.Update(t.Context(), Actor{}, func(tx *Tx) error {
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
		db.View(t.Context(), func(tx *Tx) error {
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
		db.Update(t.Context(), Actor{}, func(tx *Tx) error {
			gave, err := tx.DisableWebhookEndpoint(org, "https://a.example.com", "answered 410 Gone")
			if len(gave) != 2 {
				t.Errorf("gave up %d, want 2", len(gave))
			}
			return err
		})
		db.View(t.Context(), func(tx *Tx) error {
			if q := tx.PendingDeliveriesOf(org); len(q) != 1 || q[0].URL != "https://a.example.com/more" {
				t.Errorf("left pending %+v", q)
			}
			return nil
		})

		// A redelivery is for the organization that owns the delivery only, and
		// enables the endpoint again.
		err = db.Update(t.Context(), Actor{}, func(tx *Tx) error {
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
		res, err := db.Purge(context.Background(), clock.Now(), PurgeSettings{WebhookDeliveryDays: 7})
		if err != nil || res.Deleted["webhookDeliveries"] != 2 {
			t.Errorf("purged %v (%v), want the 2 given up", res.Deleted, err)
		}
		db.View(t.Context(), func(tx *Tx) error {
			if _, total, _ := tx.Deliveries(org, DeliveryFilter{}, Page{}); total != 2 {
				t.Errorf("%d deliveries left, want 2", total)
			}
			return nil
		})
	})
}

// The retention purge deletes finished deliveries older than the setting
// with their index entries, in batches; younger and pending ones stay, and
// a redelivery does not need the delivery it repeats.
func TestPurgeDeliveries(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, clock := openTest(t)
		start := clock.Now()
		var org, other int64
		mustUpdate(t, db, func(tx *Tx) error {
			p, _ := tx.CreatePartner("P")
			o1, _ := tx.CreateOrganization(p.ID, "A", nil)
			o2, err := tx.CreateOrganization(p.ID, "B", nil)
			org, other = o1.ID, o2.ID
			return err
		})
		// add queues a delivery of orgID at created and, unless status is
		// pending, finishes it at finished.
		add := func(orgID int64, created time.Time, status string, finished time.Time) int64 {
			t.Helper()
			clock.Set(created)
			var id int64
			mustUpdate(t, db, func(tx *Tx) error {
				d := &Delivery{OrganizationID: orgID, URL: "https://a.example.com", IMEI: "1", Type: WebhookTypeGPS, Body: []byte(`{"n":1}`)}
				if err := tx.EnqueueDelivery(d); err != nil {
					return err
				}
				id = d.ID
				if status == DeliveryPending {
					return nil
				}
				d.Status, d.FinishedAt = status, finished
				return tx.PutDelivery(d)
			})
			return id
		}
		day := func(n float64) time.Time { return start.Add(time.Duration(n * 24 * float64(time.Hour))) }

		old := map[int64]bool{}
		for i := range 7 {
			old[add([]int64{org, other}[i%2], day(0), DeliveryDelivered, day(0.1))] = true
		}
		stalePending := add(org, day(0), DeliveryPending, time.Time{})
		lateFinish := add(org, day(0), DeliveryDelivered, day(25))
		gaveUp := add(org, day(1), DeliveryFailed, day(3))
		old[gaveUp] = true
		original := add(org, day(2), DeliveryDelivered, day(2))
		old[original] = true
		clock.Set(day(10))
		var redelivery int64
		mustUpdate(t, db, func(tx *Tx) error {
			d, err := tx.Redeliver(org, original)
			redelivery = d.ID
			return err
		})
		mustUpdate(t, db, func(tx *Tx) error {
			d, err := tx.Delivery(redelivery)
			if err != nil {
				return err
			}
			d.Status, d.FinishedAt = DeliveryDelivered, day(10)
			return tx.PutDelivery(d)
		})
		young := add(org, day(20), DeliveryDelivered, day(20))
		pending := add(other, day(39), DeliveryPending, time.Time{})

		// At day 40 with 30 days: what finished before day 10 goes.
		clock.Set(day(40))
		res, err := db.Purge(context.Background(), clock.Now(), PurgeSettings{Batch: 2, WebhookDeliveryDays: 30})
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted["webhookDeliveries"] != len(old) {
			t.Errorf("purged %d deliveries, want %d", res.Deleted["webhookDeliveries"], len(old))
		}
		if res.Transactions < len(old)/2 {
			t.Errorf("%d transactions for %d deliveries in batches of 2", res.Transactions, len(old))
		}
		kept := []int64{stalePending, lateFinish, redelivery, young, pending}
		db.View(t.Context(), func(tx *Tx) error {
			for id := range old {
				if _, err := tx.Delivery(id); !errors.Is(err, ErrNotFound) {
					t.Errorf("delivery %d survived: %v", id, err)
				}
			}
			for _, id := range kept {
				if _, err := tx.Delivery(id); err != nil {
					t.Errorf("delivery %d was purged: %v", id, err)
				}
			}
			// The organizations' lists hold exactly the deliveries left.
			for _, tc := range []struct {
				org   int64
				f     DeliveryFilter
				total int
			}{
				{org, DeliveryFilter{}, 4},
				{org, DeliveryFilter{Status: DeliveryDelivered}, 3},
				{other, DeliveryFilter{}, 1},
			} {
				if page, total, err := tx.Deliveries(tc.org, tc.f, Page{}); err != nil || total != tc.total || len(page) != tc.total {
					t.Errorf("organization %d %+v: %d of %d (%v), want %d", tc.org, tc.f, len(page), total, err, tc.total)
				}
			}
			return nil
		})

		// A purged delivery is not found for redelivery; its redelivery, which
		// kept its own copy of the body, still can be.
		mustUpdate(t, db, func(tx *Tx) error {
			if _, err := tx.Redeliver(org, original); !errors.Is(err, ErrNotFound) {
				t.Errorf("redelivery of a purged delivery: %v, want not found", err)
			}
			d, err := tx.Redeliver(org, redelivery)
			if err != nil {
				return err
			}
			if string(d.Body) != `{"n":1}` || d.RedeliveryOf != redelivery {
				t.Errorf("redelivery of the redelivery %+v", d)
			}
			return nil
		})
		if again, err := db.Purge(context.Background(), clock.Now(), PurgeSettings{Batch: 2, WebhookDeliveryDays: 30}); err != nil || again.Deleted["webhookDeliveries"] != 0 {
			t.Fatalf("second purge %v %v, want nothing", again.Deleted, err)
		}
	})
}
