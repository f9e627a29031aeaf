package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// The retention purge fleetcam starts keeps finished webhook deliveries for
// retention.webhookDeliveryDays: with 10 days, a delivery that finished 20
// days ago goes (the store's own default, 30 days, would keep it) and one
// that finished 5 days ago stays.
func TestServePurgesTheDeliveryLogAfterTheConfiguredDays(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC()
	var old, recent int64
	for _, d := range []struct {
		ago int
		id  *int64
	}{{20, &old}, {5, &recent}} {
		at := now.AddDate(0, 0, -d.ago)
		db := storetest.Open(t, storetest.WithPath(filepath.Join(dir, storeFile)), storetest.WithClock(func() time.Time { return at }))
		err := db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
			p, err := tx.CreatePartner("P")
			if err != nil {
				return err
			}
			o, err := tx.CreateOrganization(p.ID, "Fleet", nil)
			if err != nil {
				return err
			}
			del := &store.Delivery{OrganizationID: o.ID, URL: "https://hooks.example.com/", Type: store.WebhookTypeEvent, Body: []byte(`{}`)}
			if err := tx.EnqueueDelivery(del); err != nil {
				return err
			}
			del.Status, del.FinishedAt, *d.id = store.DeliveryDelivered, at, del.ID
			return tx.PutDelivery(del)
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
	}

	cfg, err := configs.Load("", testEnv(dir).get)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Retention.WebhookDeliveryDays = 10
	a, err := start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer a.stop(5 * time.Second)
	found := func(id int64) bool {
		var err error
		a.db.View(t.Context(), func(tx *store.Tx) error { _, err = tx.Delivery(id); return nil })
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	storetest.Eventually(t, "the purge of the delivery that finished 20 days ago", 10*time.Second, 10*time.Millisecond,
		func() bool { return !found(old) })
	if !found(recent) {
		t.Fatal("the delivery that finished 5 days ago was purged")
	}
}
