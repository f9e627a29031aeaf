package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// setBrightness changes a device's own settings, which bumps its config version.
func (e *env) setBrightness(imei string, v int) {
	e.t.Helper()
	err := e.db.Update(e.t.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		dc := store.DefaultDeviceConfig()
		dc.Brightness = v
		return tx.PutDeviceSettings(&store.DeviceSettings{IMEI: imei, Device: &dc}, "device.settings")
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func TestConfigPushedOnReconnectAfterOfflineChange(t *testing.T) {
	for _, tc := range []struct {
		name       string
		persistent bool
	}{{"clean session", false}, {"persistent session", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			id := e.addDevice(1)
			boot, token := e.bootstrap(id)
			boot.close()
			opts := connectOpts{clean: !tc.persistent, subscribe: true}
			if tc.persistent {
				opts.expiry = 3600
			}
			d, err := e.connect(id, token, opts)
			if err != nil {
				t.Fatal(err)
			}
			var cfg protocol.DesiredConfig
			d.decode(d.next(protocol.TopicConfig, 1), &cfg)
			if _, err := d.publish(protocol.TopicConfigAck, protocol.ConfigAck{Version: cfg.Version}); err != nil {
				t.Fatal(err)
			}
			d.close()

			e.setBrightness(id, 42) // while the device is offline

			// A persistent session keeps the subscription: the device does not subscribe again.
			opts.subscribe = !tc.persistent
			d2, err := e.connect(id, token, opts)
			if err != nil {
				t.Fatal(err)
			}
			if d2.ack.SessionPresent != tc.persistent {
				t.Fatalf("session present %v", d2.ack.SessionPresent)
			}
			var got protocol.DesiredConfig
			d2.decode(d2.next(protocol.TopicConfig, 1), &got)
			if got.Version != cfg.Version+1 || got.Device.Brightness != 42 {
				t.Fatalf("after reconnect got config version %d brightness %d, want %d and 42",
					got.Version, got.Device.Brightness, cfg.Version+1)
			}
		})
	}
}

func TestConfigAckStopsRedelivery(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	boot, token := e.bootstrap(id)
	if len(boot.received(protocol.TopicConfig)) == 0 {
		boot.next(protocol.TopicConfig, 1)
	}
	boot.close() // not acknowledged

	// Unacknowledged: delivered again on the next connection.
	d := e.mustConnect(id, token)
	var cfg protocol.DesiredConfig
	d.decode(d.next(protocol.TopicConfig, 1), &cfg)
	reported := json.RawMessage(`{"brightness":128,"firmware":"3.12.4"}`)
	if _, err := d.publish(protocol.TopicConfigAck, protocol.ConfigAck{Version: cfg.Version, Reported: reported}); err != nil {
		t.Fatal(err)
	}
	l := e.link(id)
	if l.AckedConfigVersion != cfg.Version || l.ConfigAckedAt.IsZero() || string(l.ReportedConfig) != string(reported) {
		t.Fatalf("ack not stored before the PUBACK: %+v", l)
	}
	d.close()

	// Acknowledged: the next connection gets no configuration. A command
	// round trip after subscribing proves anything pushed would have arrived.
	d2, err := e.connect(id, token, connectOpts{clean: true, subscribe: true,
		reply: func(cmd protocol.Command, _ *paho.Publish) *protocol.Reply {
			return &protocol.Reply{ID: cmd.ID, OK: true}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.Send(context.Background(), id, protocol.CmdReboot, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(d2.received(protocol.TopicConfig)); n != 0 {
		t.Fatalf("acknowledged configuration delivered %d times", n)
	}

	// A change while online goes out at once through PushConfig.
	e.setBrightness(id, 7)
	if err := e.srv.PushConfig(id); err != nil {
		t.Fatal(err)
	}
	var next protocol.DesiredConfig
	d2.decode(d2.next(protocol.TopicConfig, 1), &next)
	if next.Version != cfg.Version+1 || next.Device.Brightness != 7 {
		t.Fatalf("pushed %+v", next)
	}
}

// TestConfigAckOfAVersionNeverIssuedRefused: an acknowledgement above the
// version the cloud issued, or one whose reported configuration is not an
// object, is refused and changes nothing, so the configuration is still
// delivered; an acknowledgement stored above it before this check gives
// way to the device's next one.
func TestConfigAckOfAVersionNeverIssuedRefused(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	e.setBrightness(id, 42)
	boot, token := e.bootstrap(id)
	var cfg protocol.DesiredConfig
	boot.decode(boot.next(protocol.TopicConfig, 1), &cfg)
	boot.close()

	d := e.mustConnect(id, token)
	d.next(protocol.TopicConfig, 1)
	for _, tc := range []struct {
		name, payload, reason string
	}{
		{"a version never issued", fmt.Sprintf(`{"version":%d}`, cfg.Version+1),
			fmt.Sprintf("version %d was never issued: the latest configuration version is %d", cfg.Version+1, cfg.Version)},
		{"a far later version", `{"version":999999}`, "version 999999 was never issued"},
		{"reported not an object", fmt.Sprintf(`{"version":%d,"reported":[1]}`, cfg.Version), "reported must be a JSON object"},
		{"reported a string", fmt.Sprintf(`{"version":%d,"reported":"x"}`, cfg.Version), "reported must be a JSON object"},
	} {
		pr, err := d.publish(protocol.TopicConfigAck, []byte(tc.payload))
		if err == nil || pr == nil || pr.ReasonCode != 0x99 || pr.Properties == nil || !strings.Contains(pr.Properties.ReasonString, tc.reason) {
			t.Fatalf("%s: err %v response %+v, want 0x99 naming %q", tc.name, err, pr, tc.reason)
		}
		if l := e.link(id); !l.ConfigAckedAt.IsZero() || l.AckedConfigVersion != 0 || l.ReportedConfig != nil {
			t.Fatalf("%s: refused acknowledgement stored: %+v", tc.name, l)
		}
	}
	d.close()
	d = e.mustConnect(id, token)
	var again protocol.DesiredConfig
	d.decode(d.next(protocol.TopicConfig, 1), &again)
	if again.Version != cfg.Version {
		t.Fatalf("delivered version %d after refused acknowledgements, want %d", again.Version, cfg.Version)
	}
	d.close()

	// An acknowledgement of a version never issued, stored earlier,
	// acknowledges nothing: the configuration goes out, and the device's
	// acknowledgement of it replaces the stored one.
	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		dl, err := tx.DeviceLink(id)
		if err != nil {
			return err
		}
		dl.AckedConfigVersion, dl.ConfigAckedAt = 999999, e.clock.Now()
		return tx.PutDeviceLink(dl)
	})
	if err != nil {
		t.Fatal(err)
	}
	d = e.mustConnect(id, token)
	d.decode(d.next(protocol.TopicConfig, 1), &again)
	if pr, err := d.publish(protocol.TopicConfigAck, protocol.ConfigAck{Version: again.Version}); err != nil || pr.ReasonCode != 0 {
		t.Fatalf("acknowledge version %d: %v %+v", again.Version, err, pr)
	}
	if l := e.link(id); l.AckedConfigVersion != cfg.Version {
		t.Fatalf("acknowledged version %d, want %d", l.AckedConfigVersion, cfg.Version)
	}
}

func TestPushConfigToOfflineDeviceIsKeptForReconnect(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	if err := e.srv.PushConfig(id); err != nil {
		t.Fatalf("push to an offline device: %v", err)
	}
	if err := e.srv.PushOrganizationConfig(e.org.ID); err != nil {
		t.Fatal(err)
	}
	e.setBrightness(id, 99)
	d, _ := e.bootstrap(id)
	var cfg protocol.DesiredConfig
	d.decode(d.next(protocol.TopicConfig, 1), &cfg)
	if cfg.Device.Brightness != 99 || cfg.Version != 1 {
		t.Fatalf("config %+v", cfg)
	}
}

func TestDesiredFromSettings(t *testing.T) {
	visual, quiet := true, false
	e := &store.Effective{
		Version: 7,
		Device: store.DeviceConfig{AudioAlarms: true, Brightness: 200, PinCodeDi: true, DriverIdentification: true,
			DriverPrompt: true, AudioAlert: true, DriverPromptDurationSeconds: 30, StandbyMinutes: 720,
			HotspotEnabled: true, Adas: true, SpeedUnits: "mph", LEDEnabled: true},
		Events: store.EventConfig{VehicleType: store.VehicleVan, LaneWeavingTimes: 4, LaneWeavingDurationSeconds: 20,
			DrivingDurationHours: 9, MvaiMinSpeedKmh: 15, Events: map[string]store.EventSetting{
				"smoking":      {Enabled: false, VisualAlert: &visual},
				"cellPhoneUse": {Enabled: true, AudioAlert: &quiet, NumberOfBeeps: 2},
			}},
		Privacy:           store.PrivacyConfig{RecordingEnabled: true, GPSEnabled: true, Cameras: map[int]bool{2: false}},
		PrivacyMode:       "on",
		PrivacyModeSet:    true,
		PrivacyModeConfig: store.PrivacyModeConfig{GPSTracking: true},
		HotspotPassword:   "Abcdefghij0123456789",
	}
	d := DesiredFromSettings(e)
	smoking, phone := d.Events.Events["smoking"], d.Events.Events["cellPhoneUse"]
	switch {
	case d.Version != 7, d.Device.Brightness != 200, !d.Device.PinCodeDi, d.Device.DriverPromptDurationSeconds != 30,
		d.Device.StandbyMinutes != 720, !d.Device.HotspotOn, d.Device.HotspotPassword != "Abcdefghij0123456789",
		!d.Device.Adas, d.Device.SpeedUnits != "mph", !d.Device.LEDEnabled,
		d.Events.VehicleType != store.VehicleVan, d.Events.LaneWeavingTimes != 4, d.Events.DrivingDurationHours != 9,
		d.Events.MvaiMinSpeedKmh != 15,
		smoking.Enabled, !smoking.VisualAlert, !smoking.AudioAlert, // audio follows audioAlarms when not set
		!phone.Enabled, phone.AudioAlert, phone.NumberOfBeeps != 2,
		!d.Privacy.RecordingEnabled, d.Privacy.AllEventsEnabled, !d.Privacy.GPSEnabled, d.Privacy.Cameras[2],
		d.Privacy.Mode != "on", d.Privacy.ModeConfig == nil, !d.Privacy.ModeConfig.GPSTracking:
		t.Fatalf("mapped %+v", d)
	}
	e.PrivacyModeSet = false
	if DesiredFromSettings(e).Privacy.ModeConfig != nil {
		t.Fatal("privacy mode configuration sent before privacy mode was ever switched")
	}
}

func TestDesiredCarriesGeofences(t *testing.T) {
	e := &store.Effective{Geofences: []store.Geofence{{ID: 7, Name: "Depot", Lat: 32, Lon: 34.8, Radius: 500}}}
	got := DesiredFromSettings(e).Geofences
	if len(got) != 1 || got[0].ID != 7 || got[0].Name != "Depot" || got[0].Circle == nil ||
		got[0].Circle.Center != (protocol.LatLon{Lat: 32, Lon: 34.8}) || got[0].Circle.RadiusMeters != 500 {
		t.Fatalf("geofences %+v", got)
	}
}

func TestDesiredCarriesControl(t *testing.T) {
	on := true
	e := &store.Effective{Control: store.DeviceControl{Mode: store.ModeSemiOnline, OTGEnabled: &on, TailgatingCoolOffMinutes: 45,
		ADAS:        &store.ADASMeasurements{CameraHeight: 150, CameraOffset: 5, VehicleWidth: 190, Points: &store.ADASPoints{LowestUsableRow: 610}},
		PinCodes:    &store.PinCodes{Salt: "s", AdminPinHash: protocol.PinHash("s", "904512")},
		CameraNames: map[int]string{50: "Trailer"},
		Calibration: &store.CalibrationState{Type: store.CalibrationAuto, State: store.CalibrationPending}}}
	c := DesiredFromSettings(e).Control
	if c.Mode != protocol.ModeSemiOnline || !c.OTGEnabled || c.AutoCalibration || c.TailgatingCoolOffMinutes != 45 ||
		c.ADAS == nil || c.ADAS.Points.LowestUsableRow != 610 || c.CameraNames[50] != "Trailer" || !c.PinCodes.Matches(true, "904512") {
		t.Fatalf("control %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the cloud sends a control the protocol refuses: %v", err)
	}
	raw, _ := json.Marshal(c)
	if json.Valid(raw) && (contains(raw, "calibration\"") || contains(raw, "904512")) {
		t.Fatalf("control on the wire %s carries the calibration state or a PIN", raw)
	}
	if m := DesiredFromSettings(&store.Effective{}).Control.Mode; m != protocol.ModeNormal {
		t.Fatalf("mode %q without settings, want normal", m)
	}
}

func contains(raw []byte, s string) bool { return strings.Contains(string(raw), s) }
