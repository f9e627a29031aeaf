package postgres

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// BenchmarkEventPages times the event pages the API asks the store for,
// each with the availability of its events' files, on PostgreSQL over
// FLEETCAM_BENCH_EVENTS events (1,000,000 by default): one organization's
// 100 devices over 30 days, three types, one file an event. The events are
// bulk-inserted with INSERT … SELECT generate_series into a database of
// schema version 17, in the partitions of their days, which is then
// migrated to this version's schema (as a database that ran an older
// fleetcam is: the migrations count the events by hour and by device and
// day), vacuumed and analysed.
func BenchmarkEventPages(b *testing.B) {
	n := benchEvents(1_000_000)
	db, _, org, imeis, start := seedEventPages(b, n, 100)
	const days = 30
	month := store.EventQuery{Start: start, End: start.AddDate(0, 0, days).Add(-time.Millisecond)}
	day := store.EventQuery{Start: start.AddDate(0, 0, 10), End: start.AddDate(0, 0, 11).Add(-time.Millisecond)}
	typed := month
	typed.Types = map[string]bool{"deceleration": true}
	typed.PartnerID = 1
	for _, bc := range []struct {
		name string
		q    store.EventQuery
		p    store.Page
	}{
		{"organization/day", day, store.Page{Limit: 100}},
		{"organization/30days", month, store.Page{Limit: 100}},
		{"organization/30days-typed-offset5000", typed, store.Page{Limit: 100, Offset: 5000}},
		{"organization/deep", month, store.Page{Limit: 100, Offset: n / 2}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				err := db.View(b.Context(), func(tx *store.Tx) error {
					page, total, err := tx.OrgEventList(org, bc.q, bc.p)
					if err == nil && (len(page) != bc.p.Limit || total == 0) {
						err = fmt.Errorf("page of %d of %d", len(page), total)
					}
					if err != nil {
						return err
					}
					events := make([]*store.Event, len(page))
					for i := range page {
						events[i] = &page[i].Event
					}
					return pageMedia(tx, events)
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// A device's pages: every ownership's events (DeviceEvents, as an
	// administrator sees them), and those of the device's owner of now
	// (QueryDeviceEvents, as the API asks for an organization's device).
	owner := &store.Device{IMEI: imeis[7], OrganizationID: org, Ownership: 1, CreatedAt: start}
	ownerTyped := store.EventQuery{Start: month.Start, End: month.End, Types: map[string]bool{"deceleration": true}}
	for _, bc := range []struct {
		name string
		page func(tx *store.Tx) ([]store.Event, int, error)
	}{
		{"device/30days", func(tx *store.Tx) ([]store.Event, int, error) {
			return tx.DeviceEvents(imeis[7], month.Start, month.End, store.Page{Limit: 100})
		}},
		{"device/30days-offset100", func(tx *store.Tx) ([]store.Event, int, error) {
			return tx.DeviceEvents(imeis[7], month.Start, month.End, store.Page{Limit: 100, Offset: 100})
		}},
		{"device/30days-owner-typed", func(tx *store.Tx) ([]store.Event, int, error) {
			return tx.QueryDeviceEvents(owner, ownerTyped, store.Page{Limit: 100})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				err := db.View(b.Context(), func(tx *store.Tx) error {
					page, total, err := bc.page(tx)
					if err == nil && (len(page) != 100 || total == 0) {
						err = fmt.Errorf("page of %d of %d", len(page), total)
					}
					if err != nil {
						return err
					}
					events := make([]*store.Event, len(page))
					for i := range page {
						events[i] = &page[i]
					}
					return pageMedia(tx, events)
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// pageMedia reads whether the files of a page's events are in the cloud,
// as the API does for every page.
func pageMedia(tx *store.Tx, events []*store.Event) error {
	_, err := tx.EventsMediaAvailable(events)
	return err
}

// seedEventPages returns a store over a new database holding n events of
// one organization's devices (as many as devices), evenly over the 30 days
// from the start it returns, with its engine, the organization and the
// devices' IMEIs.
func seedEventPages(b testing.TB, n, devices int) (*store.DB, *Engine, int64, []string, time.Time) {
	b.Helper()
	ctx := context.Background()
	e, err := OpenEngine(ctx, pgtest.Database(b, ""), Options{StatementTimeout: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	p, sqlDB, err := e.provider()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 17); err != nil {
		b.Fatal(err)
	}
	sqlDB.Close()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	err = ensurePartitions(ctx, e, start.AddDate(0, 0, 30), []partitionedTable{
		{table: "events", column: "time", unit: day, back: 31, ahead: 1},
		{table: "event_files", column: "event_time", unit: day, back: 31, ahead: 1},
	})
	if err != nil {
		b.Fatal(err)
	}
	var org, partner int64
	var imeis []string
	err = e.update(ctx, func(t *tx) error {
		p := &store.Partner{Name: "Bench partner", CreatedAt: start}
		if err := t.Partners().Insert(p); err != nil {
			return err
		}
		o := &store.Organization{Name: "Bench fleet", PartnerID: p.ID, SSOSalt: []byte{}, CreatedAt: start,
			Retention: store.Retention{PurgeDays: 90}}
		if err := t.Organizations().Insert(o); err != nil {
			return err
		}
		org, partner = o.ID, p.ID
		for i := range devices {
			d := &store.Device{IMEI: fmt.Sprintf("3520451%08d", i), Name: fmt.Sprint("Bench ", i), OrganizationID: o.ID,
				PartnerID: p.ID, Status: store.DeviceActivated, CreatedAt: start}
			if err := t.Devices().Insert(d); err != nil {
				return err
			}
			imeis = append(imeis, d.IMEI)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	step := 30 * 24 * time.Hour / time.Duration(n)
	_, err = e.pool.Exec(ctx, `INSERT INTO events (imei, organization_id, partner_id, type, time, lat, lon, severity,
			status, ownership, created_at)
		SELECT '3520451' || lpad((i % $6)::text, 8, '0'), $1, $2,
		       (ARRAY['deceleration', 'button', 'cellPhoneUseBeep'])[1 + i % 3],
		       $3::timestamptz + i * $4::interval, 52.37, 4.89, 2, 'new', 1, $3::timestamptz + i * $4::interval
		  FROM generate_series(0, $5::integer - 1) AS i`, org, partner, start, step, n, devices)
	if err != nil {
		b.Fatal(err)
	}
	_, err = e.pool.Exec(ctx, `INSERT INTO event_files (event_id, event_time, position, camera_id, file_id, file_type)
		SELECT id, time, 0, 1, 'clip' || id, 'video' FROM events`)
	if err != nil {
		b.Fatal(err)
	}
	applied, err := e.Migrate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `VACUUM (ANALYZE) events, event_files, devices, media_files`); err != nil {
		b.Fatal(err)
	}
	db, err := store.New(e, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	b.Logf("%d events seeded, migrated (%v) and vacuumed in %s", n, applied, time.Since(began).Round(time.Second))
	return db, e, org, imeis, start
}

// benchEvents is how many events a benchmark seeds: FLEETCAM_BENCH_EVENTS,
// or def when that is not a positive number.
func benchEvents(def int) int {
	if v, err := strconv.Atoi(os.Getenv("FLEETCAM_BENCH_EVENTS")); err == nil && v > 0 {
		return v
	}
	return def
}
