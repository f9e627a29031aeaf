package devicesim

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

func TestControlCommands(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 31)
	d := startDevice(t, testOptions(cloud, imei))
	cloud.msg(t, imei, protocol.TopicStatus, nil)
	cmd := func(name string, args any) protocol.Reply {
		r, _ := cloud.command(t, imei, true, name, args)
		return r
	}

	t.Run("wakeup", func(t *testing.T) {
		statuses := cloud.count(imei, protocol.TopicStatus)
		if r := cmd(protocol.CmdWakeup, nil); !r.OK {
			t.Fatalf("wakeup reply %+v", r)
		}
		if d.Wakeups() != 1 {
			t.Fatalf("wakeups %d", d.Wakeups())
		}
		waitFor(t, cloud, func() []int { return []int{len(cloud.msgs)} }, func(int) bool {
			return cloud.count(imei, protocol.TopicStatus) > statuses // the device reports its state again
		})
	})

	t.Run("adasCalibrate", func(t *testing.T) {
		if r := cmd(protocol.CmdAdasCalibrationState, nil); r.OK || !strings.Contains(r.Error, "no ADAS calibration") {
			t.Fatalf("state before any calibration %+v", r)
		}
		got := result[protocol.AdasCalibrationResult](t, cmd(protocol.CmdAdasCalibrate, protocol.AdasCalibrateArgs{Type: protocol.CalibrationAuto}))
		if got.State != protocol.CalibrationCompleted || d.ADASCalibration() != protocol.CalibrationCompleted {
			t.Fatalf("calibration %+v", got)
		}
		if s := result[protocol.AdasCalibrationResult](t, cmd(protocol.CmdAdasCalibrationState, nil)); s.State != protocol.CalibrationCompleted {
			t.Fatalf("state %+v", s)
		}
		if r := cmd(protocol.CmdAdasCalibrate, protocol.AdasCalibrateArgs{Type: "guess"}); r.OK || !strings.Contains(r.Error, "type") {
			t.Fatalf("bad type reply %+v", r)
		}
		// Without the road-facing camera recording, calibration fails.
		result[protocol.PrivacyModeArgs](t, cmd(protocol.CmdPrivacyMode, protocol.PrivacyModeArgs{Mode: "on"}))
		got = result[protocol.AdasCalibrationResult](t, cmd(protocol.CmdAdasCalibrate, protocol.AdasCalibrateArgs{Type: protocol.CalibrationRecalibration}))
		if got.State != protocol.CalibrationFailed {
			t.Fatalf("calibration in privacy mode %+v", got)
		}
		result[protocol.PrivacyModeArgs](t, cmd(protocol.CmdPrivacyMode, protocol.PrivacyModeArgs{Mode: "off"}))
	})

	t.Run("calibrateAccelerometer", func(t *testing.T) {
		if r := cmd(protocol.CmdCalibrateAccelerometer, nil); !r.OK || d.AccelerometerCalibrations() != 1 {
			t.Fatalf("reply %+v, calibrations %d", r, d.AccelerometerCalibrations())
		}
	})
}

func TestControlConfigApplied(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 32)
	d := startDevice(t, testOptions(cloud, imei))
	cloud.msg(t, imei, protocol.TopicStatus, nil)
	if c := d.Control(); c.Mode != protocol.ModeNormal || c.OTGEnabled {
		t.Fatalf("control before any configuration %+v", c)
	}
	ack := func(version int64) {
		t.Helper()
		cloud.msg(t, imei, protocol.TopicConfigAck, func(m cloudMsg) bool {
			var a protocol.ConfigAck
			return json.Unmarshal(m.Payload, &a) == nil && a.Version == version
		})
	}
	pins := &protocol.PinCodeHashes{Salt: "q1w2e3", AdminPinHash: protocol.PinHash("q1w2e3", "904512"),
		DriverPinHash: protocol.PinHash("q1w2e3", "118830")}
	cfg := protocol.DesiredConfig{Version: 4, Privacy: protocol.PrivacyConfig{RecordingEnabled: true, AllEventsEnabled: true},
		Control: protocol.ControlConfig{Mode: protocol.ModeDemo, OTGEnabled: true, TailgatingCoolOffMinutes: 30,
			AutoCalibration: true, PinCodes: pins, CameraNames: map[int]string{50: "Trailer"},
			ADAS: &protocol.ADASMeasurements{CameraHeight: 150, CameraOffset: 0, VehicleWidth: 180}}}
	cloud.send(t, imei, protocol.TopicConfig, cfg)
	ack(4)
	c := d.Control()
	if c.Mode != protocol.ModeDemo || !c.OTGEnabled || c.TailgatingCoolOffMinutes != 30 || !c.AutoCalibration ||
		c.CameraNames[50] != "Trailer" || c.ADAS == nil || c.ADAS.CameraHeight != 150 {
		t.Fatalf("applied control %+v", c)
	}
	if !d.CheckPin(true, "904512") || !d.CheckPin(false, "118830") || d.CheckPin(false, "904512") || d.CheckPin(true, "0000") {
		t.Fatal("typed PINs are not verified against the hashes")
	}
	// A configuration the protocol refuses is neither applied nor acknowledged.
	bad := cfg
	bad.Version, bad.Control.Mode, bad.Control.TailgatingCoolOffMinutes = 5, protocol.ModeSemiOnline, 5
	cloud.send(t, imei, protocol.TopicConfig, bad)
	good := cfg
	good.Version, good.Control.Mode = 6, protocol.ModeSemiOnline
	cloud.send(t, imei, protocol.TopicConfig, good)
	ack(6)
	cloud.mu.Lock()
	msgs := append([]cloudMsg(nil), cloud.msgs...)
	cloud.mu.Unlock()
	for _, m := range msgs {
		var a protocol.ConfigAck
		if m.IMEI == imei && m.Suffix == protocol.TopicConfigAck && json.Unmarshal(m.Payload, &a) == nil && a.Version == 5 {
			t.Fatal("an invalid configuration was acknowledged")
		}
	}
	if d.Control().Mode != protocol.ModeSemiOnline {
		t.Fatalf("mode %q after version 6", d.Control().Mode)
	}
}
