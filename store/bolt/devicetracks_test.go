package bolt_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
)

// track stores fixes of the fixture's device and learns from them, as the
// broker does with a GPS message.
func (f *fixture) track(fixes ...store.GPSPoint) {
	f.t.Helper()
	f.update(func(tx *store.Tx) error {
		added, err := tx.AddGPS(f.dev, fixes)
		if err != nil {
			return err
		}
		_, err = tx.TrackGPS(f.dev, added)
		return err
	})
}

// Fixes that change nothing the cloud tracks (no geofence, under the speed
// limit) do not write the device's track.
func TestTrackWrittenOnlyOnChange(t *testing.T) {
	f := newDeviceFixture(t)
	f.update(func(tx *store.Tx) error {
		ds, err := tx.DeviceSettings(fixtureIMEI)
		if err != nil {
			return err
		}
		ev := store.DefaultEventConfig()
		ev.SpeedLimitKmh = 90
		ds.Events = &ev
		return tx.PutDeviceSettings(ds, "test.settings")
	})
	t0 := time.Date(2026, 3, 11, 9, 0, 0, 0, time.UTC)
	fix := func(s int, speed float64) store.GPSPoint {
		return store.GPSPoint{Time: t0.Add(time.Duration(s) * time.Second), Lat: 52.37, Lon: 4.89, Speed: speed}
	}
	stored := func() string { return string(f.get(bolt.BucketDeviceTracks, []byte(fixtureIMEI))) }
	for i := range 3 {
		f.track(fix(i, 50))
	}
	if v := stored(); v != "" {
		t.Fatalf("track written for fixes under the limit: %s", v)
	}
	f.track(fix(10, 100))
	if v := stored(); !strings.Contains(v, `"overLimit":true`) {
		t.Fatalf("track after an excursion started: %s", v)
	}
	f.track(fix(11, 50))
	if v := stored(); strings.Contains(v, "overLimit") {
		t.Fatalf("track after the excursion ended: %s", v)
	}
}

// A track an older version wrote is read as it was.
func TestDeviceTrackWrittenBefore(t *testing.T) {
	f := newDeviceFixture(t)
	f.put(bolt.BucketDeviceTracks, []byte(fixtureIMEI),
		[]byte(`{"fences":{"7":[{"t":"2026-03-11T08:00:00Z"},{"t":"2026-03-11T08:05:00Z","in":true}]},"overLimit":true}`))
	f.records(func(rec store.Records) error {
		tr, err := rec.DeviceTracks().Get(fixtureIMEI)
		if err != nil {
			return err
		}
		h := tr.Fences[7]
		if !tr.OverLimit || len(tr.Fences) != 1 || len(h) != 2 || h[0].Inside || !h[1].Inside ||
			!h[1].Time.Equal(time.Date(2026, 3, 11, 8, 5, 0, 0, time.UTC)) {
			t.Errorf("track %+v", tr)
		}
		return nil
	})
}
