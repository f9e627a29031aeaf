package postgres

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestDeviceTracks stores, replaces and forgets device tracks; a track
// without transitions reads back as it was put, without them.
func TestDeviceTracks(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[0]
	track := &store.DeviceTrack{OverLimit: true, Fences: map[int64][]store.FenceTransition{
		3: {{Time: trackNow.Add(123456789 * time.Nanosecond), Inside: true}},
		1 << 40: {{Time: trackNow, Inside: false}, {Time: trackNow.Add(time.Second), Inside: true},
			{Time: trackNow.Add(2 * time.Second), Inside: false}},
	}}
	write(t, e, func(r *tx) error {
		if _, err := r.DeviceTracks().Get(imei); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the track of a device without one: %v; want ErrNotFound", err)
		}
		if err := r.DeviceTracks().Delete(imei); err != nil { // forgetting none
			return err
		}
		if err := r.DeviceTracks().Put(imei, track); err != nil {
			return err
		}
		if err := r.DeviceTracks().Put(f.imeis[1], &store.DeviceTrack{Fences: map[int64][]store.FenceTransition{}}); err != nil {
			return err
		}
		return r.DeviceTracks().Put(f.imeis[2], &store.DeviceTrack{OverLimit: true})
	})
	read(t, e, func(r *tx) error {
		for imei, want := range map[string]*store.DeviceTrack{imei: track, f.imeis[1]: {}, f.imeis[2]: {OverLimit: true}} {
			got, err := r.DeviceTracks().Get(imei)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("track of %s: %+v, %v; want %+v", imei, got, err, want)
			}
		}
		return nil
	})
	write(t, e, func(r *tx) error {
		if err := r.DeviceTracks().Put(imei, &store.DeviceTrack{}); err != nil {
			return err
		}
		if got, err := r.DeviceTracks().Get(imei); err != nil || !reflect.DeepEqual(got, &store.DeviceTrack{}) {
			t.Errorf("the replaced track: %+v, %v; want an empty one", got, err)
		}
		if err := r.DeviceTracks().Delete(imei); err != nil {
			return err
		}
		if _, err := r.DeviceTracks().Get(imei); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a forgotten track: %v; want ErrNotFound", err)
		}
		return nil
	})
}

// TestHotspots stores, replaces and forgets hotspot states; the factory
// default password is NULL.
func TestHotspots(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[0]
	on := &store.HotspotState{IMEI: imei, On: true, Password: "Secret12pass", PasswordChangedAt: trackNow.Add(time.Microsecond)}
	reset := &store.HotspotState{IMEI: imei, On: true, PasswordChangedAt: trackNow.Add(time.Hour)}
	write(t, e, func(r *tx) error {
		if _, err := r.Hotspots().Get(imei); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the hotspot of a device without one: %v; want ErrNotFound", err)
		}
		if err := r.Hotspots().Put(on); err != nil {
			return err
		}
		if got, err := r.Hotspots().Get(imei); err != nil || !reflect.DeepEqual(got, on) {
			t.Errorf("hotspot: %+v, %v; want %+v", got, err, on)
		}
		if err := r.Hotspots().Put(reset); err != nil {
			return err
		}
		if got, err := r.Hotspots().Get(imei); err != nil || !reflect.DeepEqual(got, reset) {
			t.Errorf("the replaced hotspot: %+v, %v; want %+v", got, err, reset)
		}
		off := &store.HotspotState{IMEI: f.imeis[1]}
		if err := r.Hotspots().Put(off); err != nil {
			return err
		}
		if got, err := r.Hotspots().Get(f.imeis[1]); err != nil || !reflect.DeepEqual(got, off) {
			t.Errorf("a hotspot never switched on: %+v, %v; want %+v", got, err, off)
		}
		for range 2 { // forgetting none is no error
			if err := r.Hotspots().Delete(imei); err != nil {
				return err
			}
		}
		if _, err := r.Hotspots().Get(imei); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a forgotten hotspot: %v; want ErrNotFound", err)
		}
		return nil
	})
	var password *string
	if err := e.pool.QueryRow(context.Background(), `SELECT password FROM device_hotspots WHERE imei = $1`,
		f.imeis[1]).Scan(&password); err != nil || password != nil {
		t.Errorf("the default password is stored as %v, %v; want NULL", password, err)
	}
}

// fullDeviceSettings are device settings with every part.
func fullDeviceSettings(imei string) *store.DeviceSettings {
	yes, five := true, 5
	return &store.DeviceSettings{IMEI: imei, Version: 7,
		Device: &store.DeviceConfig{AudioAlarms: true, Brightness: 200, DriverPosition: "right", StandbyMinutes: 30},
		Events: &store.EventConfig{VehicleType: "Van", SpeedLimitKmh: 90, Events: map[string]store.EventSetting{
			"harshBraking": {Enabled: true, DataType: "video", VisualAlert: &yes, MinimumSpeedKmh: &five, Weight: 3}}},
		Privacy: &store.PrivacyConfig{RecordingEnabled: true, GPSEnabled: true, Cameras: map[int]bool{2: false},
			CameraRecording: map[int]bool{1: true}},
		PrivacyMode:       store.PrivacyModeOn,
		PrivacyModeConfig: &store.PrivacyModeConfig{GPSTracking: true, OtherEvents: true},
		Geofences: []store.Geofence{{ID: 1, Name: "Depot", Lat: 48.1, Lon: 11.5, Radius: 250},
			{ID: 2, Name: "Yard «Süd»", Lat: -33.9, Lon: 151.2, Radius: 1000}},
		UpdatedAt: trackNow.Add(987654 * time.Microsecond),
	}
}

// TestDeviceSettings stores, replaces and forgets device settings, every
// part of them and none.
func TestDeviceSettings(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[0]
	full := fullDeviceSettings(imei)
	bare := &store.DeviceSettings{IMEI: imei, Version: 8}
	write(t, e, func(r *tx) error {
		if _, err := r.DeviceSettings().Get(imei); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the settings of a device without any: %v; want ErrNotFound", err)
		}
		if err := r.DeviceSettings().Put(full); err != nil {
			return err
		}
		if got, err := r.DeviceSettings().Get(imei); err != nil || !reflect.DeepEqual(got, full) {
			t.Errorf("settings: %+v, %v; want %+v", got, err, full)
		}
		if err := r.DeviceSettings().Put(bare); err != nil {
			return err
		}
		if got, err := r.DeviceSettings().Get(imei); err != nil || !reflect.DeepEqual(got, bare) {
			t.Errorf("the replaced settings: %+v, %v; want %+v", got, err, bare)
		}
		empty := &store.DeviceSettings{IMEI: f.imeis[1], Geofences: []store.Geofence{}, PrivacyMode: store.PrivacyModeOff}
		if err := r.DeviceSettings().Put(empty); err != nil {
			return err
		}
		want := &store.DeviceSettings{IMEI: f.imeis[1], PrivacyMode: store.PrivacyModeOff}
		if got, err := r.DeviceSettings().Get(f.imeis[1]); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("settings without geofences: %+v, %v; want %+v", got, err, want)
		}
		for range 2 { // forgetting none is no error
			if err := r.DeviceSettings().Delete(imei); err != nil {
				return err
			}
		}
		if _, err := r.DeviceSettings().Get(imei); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("forgotten settings: %v; want ErrNotFound", err)
		}
		return nil
	})
}

// TestOrganizationSettings stores and replaces organizations' settings.
func TestOrganizationSettings(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	ds := fullDeviceSettings("")
	full := &store.OrgSettings{OrganizationID: f.orgA, Device: ds.Device, Events: ds.Events, Privacy: ds.Privacy,
		PrivacyModeConfig: ds.PrivacyModeConfig, ForbidLegacyFirmware: true, UpdatedAt: ds.UpdatedAt}
	bare := &store.OrgSettings{OrganizationID: f.orgA, UpdatedAt: trackNow}
	write(t, e, func(r *tx) error {
		if _, err := r.OrganizationSettings().Get(f.orgA); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the settings of an organization without any: %v; want ErrNotFound", err)
		}
		for _, s := range []*store.OrgSettings{full, bare} {
			if err := r.OrganizationSettings().Put(s); err != nil {
				return err
			}
			if got, err := r.OrganizationSettings().Get(f.orgA); err != nil || !reflect.DeepEqual(got, s) {
				t.Errorf("settings: %+v, %v; want %+v", got, err, s)
			}
		}
		if _, err := r.OrganizationSettings().Get(f.orgB); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the settings of the other organization: %v; want ErrNotFound", err)
		}
		return nil
	})
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
