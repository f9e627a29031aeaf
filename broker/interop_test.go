package broker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/store"
)

// TestSimulatorInterop runs the device simulator against the broker, over
// MQTT 5 and 3.1.1: the two sides of docs/device-protocol.md must agree.
func TestSimulatorInterop(t *testing.T) {
	for _, version := range []int{5, 4} {
		t.Run("mqtt"+map[int]string{5: "5", 4: "311"}[version], func(t *testing.T) {
			e := newEnv(t, nil)
			id := e.addDevice(7)
			sim, err := devicesim.New(devicesim.Options{IMEI: id, BrokerURL: "tcp://" + e.srv.Addr(),
				FactoryMasterKey: e.master, MQTTVersion: version, GPSInterval: 100 * time.Millisecond, EventRate: 20, Now: e.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- sim.Run(ctx) }()
			defer func() { cancel(); <-done }()

			waitFor(t, "token and connection", func() bool { return sim.Token() != "" && sim.Connected() })
			waitFor(t, "first configuration acknowledged and status reported", func() bool {
				l := e.link(id)
				return !l.ConfigAckedAt.IsZero() && l.Firmware != "" && l.Presence == store.PresenceOnline
			})

			waitFor(t, "events stored", func() bool { return len(e.messages(store.MessageEvent)) > 0 })
			if n := e.metric("fleetcam_mqtt_ingest_messages_total", map[string]string{"result": "invalid"}); n != 0 {
				t.Fatalf("broker refused %v simulator messages", n)
			}

			r, err := e.srv.Send(context.Background(), id, protocol.CmdRecordingRanges, nil)
			var rr protocol.RecordingRanges
			if err != nil || json.Unmarshal(r.Result, &rr) != nil || len(rr.Cameras) == 0 {
				t.Fatalf("recordingRanges: %+v %v", r, err)
			}

			e.setBrightness(id, 33)
			if err := e.srv.PushConfig(id); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "changed configuration acknowledged", func() bool { return e.link(id).AckedConfigVersion == 1 })
			if c := sim.AppliedConfig(); c == nil || c.Device.Brightness != 33 {
				t.Fatalf("applied %+v", c)
			}

			waitFor(t, "GPS stored", func() bool {
				var n int
				_ = e.db.View(t.Context(), func(tx *store.Tx) error {
					pts, err := tx.GPS(id, e.clock.Now().Add(-time.Hour), e.clock.Now().Add(time.Hour), 0)
					n = len(pts)
					return err
				})
				return n > 0
			})
			// The simulator sends no GPS in privacy mode without a modeConfig.
			e.enqueue(id, protocol.CmdPrivacyMode, protocol.PrivacyModeArgs{Mode: "on"})
			waitFor(t, "queued privacy mode applied", func() bool { return sim.PrivacyMode() == "on" })
		})
	}
}

// The simulator shows why the broker refused it: the code's name and, over
// MQTT 5, the broker's reason string.
func TestSimulatorShowsRefusalReason(t *testing.T) {
	for version, want := range map[int]string{
		5: "devicesim: broker refused: not authorized (0x87): imei is in no organization's inventory",
		4: "devicesim: broker refused: not authorized (0x05)",
	} {
		t.Run("mqtt"+map[int]string{5: "5", 4: "311"}[version], func(t *testing.T) {
			e := newEnv(t, nil)
			sim, err := devicesim.New(devicesim.Options{IMEI: imei(8), BrokerURL: "tcp://" + e.srv.Addr(),
				FactoryMasterKey: e.master, MQTTVersion: version, ReconnectDelay: time.Hour, Now: e.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- sim.Run(ctx) }()
			defer func() { cancel(); <-done }()
			waitFor(t, "the refusal", func() bool { return sim.LastError() != nil })
			if got := sim.LastError().Error(); got != want {
				t.Fatalf("last error %q, want %q", got, want)
			}
		})
	}
}
