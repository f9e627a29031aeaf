package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// Home is a 500 m geofence; inside and outside are points in and out of it.
var (
	home    = Geofence{ID: 7, Name: "Depot", Lat: 32.0, Lon: 34.8, Radius: 500}
	inside  = GPSPoint{Lat: 32.0, Lon: 34.8}
	outside = GPSPoint{Lat: 32.02, Lon: 34.8} // about 2.2 km north
)

func at(f GPSPoint, t time.Time, speed float64) GPSPoint { f.Time, f.Speed = t, speed; return f }

func (f *eventFixture) track(dev *Device, fixes ...GPSPoint) []*Event {
	f.t.Helper()
	var out []*Event
	f.update(func(tx *Tx) error {
		added, err := tx.AddGPS(dev, fixes)
		if err != nil {
			return err
		}
		out, err = tx.TrackGPS(dev, added)
		return err
	})
	return out
}

func TestValidateGeofences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, want string
		fs         []Geofence
	}{
		{"duplicate id", "[1].id 7 is used twice", []Geofence{home, home}},
		{"zero radius", "[0].radius", []Geofence{{ID: 1, Name: "x", Radius: 0}}},
		{"no name", "[0].name", []Geofence{{ID: 1, Radius: 5}}},
		{"bad lat", "[0].lat", []Geofence{{ID: 1, Name: "x", Lat: 91, Radius: 5}}},
		{"id", "[0].id", []Geofence{{Name: "x", Radius: 5}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateGeofences(tc.fs)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	many := make([]Geofence, MaxGeofences+1)
	for i := range many {
		many[i] = Geofence{ID: int64(i + 1), Name: "g", Radius: 10}
	}
	if err := ValidateGeofences(many); err == nil {
		t.Fatal("100 geofences accepted")
	}
}

func TestGeofencesBumpConfigVersion(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		var before, after int64
		f.update(func(tx *Tx) error {
			e, _ := tx.EffectiveSettings(f.dev.IMEI)
			before = e.Version
			if err := tx.SetGeofences(f.dev.IMEI, []Geofence{home}); err != nil {
				return err
			}
			e, err := tx.EffectiveSettings(f.dev.IMEI)
			after = e.Version
			if len(e.Geofences) != 1 || e.Geofences[0] != home {
				t.Fatalf("effective geofences %+v", e.Geofences)
			}
			return err
		})
		if after != before+1 {
			t.Fatalf("version %d → %d", before, after)
		}
	})
}

func TestGeofenceEnteredOnlyOnCrossingIn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		entered := func(id string, t time.Time) EventInput {
			return EventInput{DeviceEventID: id, Type: EventGeoFence, Time: t, GeoFenceID: home.ID, GeoFencePath: GeofenceEntered}
		}
		t0 := eventT0
		tests := []struct {
			name    string
			fixes   []GPSPoint
			event   EventInput
			dropped string
		}{
			{"a trip that starts inside creates no entered",
				[]GPSPoint{at(inside, t0, 0), at(inside, t0.Add(time.Minute), 30)}, entered("a", t0.Add(time.Minute)), DropEnteredInside},
			{"no GPS at all creates no entered", nil, entered("b", t0), DropEnteredInside},
			{"crossing in creates entered",
				[]GPSPoint{at(outside, t0, 40), at(inside, t0.Add(time.Minute), 40)}, entered("c", t0.Add(time.Minute)), ""},
			{"entered reported before the GPS shows the crossing",
				[]GPSPoint{at(outside, t0, 40), at(outside, t0.Add(time.Minute), 40)}, entered("d", t0.Add(90*time.Second)), ""},
			{"GPS crossing arrived before the event, then more fixes inside",
				[]GPSPoint{at(outside, t0, 40), at(inside, t0.Add(time.Minute), 40), at(inside, t0.Add(5*time.Minute), 10)},
				entered("e", t0.Add(70*time.Second)), ""},
			{"a crossing hours before does not excuse a trip starting inside",
				[]GPSPoint{at(outside, t0, 40), at(inside, t0.Add(time.Minute), 40), at(inside, t0.Add(8*time.Hour), 0)},
				entered("f", t0.Add(8*time.Hour)), DropEnteredInside},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f := newEventFixture(t)
				f.update(func(tx *Tx) error { return tx.SetGeofences(f.dev.IMEI, []Geofence{home}) })
				f.track(f.dev, tc.fixes...)
				res := f.ingest(f.dev, tc.event)
				if res.Dropped != tc.dropped {
					t.Fatalf("dropped %q, want %q", res.Dropped, tc.dropped)
				}
				if tc.dropped == "" && (res.Event.GeoFenceID != home.ID || res.Event.GeoFenceName != "Depot") {
					t.Fatalf("event %+v", res.Event)
				}
			})
		}
		t.Run("exited is kept and the webhook carries the geofence", func(t *testing.T) {
			f := newEventFixture(t)
			f.update(func(tx *Tx) error { return tx.SetGeofences(f.dev.IMEI, []Geofence{home}) })
			res := f.ingest(f.dev, EventInput{DeviceEventID: "x", Type: EventGeoFence, Time: t0, GeoFenceID: home.ID, GeoFencePath: GeofenceExited})
			if !res.Created {
				t.Fatalf("%+v", res)
			}
			msgs := f.messages(MessageEvent)
			if len(msgs) != 1 || msgs[0].Event.GeoFence == nil ||
				*msgs[0].Event.GeoFence != (GeoFenceFact{ID: 7, Name: "Depot", Path: GeofenceExited}) {
				t.Fatalf("messages %v", msgs)
			}
		})
		t.Run("an unknown geofence is dropped", func(t *testing.T) {
			f := newEventFixture(t)
			res := f.ingest(f.dev, EventInput{Type: EventGeoFence, Time: t0, GeoFenceID: 99, GeoFencePath: GeofenceExited})
			if res.Dropped != DropUnknownGeofence {
				t.Fatalf("%+v", res)
			}
		})
	})
}

func TestSpeedLimitOncePerExcursion(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.settings(f.dev, func(s *DeviceSettings) { s.Events.SpeedLimitKmh = 90 })
		speeds := []float64{50, 95, 110, 100, 85, 91, 92, 60}
		var fixes []GPSPoint
		for i, s := range speeds {
			fixes = append(fixes, at(outside, eventT0.Add(time.Duration(i)*10*time.Second), s))
		}
		created := f.track(f.dev, fixes[:3]...)
		created = append(created, f.track(f.dev, fixes[3:]...)...)
		if len(created) != 2 {
			t.Fatalf("%d speedLimit events, want 2 (one per excursion)", len(created))
		}
		if e := created[0]; e.Type != EventSpeedLimit || e.Speed != 95 || !e.Time.Equal(fixes[1].Time) || e.Lat != outside.Lat {
			t.Fatalf("first %+v", e)
		}
		if e := created[1]; e.Speed != 91 {
			t.Fatalf("second %+v", e)
		}
		if n := len(f.messages(MessageEvent)); n != 2 {
			t.Fatalf("%d event messages", n)
		}
		// A disabled speedLimit event is not created.
		f.settings(f.dev, func(s *DeviceSettings) { s.Events.Events = map[string]EventSetting{EventSpeedLimit: {Enabled: false}} })
		if got := f.track(f.dev, at(outside, eventT0.Add(time.Hour), 50), at(outside, eventT0.Add(time.Hour+time.Second), 120)); len(got) != 0 {
			t.Fatalf("disabled speedLimit created %d", len(got))
		}
	})
}

// A fix older than one already stored, even from an earlier batch, arrived
// out of order: it starts no excursion.
func TestSpeedLimitIgnoresOutOfOrderFix(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.settings(f.dev, func(s *DeviceSettings) { s.Events.SpeedLimitKmh = 90 })
		f.track(f.dev, at(outside, eventT0.Add(time.Minute), 50))
		if got := f.track(f.dev, at(outside, eventT0, 130)); len(got) != 0 {
			t.Fatalf("out-of-order fix created %d events", len(got))
		}
		if got := f.track(f.dev, at(outside, eventT0.Add(2*time.Minute), 130)); len(got) != 1 {
			t.Fatalf("in-order fix above the limit created %d events, want 1", len(got))
		}
	})
}

func TestVirtualEventTakesLastPosition(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.track(f.dev, at(outside, eventT0, 33))
		e := f.ingest(f.dev, EventInput{Type: EventVirtual, Time: eventT0.Add(time.Second), PositionFromGPS: true}).Event
		if e.Lat != outside.Lat || e.Speed != 33 {
			t.Fatalf("position %+v", e)
		}
		// Stored GPS at the event's time wins over the last known position.
		f.update(func(tx *Tx) error {
			_, err := tx.AddGPS(f.dev, []GPSPoint{at(inside, eventT0.Add(time.Hour), 12), at(outside, eventT0.Add(2*time.Hour), 70)})
			return err
		})
		f.track(f.dev, at(outside, eventT0.Add(2*time.Hour), 70))
		e = f.ingest(f.dev, EventInput{Type: EventVirtual, Time: eventT0.Add(time.Hour + time.Minute), PositionFromGPS: true}).Event
		if e.Lat != inside.Lat || e.Speed != 12 {
			t.Fatalf("position at the event's time %+v", e)
		}
	})
}

// A speed limit set for the organization applies to devices without
// event settings of their own, as in the effective settings.
func TestSpeedLimitFromOrganizationDefaults(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.update(func(tx *Tx) error {
			os, err := tx.OrgSettings(f.org.ID)
			if err != nil {
				return err
			}
			ev := DefaultEventConfig()
			ev.SpeedLimitKmh = 80
			os.Events = &ev
			return tx.PutOrgSettings(os, "test.settings")
		})
		f.update(func(tx *Tx) error {
			eff, err := tx.EffectiveSettings(f.dev.IMEI)
			if err == nil && eff.Events.SpeedLimitKmh != 80 {
				t.Fatalf("effective speed limit %d", eff.Events.SpeedLimitKmh)
			}
			return err
		})
		created := f.track(f.dev, at(outside, eventT0, 70), at(outside, eventT0.Add(time.Second), 85))
		if len(created) != 1 || created[0].Speed != 85 {
			t.Fatalf("created %d speedLimit events at the organization's 80 km/h", len(created))
		}
		// The device's own limit wins.
		f.settings(f.dev, func(s *DeviceSettings) { s.Events.SpeedLimitKmh = 120 })
		if got := f.track(f.dev, at(outside, eventT0.Add(time.Hour), 70), at(outside, eventT0.Add(time.Hour+time.Second), 100)); len(got) != 0 {
			t.Fatalf("device limit 120 km/h: %d events at 100 km/h", len(got))
		}
	})
}
