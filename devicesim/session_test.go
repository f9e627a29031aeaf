package devicesim

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// waitUntil checks cond until it holds, for up to ten seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	storetest.Eventually(t, what, 2*time.Minute, 5*time.Millisecond, cond)
}

func TestBootstrapTokenReconnect(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		clean   bool
	}{
		{"mqtt5 persistent", 5, false},
		{"mqtt5 clean", 5, true},
		{"mqtt311 persistent", 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := newFakeCloud(t)
			imei := mustIMEI(t, 1)
			dir := t.TempDir()
			o := testOptions(cloud, imei)
			o.StateDir, o.MQTTVersion, o.CleanSession = dir, tc.version, tc.clean
			d := startDevice(t, o)

			first := cloud.connect(t, imei, 1)
			if first.Kind != "bootstrap" || !first.Accepted {
				t.Fatalf("first connection %+v, want an accepted bootstrap", first)
			}
			wantVersion := byte(tc.version)
			if first.Version != wantVersion || first.Clean != tc.clean {
				t.Fatalf("first connection protocol %d clean %t, want %d %t", first.Version, first.Clean, wantVersion, tc.clean)
			}
			// The status follows the grant.
			st := cloud.msg(t, imei, protocol.TopicStatus, nil)
			var status protocol.Status
			if err := json.Unmarshal(st.Payload, &status); err != nil {
				t.Fatal(err)
			}
			if status.ProductType != "AI-12" || status.Firmware != DefaultFirmware || status.SDCard == nil || status.SDCard.UUID == "" ||
				status.RecordingTest != "passed" || len(status.Cameras) != 2 || status.Hotspot == nil || status.DataUsage == nil {
				t.Fatalf("status %+v lacks members", status)
			}
			tok := cloud.token(imei)
			if tok == "" || d.Token() != tok {
				t.Fatalf("device token %q, cloud issued %q", d.Token(), tok)
			}
			fi, err := os.Stat(StatePath(dir, imei))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Fatalf("state file mode %v, want 0600", fi.Mode().Perm())
			}
			raw, _ := os.ReadFile(StatePath(dir, imei))
			if !strings.Contains(string(raw), tok) {
				t.Fatalf("state file %s does not hold the token", raw)
			}

			d.Reboot()
			second := cloud.connect(t, imei, 2)
			if second.Kind != "token" || second.Password != tok || !second.Accepted {
				t.Fatalf("after reboot %+v, want the token %q accepted", second, tok)
			}
			waitUntil(t, "reconnect", d.Connected)

			// A new process reads the token from the state dir.
			d2, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if d2.Token() != tok {
				t.Fatalf("reloaded token %q, want %q", d2.Token(), tok)
			}
		})
	}
}

func TestFactoryResetBootstrapsAgain(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 2)
	o := testOptions(cloud, imei)
	o.StateDir = t.TempDir()
	d := startDevice(t, o)
	cloud.msg(t, imei, protocol.TopicStatus, nil)
	old := d.Token()

	r, _ := cloud.command(t, imei, true, protocol.CmdFactoryReset, nil)
	if !r.OK {
		t.Fatalf("factoryReset reply %+v", r)
	}
	again := cloud.connect(t, imei, 2)
	if again.Kind != "bootstrap" || !again.Accepted {
		t.Fatalf("after reset %+v, want a bootstrap", again)
	}
	waitUntil(t, "new token", func() bool { return d.Token() != "" && d.Token() != old })
	if d.Token() != cloud.token(imei) {
		t.Fatalf("device token %q, cloud %q", d.Token(), cloud.token(imei))
	}
	if on, pw := d.Hotspot(); on || pw != DefaultHotspotPassword {
		t.Fatalf("hotspot after reset %t %q, want off with the default password", on, pw)
	}
	raw, _ := os.ReadFile(StatePath(o.StateDir, imei))
	if strings.Contains(string(raw), old) {
		t.Fatal("state file still holds the old token")
	}
}

func TestLegacyFirmwareConnectsWithoutToken(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 3)
	o := testOptions(cloud, imei)
	o.Firmware, o.FactoryMasterKey = "3.9.2", nil
	d := startDevice(t, o)
	rec := cloud.connect(t, imei, 1)
	if rec.Kind != "legacy" || rec.Password != "legacy:3.9.2" || !rec.Accepted {
		t.Fatalf("legacy connection %+v", rec)
	}
	cloud.msg(t, imei, protocol.TopicStatus, nil)
	if d.Token() != "" || !d.Legacy() {
		t.Fatalf("legacy device token %q legacy %t", d.Token(), d.Legacy())
	}
}

func TestRefusedTokenIsRetriedAndCounted(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 4)
	dir := t.TempDir()
	if err := saveState(dir, persisted{IMEI: imei, Token: "revoked"}); err != nil {
		t.Fatal(err)
	}
	o := testOptions(cloud, imei)
	o.StateDir = dir
	d := startDevice(t, o)
	for n := 1; n <= 2; n++ {
		if r := cloud.connect(t, imei, n); r.Accepted || r.Password != "revoked" {
			t.Fatalf("attempt %d: %+v, want the revoked token refused", n, r)
		}
	}
	waitUntil(t, "refusals counted", func() bool { return d.stats.Snapshot().Refused >= 2 })
	if !errors.Is(d.LastError(), ErrRefused) || d.Connected() {
		t.Fatalf("last error %v, connected %t", d.LastError(), d.Connected())
	}
}

func TestConfigAppliedAndAcked(t *testing.T) {
	for _, version := range []int{5, 4} {
		t.Run("mqtt"+map[int]string{5: "5", 4: "311"}[version], func(t *testing.T) {
			cloud := newFakeCloud(t)
			imei := mustIMEI(t, 5)
			o := testOptions(cloud, imei)
			o.MQTTVersion = version
			d := startDevice(t, o)
			cloud.msg(t, imei, protocol.TopicStatus, nil)

			want := protocol.DesiredConfig{
				Version: 7,
				Device:  protocol.DeviceConfig{Brightness: 200, PinCodeDi: true, HotspotOn: true, HotspotPassword: "Abcdefghij0123456789", LiveVideo: true},
				Events:  protocol.EventConfig{LaneWeavingTimes: 3, LaneWeavingDurationSeconds: 30, MvaiMinSpeedKmh: 10},
				Privacy: protocol.PrivacyConfig{RecordingEnabled: true, AllEventsEnabled: true, LiveStreamEnabled: true, Mode: "off"},
			}
			cloud.send(t, imei, protocol.TopicConfig, want)
			m := cloud.msg(t, imei, protocol.TopicConfigAck, nil)
			var ack protocol.ConfigAck
			if err := json.Unmarshal(m.Payload, &ack); err != nil {
				t.Fatal(err)
			}
			var reported protocol.DesiredConfig
			if err := json.Unmarshal(ack.Reported, &reported); err != nil {
				t.Fatal(err)
			}
			if ack.Version != 7 || reported.Version != 7 || reported.Device.Brightness != 200 || !reported.Device.HotspotOn {
				t.Fatalf("ack %d reported %+v", ack.Version, reported)
			}
			got := d.AppliedConfig()
			if got == nil || got.Version != 7 || got.Events.MvaiMinSpeedKmh != 10 {
				t.Fatalf("applied %+v", got)
			}
			if on, pw := d.Hotspot(); !on || pw != "Abcdefghij0123456789" {
				t.Fatalf("hotspot %t %q", on, pw)
			}
			// An older version is acknowledged but not applied.
			older := want
			older.Version, older.Device.Brightness = 6, 10
			cloud.send(t, imei, protocol.TopicConfig, older)
			cloud.msg(t, imei, protocol.TopicConfigAck, func(m cloudMsg) bool {
				var a protocol.ConfigAck
				return json.Unmarshal(m.Payload, &a) == nil && a.Version == 6
			})
			if got := d.AppliedConfig(); got.Version != 7 || got.Device.Brightness != 200 {
				t.Fatalf("older config applied: %+v", got)
			}
		})
	}
}

func TestConfigPushedOnConnectIsAcked(t *testing.T) {
	for _, version := range []int{5, 4} {
		t.Run(map[int]string{5: "mqtt5", 4: "mqtt311"}[version], func(t *testing.T) {
			cloud := newFakeCloud(t)
			imei := mustIMEI(t, 12)
			cloud.mu.Lock()
			cloud.push = map[string]protocol.DesiredConfig{imei: {Version: 3,
				Privacy: protocol.PrivacyConfig{RecordingEnabled: true, AllEventsEnabled: true}}}
			cloud.mu.Unlock()
			o := testOptions(cloud, imei)
			o.MQTTVersion = version
			d := startDevice(t, o)
			for n := 1; n <= 2; n++ {
				cloud.msg(t, imei, protocol.TopicConfigAck, func(m cloudMsg) bool {
					var a protocol.ConfigAck
					return json.Unmarshal(m.Payload, &a) == nil && a.Version == 3 && cloud.count(imei, protocol.TopicConfigAck) >= n
				})
				if n == 1 {
					d.Reboot() // pushed again on the reconnect, acknowledged again
				}
			}
			if c := d.AppliedConfig(); c == nil || c.Version != 3 {
				t.Fatalf("applied %+v", c)
			}
		})
	}
}

func TestPersistentSessionGetsWhatWasSentWhileOffline(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 13)
	d := startDevice(t, testOptions(cloud, imei))
	cloud.msg(t, imei, protocol.TopicStatus, nil)
	d.GoOffline(time.Hour)
	waitUntil(t, "offline", func() bool { return !d.Connected() })
	// The broker keeps QoS 1 messages for the persistent session.
	cloud.send(t, imei, protocol.TopicConfig, protocol.DesiredConfig{Version: 9})
	d.ComeBack()
	cloud.msg(t, imei, protocol.TopicConfigAck, func(m cloudMsg) bool {
		var a protocol.ConfigAck
		return json.Unmarshal(m.Payload, &a) == nil && a.Version == 9
	})
	if c := cloud.connect(t, imei, 2); c.Clean {
		t.Fatalf("reconnect %+v asked for a clean session", c)
	}
}

func TestOfflineQueuesAndComesBack(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 6)
	o := testOptions(cloud, imei)
	d := startDevice(t, o)
	cloud.msg(t, imei, protocol.TopicStatus, nil)

	d.GoOffline(time.Hour)
	waitUntil(t, "offline", func() bool { return !d.Connected() })
	ctx := context.Background()
	var ids []string
	for _, typ := range []string{"deceleration", "accOn", "button"} {
		ev, err := d.Emit(ctx, EventSpec{Type: typ})
		if err != nil {
			t.Fatalf("emit %s offline: %v", typ, err)
		}
		ids = append(ids, ev.ID)
	}
	if d.Pending() != 3 {
		t.Fatalf("pending %d, want 3", d.Pending())
	}
	d.ComeBack()
	for _, id := range ids {
		cloud.msg(t, imei, protocol.TopicEvent, func(m cloudMsg) bool {
			var ev protocol.Event
			return json.Unmarshal(m.Payload, &ev) == nil && ev.ID == id
		})
	}
	// Delivered in the order they happened.
	var got []string
	cloud.mu.Lock()
	for _, m := range cloud.msgs {
		if m.Suffix == protocol.TopicEvent {
			var ev protocol.Event
			_ = json.Unmarshal(m.Payload, &ev)
			got = append(got, ev.ID)
		}
	}
	cloud.mu.Unlock()
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("events arrived as %v, want %v", got, ids)
	}
	waitUntil(t, "outbox drained", func() bool { return d.Pending() == 0 })
	if n := cloud.connect(t, imei, 2); n.Kind != "token" || !n.Accepted {
		t.Fatalf("reconnect %+v", n)
	}
}

func TestGPSBatchesPublished(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 7)
	o := testOptions(cloud, imei)
	o.GPSInterval, o.GPSBatch = 5*time.Millisecond, 4
	o.Route = Highway()
	startDevice(t, o)
	m := cloud.msg(t, imei, protocol.TopicGPS, nil)
	var b protocol.GPSBatch
	if err := json.Unmarshal(m.Payload, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Samples) != 4 {
		t.Fatalf("batch of %d samples, want 4", len(b.Samples))
	}
	for i, s := range b.Samples {
		if i > 0 && s.Time <= b.Samples[i-1].Time {
			t.Fatalf("sample times not increasing: %+v", b.Samples)
		}
		if s.Lat < 37.8 || s.Lat > 38.1 || s.Speed < 80 || s.Speed > 120 || s.Accuracy <= 0 {
			t.Fatalf("sample %d off the highway: %+v", i, s)
		}
	}
}

func TestForeignTopicsNeverUsed(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 8)
	d := startDevice(t, testOptions(cloud, imei))
	cloud.msg(t, imei, protocol.TopicStatus, nil)
	if _, err := d.Emit(context.Background(), EventSpec{Type: "button"}); err != nil {
		t.Fatal(err)
	}
	cloud.msg(t, imei, protocol.TopicEvent, nil)
	cloud.mu.Lock()
	defer cloud.mu.Unlock()
	if len(cloud.denied) != 0 {
		t.Fatalf("the ACL refused %v", cloud.denied)
	}
}

// A scripted offline step that cuts a publish short is no error: the
// message stays queued, goes out once the device is back, and neither the
// error counters nor the last error mention it.
func TestOfflineStepDuringPublishIsNoError(t *testing.T) {
	cloud := newFakeCloud(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the broker closes
	cloud.mu.Lock()
	cloud.hold = map[string]chan struct{}{protocol.TopicEvent: release}
	cloud.mu.Unlock()
	imei := mustIMEI(t, 9)
	stats := NewStats()
	o := testOptions(cloud, imei)
	o.Stats = stats
	d := startDevice(t, o)
	cloud.msg(t, imei, protocol.TopicStatus, nil)

	ctx := context.Background()
	emitted := make(chan error, 1)
	go func() {
		_, err := d.Emit(ctx, EventSpec{Type: "deceleration"})
		emitted <- err
	}()
	cloud.msg(t, imei, protocol.TopicEvent, nil) // in flight, its PUBACK held
	if err := d.Play(ctx, Step{Action: ActionOffline, Duration: Offset(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-emitted:
		if err != nil {
			t.Fatalf("emit cut short by the offline step: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the publish did not end with the connection")
	}
	if err := d.LastError(); err != nil {
		t.Fatalf("last error %v", err)
	}
	if s := stats.Snapshot(); s.Errors() != 0 || s.LastError != "" {
		t.Fatalf("errors %d, last %q", s.Errors(), s.LastError)
	}
	if d.Pending() != 1 {
		t.Fatalf("pending %d, want the cut-short event", d.Pending())
	}
}

// A factory reset wipes the messages the dashcam had not sent: what it
// recorded before the reset is no new owner's.
func TestFactoryResetDropsUnsentMessages(t *testing.T) {
	cloud := newFakeCloud(t)
	o := testOptions(cloud, mustIMEI(t, 9))
	o.StateDir = t.TempDir()
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	d.enqueue(pending{Suffix: protocol.TopicGPS, Payload: []byte(`{"samples":[]}`), Key: "1"})
	d.mu.Lock()
	queued := len(d.outbox)
	d.mu.Unlock()
	if queued != 1 {
		t.Fatalf("%d messages queued offline, want 1", queued)
	}
	d.FactoryReset()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.outbox) != 0 {
		t.Fatalf("%d messages still queued after the reset", len(d.outbox))
	}
}
