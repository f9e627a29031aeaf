package bolt_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"slices"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	. "github.com/fleetcam/fleetcam/store"
)

// TestRecordsFromBeforeOwnershipNumbers: a store written before ownership
// numbers has devices and records without one. Such a device keeps the
// records of its organization recorded since it was added, not those of
// the organization it was in before (a move made before the upgrade); once
// it moves again, none of them is the new owner's.
func TestRecordsFromBeforeOwnershipNumbers(t *testing.T) {
	f := newFixture(t)
	var first *Organization
	f.update(func(tx *Tx) error {
		var err error
		first, err = tx.CreateOrganization(f.partner.ID, "First fleet", []byte("salt"))
		return err
	})
	t0 := f.clock.Now()
	imei := f.imei(1)
	// legacy writes what the older version wrote for the device in org,
	// added at added: the device record without an ownership number, an
	// event, a trip and a GPS sample.
	legacy := func(org int64, added time.Time, evID string, at time.Time) *Device {
		t.Helper()
		dev := &Device{IMEI: imei, OrganizationID: org, PartnerID: f.partner.ID, Status: DeviceActivated, CreatedAt: added}
		raw, err := json.Marshal(dev)
		if err != nil {
			t.Fatal(err)
		}
		f.put("devices", []byte(imei), raw)
		f.update(func(tx *Tx) error {
			if _, err := tx.IngestEvent(dev, EventInput{DeviceEventID: evID, Type: EventAccident, Time: at}); err != nil {
				return err
			}
			if err := tx.ApplyTripEvent(dev, EventInput{Type: "accOn", Time: at}); err != nil { // starts a trip
				return err
			}
			_, err := tx.AddGPS(dev, []GPSPoint{{Time: at, Lat: 1, Lon: 2}})
			return err
		})
		return dev
	}
	legacy(first.ID, t0, "first", t0)
	f.clock.Advance(time.Hour)
	// Moved before the upgrade, to the fixture's organization.
	dev := legacy(f.org.ID, f.clock.Now(), "second", f.clock.Now().Add(time.Minute))

	var firstID int64
	f.view(func(tx *Tx) error {
		all, n, err := tx.DeviceEvents(imei, t0.Add(-time.Hour), t0.Add(2*time.Hour), Page{})
		if err != nil || n != 2 {
			t.Fatalf("stored events %d %v, want 2", n, err)
		}
		firstID = all[0].ID
		if dev.HoldsEvent(&all[0]) || !dev.HoldsEvent(&all[1]) {
			t.Error("HoldsEvent gives the device the first organization's event or refuses its own")
		}
		evs, n, err := tx.QueryDeviceEvents(dev, EventQuery{Start: t0.Add(-time.Hour), End: t0.Add(2 * time.Hour)}, Page{})
		if err != nil || n != 1 || evs[0].DeviceEventID != "second" {
			t.Errorf("the device's own events %+v (%d) %v, want only the second", evs, n, err)
		}
		pts, err := tx.DeviceGPS(dev, t0.Add(-time.Hour), t0.Add(2*time.Hour), 0)
		if err != nil || len(pts) != 1 || !pts[0].Time.After(dev.CreatedAt) {
			t.Errorf("the device's own GPS %+v %v, want the sample since it was added", pts, err)
		}
		trips, n, err := tx.Trips(TripFilter{IMEI: imei}, Page{})
		if err != nil || n != 1 || !trips[0].Start.After(dev.CreatedAt) {
			t.Errorf("the device's own trips %+v %v", trips, err)
		}
		return nil
	})

	// Moved after the upgrade: nothing from before is the new owner's.
	f.update(func(tx *Tx) error { return tx.RemoveDevice(imei) })
	moved := f.addDevice(1, first, f.partner.ID)
	if moved.Ownership == 0 || moved.PreviousOwnerUntil.IsZero() {
		t.Fatalf("re-added device %+v has no ownership or previous owner", moved)
	}
	f.view(func(tx *Tx) error {
		if _, n, _ := tx.QueryDeviceEvents(moved, EventQuery{Start: t0.Add(-time.Hour), End: t0.Add(2 * time.Hour)}, Page{}); n != 0 {
			t.Errorf("the re-added device has %d events from before", n)
		}
		if e, err := tx.Event(firstID); err != nil || moved.HoldsEvent(e) {
			t.Errorf("the organization the device returns to holds its event from before: %v", err)
		}
		if pts, _ := tx.DeviceGPS(moved, t0.Add(-time.Hour), t0.Add(2*time.Hour), 0); len(pts) != 0 {
			t.Errorf("the re-added device has GPS from before: %+v", pts)
		}
		if _, n, _ := tx.Trips(TripFilter{IMEI: imei}, Page{}); n != 0 {
			t.Errorf("the re-added device has %d trips from before", n)
		}
		return nil
	})
}

// TestPurgeFollowsTheOwnerOfTheRecords: the retention purge deletes a
// moved device's GPS, trips, driver sessions and media after the purge
// days of the organization they were recorded for, not of the one the
// device is in now, nor keeps them forever when it is in none. The trips
// and sessions of earlier owners are read from the file: no query of the
// store shows them.
func TestPurgeFollowsTheOwnerOfTheRecords(t *testing.T) {
	cases := []struct {
		name string
		// firstShort: the first organization purges after 3 days and the
		// second keeps everything; otherwise the other way round.
		firstShort bool
		// stays: the device is not added anywhere after its removal.
		stays bool
	}{
		{"from an organization that purges to one that keeps", true, false},
		{"from an organization that keeps to one that purges", false, false},
		{"removed and not added again", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			start := f.clock.Now()
			var keep *Organization
			f.update(func(tx *Tx) error {
				var err error
				if keep, err = tx.CreateOrganization(f.partner.ID, "Keeps everything", nil); err != nil {
					return err
				}
				o, _ := tx.Organization(f.org.ID)
				o.Retention.PurgeDays = 3
				if err := tx.UpdateOrganization(o); err != nil {
					return err
				}
				keep.Retention.PurgeDays = 0 // keep forever
				return tx.UpdateOrganization(keep)
			})
			first, second := f.org, keep
			if !tc.firstShort {
				first, second = keep, f.org
			}
			drv := &Driver{OrganizationID: first.ID, ThirdPartyID: "d", FirstName: "Ann", LastName: "Driver"}
			f.update(func(tx *Tx) error { return tx.CreateDriver(drv) })
			// record gives dev a trip with a driver session, a GPS sample and an event with a video.
			record := func(dev *Device, id string) {
				t.Helper()
				at := f.clock.Now()
				f.update(func(tx *Tx) error {
					if dev.OrganizationID == drv.OrganizationID {
						if _, err := tx.ApplyDriverEvent(dev, EventInput{Type: "driverCheckIn", Time: at, PinCode: drv.Code}); err != nil {
							return err
						}
					}
					// Ignition on and off start and end a trip.
					for i, typ := range []string{"accOn", "accOff"} {
						if err := tx.ApplyTripEvent(dev, EventInput{Type: typ, Time: at.Add(time.Duration(i) * time.Minute)}); err != nil {
							return err
						}
					}
					if _, err := tx.AddGPS(dev, []GPSPoint{{Time: at, Lat: 48, Lon: 11}}); err != nil {
						return err
					}
					_, err := tx.IngestEvent(dev, EventInput{DeviceEventID: id, Type: EventAccident, Time: at,
						Files: []EventFile{{CameraID: 1, FileID: id, FileType: FileVideo}}})
					return err
				})
			}
			dev := f.addDevice(1, first, f.partner.ID)
			record(dev, "before")
			f.clock.Set(start.AddDate(0, 0, 1))
			f.update(func(tx *Tx) error { return tx.RemoveDevice(dev.IMEI) })
			if !tc.stays {
				dev = f.addDevice(1, second, f.partner.ID)
				record(dev, "after")
			}

			f.clock.Set(start.AddDate(0, 0, 60))
			if _, err := NewPurger(f.db, PurgerOptions{Batch: 2}).RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			// What is left of each day: GPS samples, trips, driver sessions, media with bytes.
			left := map[time.Time][]string{}
			f.view(func(tx *Tx) error {
				pts, err := tx.GPS(dev.IMEI, start.Add(-time.Hour), start.AddDate(0, 0, 2), 0)
				for _, p := range pts {
					left[p.Time] = append(left[p.Time], "gps")
				}
				for _, id := range []string{"before", "after"} {
					m, err := tx.MediaFile(MediaRef{IMEI: dev.IMEI, CameraID: 1, FileType: FileVideo, FileID: id})
					if err == nil && m.State != MediaPurged {
						left[m.RecordedAt] = append(left[m.RecordedAt], "media")
					}
				}
				return err
			})
			// Trips and driver sessions are keyed imei, 0, start (unix ms).
			err := f.bolt.View(func(btx *bbolt.Tx) error {
				for _, b := range []string{"trips", "driver_sessions"} {
					prefix := key(dev.IMEI, "")
					c := btx.Bucket([]byte(b)).Cursor()
					for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
						at := time.UnixMilli(int64(binary.BigEndian.Uint64(k[len(prefix):]))).UTC()
						left[at] = append(left[at], b)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			all := []string{"gps", "trips", "driver_sessions", "media"}
			// Only a driver of the first organization checked in.
			noDriver := []string{"gps", "trips", "media"}
			wantBefore, wantAfter := []string(nil), noDriver
			if !tc.firstShort {
				wantBefore, wantAfter = all, nil
			}
			if tc.stays {
				wantAfter = nil
			}
			sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
			if got := sorted(left[start]); !slices.Equal(got, sorted(wantBefore)) {
				t.Errorf("left of the first organization's day: %v, want %v", got, wantBefore)
			}
			if got := sorted(left[start.AddDate(0, 0, 1)]); !slices.Equal(got, sorted(wantAfter)) {
				t.Errorf("left of the second organization's day: %v, want %v", got, wantAfter)
			}
		})
	}
}

// The ownership log is one entry per ownership of an IMEI, keyed IMEI, 0,
// ownership number (8 bytes), with the organization (8 bytes) and, once
// the ownership ended, its end in unix ms (8 bytes). Ownership numbers go
// on from the devices bucket's sequence, and an entry an older version
// wrote gives the next owner its start.
func TestOwnershipLogLayout(t *testing.T) {
	f := newFixture(t)
	imei := f.imei(1)
	leftAt := time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)
	f.put("device_ownerships", key(imei, "", int64(0)), append(be8(f.org.ID), be8(leftAt.UnixMilli())...))
	f.setSequence("devices", 41)

	dev := f.addDevice(1, f.org, f.partner.ID)
	if dev.Ownership != 42 || !dev.PreviousOwnerUntil.Equal(leftAt) {
		t.Errorf("added device has ownership %d after %s, want 42 after %s", dev.Ownership, dev.PreviousOwnerUntil, leftAt)
	}
	if v := f.get("device_ownerships", key(imei, "", int64(42))); !bytes.Equal(v, be8(f.org.ID)) {
		t.Errorf("log entry of the new ownership %x, want the organization alone", v)
	}

	f.clock.Advance(time.Hour)
	removed := f.clock.Now()
	f.update(func(tx *Tx) error { return tx.RemoveDevice(imei) })
	if v := f.get("device_ownerships", key(imei, "", int64(42))); !bytes.Equal(v, append(be8(f.org.ID), be8(removed.UnixMilli())...)) {
		t.Errorf("log entry of the ended ownership %x, want the organization and the end", v)
	}
	again := f.addDevice(1, f.org, f.partner.ID)
	if again.Ownership != 43 || !again.PreviousOwnerUntil.Equal(removed) {
		t.Errorf("re-added device has ownership %d after %s, want 43 after %s", again.Ownership, again.PreviousOwnerUntil, removed)
	}
}
