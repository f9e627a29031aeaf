package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// TestPurgeByPartition keeps ten days of GPS samples and events (with a
// file each) of three organizations and purges the oldest days. Every
// engine leaves the same records: each due one goes, with its media, and
// nothing else. An engine that keeps the series in day partitions drops
// each day all of whose records are due (a device's samples all recorded
// for an ownership that is due count, although the device has since moved
// to an organization that keeps everything) and keeps each day with a
// record of the organization that keeps everything, whose due records the
// record-by-record purge deletes.
func TestPurgeByPartition(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		start := f.clock.Now() // 2026-03-11 10:00 UTC
		var forever, moving *Organization
		f.update(func(tx *Tx) error {
			var err error
			if forever, err = tx.CreateOrganization(f.partner.ID, "Keeps everything", nil); err != nil {
				return err
			}
			moving, err = tx.CreateOrganization(f.partner.ID, "Gave a device away", nil)
			return err
		})
		purged := f.addDevice(1, f.org, f.partner.ID)
		kept := f.addDevice(2, forever, f.partner.ID)
		moved := f.addDevice(3, moving, f.partner.ID)
		purger := NewPurger(f.db, PurgerOptions{Batch: 50})
		record := func(dev *Device, day int) {
			at := start.AddDate(0, 0, day)
			f.update(func(tx *Tx) error {
				d, err := tx.Device(dev.IMEI)
				if err != nil {
					return err
				}
				if _, err := tx.AddGPS(d, []GPSPoint{{Time: at, Lat: 48, Lon: 11}}); err != nil {
					return err
				}
				r, err := tx.IngestEvent(d, EventInput{DeviceEventID: fmt.Sprint("e", day), Type: "deceleration", Time: at,
					Files: []EventFile{{CameraID: 1, FileID: fmt.Sprint("clip", day), FileType: FileVideo}}})
				if err != nil {
					return err
				}
				// A reviewer's comment goes with its event.
				_, err = tx.ReviewEvent(r.Event.ID, EventReview{Comment: "seen", AudienceName: "partner"})
				return err
			})
		}
		for day := range 10 {
			// A server running while the history arrives: its purge runs
			// (nothing is due yet) and keeps the coming partitions ready.
			f.clock.Set(start.AddDate(0, 0, day))
			if _, err := purger.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			record(purged, day)
			record(moved, day)
			if day == 1 {
				record(kept, day)
			}
			if day == 3 { // after the day's records
				f.update(func(tx *Tx) error {
					if err := tx.RemoveDevice(moved.IMEI); err != nil {
						return err
					}
					return tx.AddDevice(&Device{IMEI: moved.IMEI, Name: "moved", OrganizationID: forever.ID, PartnerID: f.partner.ID})
				})
			}
		}
		f.update(func(tx *Tx) error {
			for id, days := range map[int64]int{f.org.ID: 3, moving.ID: 3, forever.ID: 0} {
				o, err := tx.Organization(id)
				if err != nil {
					return err
				}
				o.Retention.PurgeDays = days
				if err := tx.UpdateOrganization(o); err != nil {
					return err
				}
			}
			return nil
		})
		now := start.AddDate(0, 0, 9)
		f.clock.Set(now)
		var gpsParts, eventParts []string
		partitioned := false
		partitions := func() {
			gpsParts, eventParts = nil, nil
			f.view(func(tx *Tx) error {
				return tx.Inspect(func(rec Records) error {
					_, gpsOK := rec.GPSSamples().(GPSPartitions)
					_, eventsOK := rec.Events().(EventPartitions)
					if gpsOK != eventsOK {
						t.Fatalf("partitions of GPS samples %v, of events %v; want both or neither", gpsOK, eventsOK)
					}
					partitioned = gpsOK
					if s, ok := rec.GPSSamples().(GPSPartitions); ok {
						ps, err := s.Partitions(now)
						if err != nil {
							return err
						}
						for _, p := range ps {
							gpsParts = append(gpsParts, p.Start.Format(time.DateOnly))
						}
					}
					if s, ok := rec.Events().(EventPartitions); ok {
						ps, err := s.Partitions(now)
						if err != nil {
							return err
						}
						for _, p := range ps {
							eventParts = append(eventParts, p.Start.Format(time.DateOnly))
						}
					}
					return nil
				})
			})
		}
		partitions()
		if partitioned {
			want := []string{"2026-03-09", "2026-03-10", "2026-03-11", "2026-03-12", "2026-03-13", "2026-03-14", "2026-03-15", "2026-03-16", "2026-03-17", "2026-03-18", "2026-03-19"}
			if !slices.Equal(gpsParts, want) || !slices.Equal(eventParts, want) {
				t.Fatalf("partitions before the purge: GPS %v, events %v; want %v", gpsParts, eventParts, want)
			}
		}
		res, err := purger.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// The cutoff is 2026-03-17 10:00: six days of the first device's
		// records are due, those of the 11th to the 16th, and the first four
		// of the moved device's, recorded before it moved.
		if res.Deleted["gps"] != 10 || res.Deleted["events"] != 10 {
			t.Errorf("deleted %v; want 10 samples and 10 events", res.Deleted)
		}
		cutoff := now.AddDate(0, 0, -3)
		f.view(func(tx *Tx) error {
			for dev, from := range map[*Device]time.Time{purged: cutoff, moved: start.AddDate(0, 0, 4)} {
				want := int(now.Sub(from).Hours()/24) + 1
				pts, err := tx.GPS(dev.IMEI, start.AddDate(0, 0, -1), now, 0)
				if err != nil || len(pts) != want || pts[0].Time.Before(from) {
					t.Errorf("%s keeps samples %+v, %v; want the %d from %s on", dev.IMEI, pts, err, want, from)
				}
				evs, n, err := tx.DeviceEvents(dev.IMEI, start.AddDate(0, 0, -1), now, Page{})
				if err != nil || n != want || evs[0].Time.Before(from) {
					t.Errorf("%s keeps %d events %+v, %v; want the %d from %s on", dev.IMEI, n, evs, err, want, from)
				}
			}
			if pts, _ := tx.GPS(kept.IMEI, start, now, 0); len(pts) != 1 {
				t.Errorf("the device of the organization that keeps everything has %d samples, want 1", len(pts))
			}
			if _, n, _ := tx.DeviceEvents(kept.IMEI, start, now, Page{}); n != 1 {
				t.Errorf("the device of the organization that keeps everything has %d events, want 1", n)
			}
			for day := range 10 {
				for dev, due := range map[*Device]int{purged: 6, moved: 4} {
					ref := MediaRef{IMEI: dev.IMEI, CameraID: 1, FileType: FileVideo, FileID: fmt.Sprint("clip", day)}
					_, err := tx.MediaFile(ref)
					if gone := day < due; gone != (err != nil) {
						t.Errorf("the clip of day %d of %s: %v; want gone %v", day, dev.IMEI, err, gone)
					}
				}
			}
			return nil
		})
		if !partitioned {
			return
		}
		// Of the days up to the 19th, those with a record of the
		// organization that keeps everything remain (the 12th, and from the
		// 15th, the first day the device recorded for it), and those from
		// the cutoff's day on.
		partitions()
		want := []string{"2026-03-12", "2026-03-15", "2026-03-16", "2026-03-17", "2026-03-18", "2026-03-19"}
		if !slices.Equal(gpsParts, want) || !slices.Equal(eventParts, want) {
			t.Errorf("partitions after the purge: GPS %v, events %v; want %v", gpsParts, eventParts, want)
		}
		again, err := purger.RunOnce(context.Background())
		if err != nil || again.Deleted["gps"] != 0 || again.Deleted["events"] != 0 {
			t.Errorf("second run %v, %v; want nothing left", again.Deleted, err)
		}
	})
}
