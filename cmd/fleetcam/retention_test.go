package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/pgtest"
	"github.com/fleetcam/fleetcam/store/postgres"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// The retention purge fleetcam starts, on either store: it keeps finished
// webhook deliveries for retention.webhookDeliveryDays (with 10 days, a
// delivery that finished 20 days ago goes, where the store's own default,
// 30 days, would keep it, and one that finished 5 days ago stays), and an
// organization's GPS and events for its purge days (with one day, those of
// two days ago go, those of two hours ago stay). On PostgreSQL the day of
// the old ones is dropped whole.
func TestServePurges(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"bbolt", "postgres"} {
		t.Run(engine, func(t *testing.T) { testServePurges(t, engine) })
	}
}

func testServePurges(t *testing.T, engine string) {
	dir := t.TempDir()
	cfg, err := configs.Load("", testEnv(dir).get)
	if err != nil {
		t.Fatal(err)
	}
	if engine == "postgres" {
		cfg.Store.PostgresURL = pgtest.Database(t, "")
	}
	cfg.Retention.WebhookDeliveryDays = 10
	// openAt opens the store cfg names with a clock stopped at at.
	openAt := func(at time.Time) *store.DB {
		opts := store.Options{Now: func() time.Time { return at }}
		var db *store.DB
		var err error
		if cfg.Store.PostgresURL != "" {
			db, err = postgres.Open(t.Context(), cfg.Store.PostgresURL, postgres.Options{}, opts)
		} else {
			db, err = boltstore.Open(filepath.Join(dir, storeFile), opts)
		}
		if err != nil {
			t.Fatal(err)
		}
		return db
	}

	now := time.Now().UTC()
	var org *store.Organization
	var dev *store.Device
	db := openAt(now.AddDate(0, 0, -30))
	err = db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner("P")
		if err != nil {
			return err
		}
		if org, err = tx.CreateOrganization(p.ID, "Fleet", nil); err != nil {
			return err
		}
		org.Retention.PurgeDays = 1
		if err := tx.UpdateOrganization(org); err != nil {
			return err
		}
		dev = &store.Device{IMEI: storetest.IMEI("35766010000001"), Name: "Truck", OrganizationID: org.ID, PartnerID: p.ID}
		return tx.AddDevice(dev)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	var old, recent int64
	oldFix, recentFix := now.AddDate(0, 0, -2), now.Add(-2*time.Hour)
	for _, d := range []struct {
		ago int
		id  *int64
	}{{20, &old}, {5, &recent}} {
		at := now.AddDate(0, 0, -d.ago)
		db := openAt(at)
		err := db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
			del := &store.Delivery{OrganizationID: org.ID, URL: "https://hooks.example.com/", Type: store.WebhookTypeEvent, Body: []byte(`{}`)}
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
	db = openAt(now)
	err = db.Update(t.Context(), store.Actor{Source: "device"}, func(tx *store.Tx) error {
		for i, at := range []time.Time{oldFix, recentFix} {
			if _, err := tx.AddGPS(dev, []store.GPSPoint{{Time: at, Lat: 48, Lon: 11}}); err != nil {
				return err
			}
			if _, err := tx.IngestEvent(dev, store.EventInput{DeviceEventID: string(rune('a' + i)), Type: "deceleration", Time: at}); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

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
	// times lists the times of the device's GPS fixes and of its events.
	times := func() (gps, events []time.Time) {
		a.db.View(t.Context(), func(tx *store.Tx) error {
			pts, err := tx.GPS(dev.IMEI, now.AddDate(0, 0, -3), now, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pts {
				gps = append(gps, p.Time)
			}
			evs, _, err := tx.DeviceEvents(dev.IMEI, now.AddDate(0, 0, -3), now, store.Page{})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				events = append(events, e.Time)
			}
			return nil
		})
		return gps, events
	}
	storetest.Eventually(t, "the purge of the delivery that finished 20 days ago", patience, 10*time.Millisecond,
		func() bool { return !found(old) })
	if !found(recent) {
		t.Fatal("the delivery that finished 5 days ago was purged")
	}
	storetest.Eventually(t, "the purge of the GPS fix and event of two days ago", patience, 10*time.Millisecond,
		func() bool { gps, events := times(); return len(gps) == 1 && len(events) == 1 })
	gps, events := times()
	if !gps[0].Equal(recentFix.Truncate(time.Millisecond)) || !events[0].Equal(recentFix.Truncate(time.Millisecond)) {
		t.Errorf("kept the GPS fix of %s and the event of %s; want those of %s", gps[0], events[0], recentFix)
	}
	if engine != "postgres" {
		return
	}
	conn, err := pgx.Connect(t.Context(), cfg.Store.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	day := oldFix.Format("_y2006m01d02")
	for _, table := range []string{"gps_samples", "events"} {
		var exists bool
		if err := conn.QueryRow(t.Context(), `SELECT to_regclass($1) IS NOT NULL`, table+day).Scan(&exists); err != nil || exists {
			t.Errorf("partition %s%s exists %v, %v; want it dropped", table, day, exists, err)
		}
	}
}
