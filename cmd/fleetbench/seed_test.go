package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// Seeding stores every event and GPS sample it makes, on either engine,
// as a store that took them in as they came would hold them: the device
// pages and GPS find them all, the webhook messages they emitted are
// passed and pruned, and on PostgreSQL the past days have partitions of
// their own.
func TestSeedStoresEveryRecord(t *testing.T) {
	for _, st := range engines(t) {
		t.Run(st.engine, func(t *testing.T) {
			ctx := t.Context()
			fl, err := seedFleet(ctx, st, 3)
			if err != nil {
				t.Fatal(err)
			}
			// Weeks back, beyond the days the engine keeps partitions ready for.
			end := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -20)
			start := end.AddDate(0, 0, -2)
			if err := seedGPS(ctx, fl, start, end, time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := seedEvents(ctx, fl, 30, 2, end, nil); err != nil {
				t.Fatal(err)
			}
			db, err := st.open(ctx, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = db.View(ctx, func(tx *store.Tx) error {
				events := 0
				for _, imei := range fl.imeis {
					pts, err := tx.GPS(imei, start, end, 0)
					if err != nil {
						return err
					}
					if len(pts) != 48 {
						t.Errorf("%s has %d GPS samples, want 48", imei, len(pts))
					}
					_, n, err := tx.DeviceEvents(imei, start, end, store.Page{Limit: 1})
					if err != nil {
						return err
					}
					events += n
				}
				if events != 30 {
					t.Errorf("the devices have %d events, want 30", events)
				}
				msgs, err := tx.MessagesAfter(0, 0)
				if err == nil && len(msgs) != 0 {
					t.Errorf("%d webhook messages left after seeding", len(msgs))
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if st.engine != enginePostgres {
				return
			}
			conn, err := pgx.Connect(ctx, st.pgURL)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			rows, err := conn.Query(ctx, `SELECT inhrelid::regclass::text FROM pg_inherits
				WHERE inhparent IN ('events'::regclass, 'gps_samples'::regclass) ORDER BY 1`)
			if err != nil {
				t.Fatal(err)
			}
			names, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, name := range names {
				_, suffix, _ := strings.Cut(name, "_y")
				if day, err := time.Parse("2006m01d02", suffix); err == nil && day.Before(end) {
					got = append(got, name)
				}
			}
			var want []string
			for _, table := range []string{"events", "gps_samples"} {
				for d := start; d.Before(end); d = d.AddDate(0, 0, 1) {
					want = append(want, table+"_y"+d.Format("2006m01d02"))
				}
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("the seeded days' partitions are %v, want %v", got, want)
			}
			kept, stored := storetest.PostgresHourCounts(t, conn)
			if len(stored) == 0 || !maps.Equal(kept, stored) {
				t.Errorf("the hourly event counts are %v, the seeded events count %v", kept, stored)
			}
			kept, stored = storetest.PostgresDeviceDayCounts(t, conn)
			if len(stored) == 0 || !maps.Equal(kept, stored) {
				t.Errorf("the devices' daily event counts are %v, the seeded events count %v", kept, stored)
			}
		})
	}
}
