package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestHotspotDefaultPasswordIsNull: the factory default password is
// stored as NULL (the engine suite, store/enginetest, tests the states
// themselves).
func TestHotspotDefaultPasswordIsNull(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	write(t, e, func(r *tx) error { return r.Hotspots().Put(&store.HotspotState{IMEI: f.imeis[1], On: true}) })
	var password *string
	if err := e.pool.QueryRow(context.Background(), `SELECT password FROM device_hotspots WHERE imei = $1`,
		f.imeis[1]).Scan(&password); err != nil || password != nil {
		t.Errorf("the default password is stored as %v, %v; want NULL", password, err)
	}
}

// TestTrackRecordsOfRemovedDevice removes a device: its track, hotspot
// state and settings go with it, its GPS samples and trips stay.
func TestTrackRecordsOfRemovedDevice(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[0]
	write(t, e, func(r *tx) error {
		if err := r.DeviceTracks().Put(imei, &store.DeviceTrack{OverLimit: true}); err != nil {
			return err
		}
		if err := r.Hotspots().Put(&store.HotspotState{IMEI: imei, On: true}); err != nil {
			return err
		}
		if err := r.DeviceSettings().Put(fullDeviceSettings(imei)); err != nil {
			return err
		}
		if _, err := insertOne(r, imei, 1, gpsAt(trackNow, 0)); err != nil {
			return err
		}
		trip := &store.Trip{IMEI: imei, OrganizationID: f.orgA, Start: trackNow}
		if err := r.Trips().Insert(trip); err != nil {
			return err
		}
		if err := r.Trips().SetOpen(trip); err != nil {
			return err
		}
		return r.Devices().Delete(imei)
	})
	read(t, e, func(r *tx) error {
		if _, err := r.DeviceTracks().Get(imei); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the track of a removed device: %v; want ErrNotFound", err)
		}
		if _, err := r.Hotspots().Get(imei); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the hotspot of a removed device: %v; want ErrNotFound", err)
		}
		if _, err := r.DeviceSettings().Get(imei); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the settings of a removed device: %v; want ErrNotFound", err)
		}
		if p, err := r.GPSSamples().Range(imei, time.Time{}, trackNow, store.GPSFilter{}, 0); err != nil || len(p) != 1 {
			t.Errorf("the samples of a removed device: %v, %v; want its one", p, err)
		}
		if _, err := r.Trips().At(imei, trackNow); err != nil {
			t.Errorf("the trip of a removed device: %v", err)
		}
		return nil
	})
	// The store then forgets what it drops with the device, none of which
	// is left: no error.
	write(t, e, func(r *tx) error {
		for _, drop := range []func(string) error{r.DeviceTracks().Delete, r.Hotspots().Delete,
			r.DeviceSettings().Delete, r.Trips().ClearOpen} {
			if err := drop(imei); err != nil {
				return err
			}
		}
		return nil
	})
}
