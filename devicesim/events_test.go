package devicesim

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// offlineDevice is a device that never connects; what it reports stays in its outbox.
func offlineDevice(t *testing.T, o Options) *Device {
	t.Helper()
	if o.IMEI == "" {
		o.IMEI = "490154203237518"
	}
	o.FactoryMasterKey = testMaster
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// queuedEvents decodes the events in the outbox.
func queuedEvents(t *testing.T, d *Device) []protocol.Event {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []protocol.Event
	for _, p := range d.outbox {
		if p.Suffix != protocol.TopicEvent {
			continue
		}
		var ev protocol.Event
		if err := json.Unmarshal(p.Payload, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func applyConfig(d *Device, c protocol.DesiredConfig) {
	d.mu.Lock()
	d.applyLocked(&c)
	d.mu.Unlock()
	d.applyRecording()
}

func TestEveryEventKind(t *testing.T) {
	d := offlineDevice(t, Options{})
	ctx := context.Background()
	ids := map[string]bool{}
	for _, typ := range EventTypes() {
		ev, err := d.Emit(ctx, EventSpec{Type: typ})
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if ids[ev.ID] {
			t.Fatalf("%s reuses id %s", typ, ev.ID)
		}
		ids[ev.ID] = true
		if ev.Type != typ || ev.Time == 0 || ev.Lat == 0 || ev.Severity < 1 || ev.Severity > 3 {
			t.Fatalf("%s: %+v", typ, ev)
		}
		switch EventMedia(typ) {
		case "video":
			if len(ev.Files) != 2 || ev.Files[0].CameraID != 1 || ev.Files[1].CameraID != 2 || ev.Files[0].FileType != "video" || len(ev.Samples) != 5 {
				t.Fatalf("%s files %+v samples %d", typ, ev.Files, len(ev.Samples))
			}
		case "snapshot":
			if len(ev.Files) != 1 || ev.Files[0].CameraID != 2 || ev.Files[0].FileType != "snapshot" {
				t.Fatalf("%s files %+v", typ, ev.Files)
			}
		default:
			if len(ev.Files) != 0 {
				t.Fatalf("text-only %s has files %+v", typ, ev.Files)
			}
		}
	}
	for _, typ := range []string{"accOn", "accOff", "cellPhoneUseBeep", "smokingBeep"} {
		if EventMedia(typ) != "" {
			t.Fatalf("%s must be text only", typ)
		}
	}
	if len(queuedEvents(t, d)) != len(EventTypes()) {
		t.Fatalf("queued %d events, want %d", len(queuedEvents(t, d)), len(EventTypes()))
	}
	if _, err := d.Emit(ctx, EventSpec{Type: "de_acceleration"}); !errors.Is(err, ErrUnknownEvent) {
		t.Fatalf("webhook syntax accepted: %v", err)
	}
	// Ids stay unique after a factory reset.
	d.FactoryReset()
	ev, _ := d.Emit(ctx, EventSpec{Type: "button"})
	if ids[ev.ID] {
		t.Fatalf("id %s reused after a reset", ev.ID)
	}
}

func TestEventRulesFollowConfig(t *testing.T) {
	open := protocol.PrivacyConfig{RecordingEnabled: true, AllEventsEnabled: true, LiveStreamEnabled: true, MvaiEnabled: true}
	events := protocol.EventConfig{MvaiMinSpeedKmh: 5}
	for _, tc := range []struct {
		name       string
		cfg        func(*protocol.DesiredConfig)
		ignore     bool
		typ        string
		suppressed bool
		cams       []int
	}{
		{"all open", nil, false, "deceleration", false, []int{1, 2}},
		{"event disabled", func(c *protocol.DesiredConfig) {
			c.Events.Events = map[string]protocol.EventSetting{"deceleration": {Enabled: false}}
		}, false, "deceleration", true, nil},
		{"other event enabled", func(c *protocol.DesiredConfig) {
			c.Events.Events = map[string]protocol.EventSetting{"deceleration": {Enabled: false}}
		}, false, "acceleration", false, []int{1, 2}},
		{"all events off", func(c *protocol.DesiredConfig) { c.Privacy.AllEventsEnabled = false }, false, "tailgating", true, nil},
		{"all events off keeps accOn", func(c *protocol.DesiredConfig) { c.Privacy.AllEventsEnabled = false }, false, "accOn", false, nil},
		{"all events off stops MV+AI even when enabled", func(c *protocol.DesiredConfig) { c.Privacy.AllEventsEnabled = false }, false, "cellPhoneUse", true, nil},
		{"mvai off", func(c *protocol.DesiredConfig) { c.Privacy.MvaiEnabled = false }, false, "smoking", true, nil},
		{"mvai minimum below 5", func(c *protocol.DesiredConfig) { c.Events.MvaiMinSpeedKmh = 4 }, false, "smoking", true, nil},
		{"slower than the mvai minimum", func(c *protocol.DesiredConfig) { c.Events.MvaiMinSpeedKmh = 180 }, false, "smoking", true, nil},
		{"mvai minimum only for mvai", func(c *protocol.DesiredConfig) { c.Events.MvaiMinSpeedKmh = 180 }, false, "deceleration", false, []int{1, 2}},
		{"cabin camera private", func(c *protocol.DesiredConfig) { c.Privacy.Cameras = map[int]bool{2: false} }, false, "deceleration", false, []int{1}},
		{"recording off", func(c *protocol.DesiredConfig) { c.Privacy.RecordingEnabled = false }, false, "deceleration", false, nil},
		{"privacy mode on", func(c *protocol.DesiredConfig) { c.Privacy.Mode = "on" }, false, "deceleration", false, nil},
		{"ignore config", func(c *protocol.DesiredConfig) { c.Privacy.AllEventsEnabled = false }, true, "tailgating", false, []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := offlineDevice(t, Options{IgnoreEventConfig: tc.ignore, Route: Highway()})
			c := protocol.DesiredConfig{Version: 1, Privacy: open, Events: events}
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			applyConfig(d, c)
			ev, err := d.Emit(context.Background(), EventSpec{Type: tc.typ})
			if tc.suppressed {
				if !errors.Is(err, ErrSuppressed) || len(queuedEvents(t, d)) != 0 {
					t.Fatalf("err %v, queued %d; want suppressed", err, len(queuedEvents(t, d)))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var cams []int
			for _, f := range ev.Files {
				cams = append(cams, f.CameraID)
			}
			if len(cams) != len(tc.cams) || (len(cams) > 0 && cams[0] != tc.cams[0]) {
				t.Fatalf("files from cameras %v, want %v", cams, tc.cams)
			}
		})
	}
}

func TestGeofenceCrossings(t *testing.T) {
	d := offlineDevice(t, Options{})
	ctx := context.Background()
	center := protocol.LatLon{Lat: 37.7765, Lon: -122.4165}
	applyConfig(d, protocol.DesiredConfig{Version: 1,
		Privacy: protocol.PrivacyConfig{RecordingEnabled: true, AllEventsEnabled: true},
		Geofences: []protocol.Geofence{
			{ID: 7, Name: "depot", Circle: &protocol.Circle{Center: center, RadiusMeters: 200}},
			{ID: 8, Name: "block", Points: []protocol.LatLon{{Lat: 37.80, Lon: -122.45}, {Lat: 37.80, Lon: -122.40}, {Lat: 37.82, Lon: -122.40}, {Lat: 37.82, Lon: -122.45}}},
		}})
	fix := func(lat, lon float64) protocol.GPSSample { return protocol.GPSSample{Lat: lat, Lon: lon} }
	at := time.Now()
	d.watchFences(ctx, at, fix(center.Lat, center.Lon)) // the trip starts inside the depot
	d.watchFences(ctx, at, fix(center.Lat+0.0001, center.Lon))
	d.watchFences(ctx, at, fix(37.81, -122.42)) // leaves the depot, enters the block
	d.watchFences(ctx, at, fix(37.83, -122.42)) // leaves the block
	d.watchFences(ctx, at, fix(center.Lat, center.Lon))
	var got []string
	for _, ev := range queuedEvents(t, d) {
		if ev.Type != "geoFence" {
			t.Fatalf("unexpected %s", ev.Type)
		}
		got = append(got, ev.GeoFencePath+" "+map[int64]string{7: "depot", 8: "block"}[ev.GeoFenceID])
	}
	want := []string{"exited depot", "entered block", "exited block", "entered depot"}
	if len(got) != len(want) {
		t.Fatalf("crossings %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("crossings %v, want %v", got, want)
		}
	}
}

func TestCheckIn(t *testing.T) {
	ctx := context.Background()
	d := offlineDevice(t, Options{})
	applyConfig(d, protocol.DesiredConfig{Version: 1,
		Privacy: protocol.PrivacyConfig{RecordingEnabled: true, AllEventsEnabled: true},
		Drivers: []protocol.DriverCredential{{DriverID: 41, PinCode: "11111"}, {DriverID: 42, QRCode: "qr-42"}}})

	ev, err := d.CheckIn(ctx, "11111", "")
	if err != nil || ev.Type != "driverCheckIn" || ev.DriverID != 41 || ev.PinCode != "11111" || len(ev.Files) != 1 {
		t.Fatalf("pin check-in %+v %v", ev, err)
	}
	ev, err = d.CheckIn(ctx, "", "qr-42")
	if id, _ := d.Driver(); err != nil || ev.QRCode != "qr-42" || id != 42 {
		t.Fatalf("qr check-in %+v %v, driver %d", ev, err, id)
	}
	for i := 0; i < 3; i++ {
		if _, err := d.CheckIn(ctx, "99999", ""); !errors.Is(err, ErrWrongPIN) {
			t.Fatalf("wrong pin %d: %v", i, err)
		}
	}
	wrong := 0
	for _, ev := range queuedEvents(t, d) {
		if ev.Type == "wrongPinCode" {
			wrong++
		}
	}
	if wrong != 1 {
		t.Fatalf("%d wrongPinCode events after three wrong pins, want 1", wrong)
	}
	for _, bad := range [][2]string{{"1234", ""}, {"", ""}, {"12345", "qr"}, {"12a45", ""}} {
		if _, err := d.CheckIn(ctx, bad[0], bad[1]); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("check-in %q: %v", bad, err)
		}
	}
}

func TestRandomEventsReachTheCloud(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 20)
	o := testOptions(cloud, imei)
	o.EventRate = 200
	startDevice(t, o)
	seen := map[string]bool{}
	for len(seen) < 5 {
		cloud.msg(t, imei, protocol.TopicEvent, func(m cloudMsg) bool {
			var ev protocol.Event
			if json.Unmarshal(m.Payload, &ev) != nil || seen[ev.ID] {
				return false
			}
			if _, ok := kinds[ev.Type]; !ok {
				t.Fatalf("random event of unknown type %q", ev.Type)
			}
			seen[ev.ID] = true
			return true
		})
	}
}
