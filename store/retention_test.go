package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
)

func TestPurge(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		start := f.clock.Now()
		var keep *Organization
		f.update(func(tx *Tx) error {
			var err error
			keep, err = tx.CreateOrganization(f.partner.ID, "Keeps everything", nil)
			return err
		})
		purged := f.addDevice(1, f.org, f.partner.ID)
		kept := f.addDevice(2, keep, f.partner.ID)
		drv := f.addDriver(f.org, "d")

		// Ten days of history on both devices: a closed alarm, a trip and a driver session a day.
		for day := range 10 {
			f.clock.Set(start.AddDate(0, 0, day))
			at := f.clock.Now()
			for _, dev := range []*Device{purged, kept} {
				f.update(func(tx *Tx) error {
					a, _, err := tx.RaiseAlarm(dev, AlarmPowerDisconnected, f.clock.Now(), "")
					if err != nil {
						return err
					}
					if _, err := tx.ActOnAlarm(a.ID, AlarmActionClose); err != nil {
						return err
					}
					for _, ev := range []EventInput{{DeviceEventID: "on", Type: "accOn", Time: at}, {DeviceEventID: "off", Type: "accOff", Time: at.Add(time.Minute)}} {
						if err := tx.ApplyTripEvent(dev, ev); err != nil {
							return err
						}
					}
					if _, err := tx.AddGPS(dev, []GPSPoint{{Time: f.clock.Now(), Lat: 48, Lon: 11}}); err != nil {
						return err
					}
					if _, err := tx.IngestEvent(dev, EventInput{DeviceEventID: fmt.Sprint("e", day), Type: "deceleration", Time: f.clock.Now()}); err != nil {
						return err
					}
					_, err = tx.ApplyDriverEvent(dev, EventInput{Type: "driverCheckIn", Time: at, PinCode: drv.Code})
					return err
				})
			}
		}
		// The last session stays open: it is never purged.
		f.update(func(tx *Tx) error {
			o, _ := tx.Organization(f.org.ID)
			o.Retention.PurgeDays = 3
			if err := tx.UpdateOrganization(o); err != nil {
				return err
			}
			k, _ := tx.Organization(keep.ID)
			k.Retention.PurgeDays = 0 // keep forever
			return tx.UpdateOrganization(k)
		})
		now := start.AddDate(0, 0, 60)
		f.clock.Set(now)
		reg := prometheus.NewRegistry()
		r := NewPurger(f.db, PurgerOptions{Batch: 2, Registerer: reg})
		res, err := r.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Transactions < 10 {
			t.Errorf("%d transactions, want many small ones with batch 2", res.Transactions)
		}
		f.view(func(tx *Tx) error {
			trips, n, _ := tx.Trips(TripFilter{IMEI: purged.IMEI}, Page{})
			if n != 0 {
				t.Errorf("purged device keeps %d trips %+v", n, trips)
			}
			if _, n, _ := tx.Trips(TripFilter{IMEI: kept.IMEI}, Page{}); n != 10 {
				t.Errorf("device of an organization without purge days has %d trips, want 10", n)
			}
			if s, _ := tx.CheckedInDriver(purged.IMEI); s == nil {
				t.Error("the open driver session was purged")
			}
			segs, _ := tx.DriverSegments(purged, start, now)
			if len(segs) != 1 {
				t.Errorf("purged device keeps %d driver sessions, want only the open one", len(segs))
			}
			as, _, _ := tx.Alarms(AlarmFilter{}, Sort{}, Page{})
			for _, a := range as {
				if a.IMEI == purged.IMEI || a.CreatedAt.Before(now.AddDate(0, 0, -AlarmRetentionDays)) {
					t.Errorf("alarm %d of %s created %s survived", a.ID, a.IMEI, a.CreatedAt)
				}
			}
			return nil
		})
		// Both organizations' alarms are older than 45 days: all closed ones go.
		f.view(func(tx *Tx) error {
			if pts, _ := tx.GPS(purged.IMEI, start, now, 0); len(pts) != 0 {
				t.Errorf("purged device keeps %d GPS points", len(pts))
			}
			if pts, _ := tx.GPS(kept.IMEI, start, now, 0); len(pts) != 10 {
				t.Errorf("kept device has %d GPS points, want 10", len(pts))
			}
			if _, n, _ := tx.DeviceEvents(purged.IMEI, start, now, Page{}); n != 0 {
				t.Errorf("purged device keeps %d events", n)
			}
			if _, n, _ := tx.DeviceEvents(kept.IMEI, start, now, Page{}); n != 10 {
				t.Errorf("kept device has %d events, want 10", n)
			}
			return nil
		})
		if res.Deleted["alarms"] != 20 || res.Deleted["trips"] != 10 || res.Deleted["driverSessions"] != 9 || res.Deleted["gps"] != 10 || res.Deleted["events"] != 10 {
			t.Errorf("deleted %v", res.Deleted)
		}
		entries, _, _ := f.db.AuditLog(t.Context(), AuditFilter{OrganizationID: f.org.ID}, Page{})
		for _, e := range entries {
			if e.Time.Before(now.AddDate(0, 0, -3)) {
				t.Fatalf("audit entry %d of %s survived the purge", e.ID, e.Time)
			}
		}
		if kept, _, _ := f.db.AuditLog(t.Context(), AuditFilter{OrganizationID: keep.ID}, Page{}); len(kept) == 0 {
			t.Fatal("the other organization's audit entries were purged")
		}
		if got := gathered(t, reg, "fleetcam_retention_deleted_total", "trips"); got != 10 {
			t.Errorf("fleetcam_retention_deleted_total{kind=trips} %v", got)
		}
		if got := gathered(t, reg, "fleetcam_retention_deleted_total", "driver_sessions"); got != 9 {
			t.Errorf("fleetcam_retention_deleted_total{kind=driver_sessions} %v, want 9 (label values are snake_case)", got)
		}
		if got := gathered(t, reg, "fleetcam_retention_runs_total", "ok"); got != 1 {
			t.Errorf("fleetcam_retention_runs_total{result=ok} %v", got)
		}
		// The error series exists before the first failure, so that failure is
		// an increase an alert sees.
		if got := gathered(t, reg, "fleetcam_retention_runs_total", "error"); got != 0 {
			t.Errorf("fleetcam_retention_runs_total{result=error} %v, want 0", got)
		}
		again, err := r.RunOnce(context.Background())
		if err != nil || again.Deleted["trips"] != 0 || again.Deleted["auditLogs"] != 0 {
			t.Fatalf("second run %+v %v, want nothing left", again, err)
		}
	})
}

func TestDeviceRetentionReachesDevices(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		f.update(func(tx *Tx) error {
			o, _ := tx.Organization(f.org.ID)
			o.Retention.DeviceRetentionMinutes = 60 * 24 * 14
			return tx.UpdateOrganization(o)
		})
		f.view(func(tx *Tx) error {
			e, err := tx.EffectiveSettings(dev.IMEI)
			if err != nil || e.RetentionMinutes != 60*24*14 || e.Version != 1 {
				t.Errorf("effective retention %d at version %d (%v), want 20160 at version 1", e.RetentionMinutes, e.Version, err)
			}
			return nil
		})
		f.update(func(tx *Tx) error {
			o, _ := tx.Organization(f.org.ID)
			o.Name = "Renamed"
			return tx.UpdateOrganization(o)
		})
		f.view(func(tx *Tx) error {
			if s, _ := tx.DeviceSettings(dev.IMEI); s.Version != 1 {
				t.Errorf("an unrelated organization change bumped the version to %d", s.Version)
			}
			return nil
		})
	})
}

// gathered returns the value of the counter name whose one label has value label.
func gathered(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}
