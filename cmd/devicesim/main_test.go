package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// legacyBroker is a mochi broker on 127.0.0.1:0 whose hook admits only
// legacy firmware (password "legacy:<below 3.12>") to its own topics, and
// counts GPS batches per IMEI.
type legacyBroker struct {
	mqtt.HookBase
	mu      sync.Mutex
	gps     map[string]int
	changed chan struct{}
}

func (b *legacyBroker) ID() string { return "legacy-only" }

func (b *legacyBroker) Provides(x byte) bool {
	return x == mqtt.OnConnectAuthenticate || x == mqtt.OnACLCheck || x == mqtt.OnPublish
}

func (b *legacyBroker) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	fw, ok := strings.CutPrefix(string(pk.Connect.Password), protocol.LegacyPrefix)
	return ok && string(pk.Connect.Username) == cl.ID && protocol.FirmwareBelow(fw, protocol.MinTokenFirmware)
}

func (b *legacyBroker) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	own := protocol.Prefix + "/" + cl.ID + "/"
	if write {
		return strings.HasPrefix(topic, own+"up/")
	}
	return strings.HasPrefix(topic, own+"down/")
}

func (b *legacyBroker) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if imei, suffix, ok := protocol.SplitTopic(pk.TopicName); ok && suffix == protocol.TopicGPS {
		b.mu.Lock()
		b.gps[imei]++
		close(b.changed)
		b.changed = make(chan struct{})
		b.mu.Unlock()
	}
	return pk, nil
}

func startBroker(t *testing.T) (*legacyBroker, string) {
	t.Helper()
	b := &legacyBroker{gps: map[string]int{}, changed: make(chan struct{})}
	srv := mqtt.New(&mqtt.Options{InlineClient: true, Logger: slog.New(slog.DiscardHandler)})
	if err := srv.AddHook(b, nil); err != nil {
		t.Fatal(err)
	}
	l := listeners.NewTCP(listeners.Config{ID: "t", Address: "127.0.0.1:0"})
	if err := srv.AddListener(l); err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return b, "tcp://" + l.Address()
}

func TestRunFleetUntilInterrupted(t *testing.T) {
	b, url := startBroker(t)
	ackLog := filepath.Join(t.TempDir(), "acks.log")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"-broker", url, "-devices", "3", "-imei-start", "35693830000000", "-firmware", "3.9",
			"-state-dir", "", "-gps-rate", "50", "-gps-batch", "5", "-load", "-progress", "0", "-ack-log", ackLog}, &stdout, &stderr)
	}()
	// Interrupt once every device delivered two GPS batches.
	deadline := time.After(2 * time.Minute)
	for {
		b.mu.Lock()
		n, ch := 0, b.changed
		for _, c := range b.gps {
			if c >= 2 {
				n++
			}
		}
		b.mu.Unlock()
		if n == 3 {
			break
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("devices did not publish GPS; stderr: %s", stderr.String())
		}
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d; stderr: %s", c, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("run did not return after the interrupt")
	}
	out := stdout.String()
	for _, want := range []string{"devicesim summary", "devices        3 (online at exit 3, ever connected 3)", "all connected in", "ack latency    p50"} {
		if !strings.Contains(out, want) {
			t.Fatalf("summary lacks %q:\n%s", want, out)
		}
	}
	raw, err := os.ReadFile(ackLog)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	gps := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 5 {
			t.Fatalf("ack log line %q", l)
		}
		if f[2] == protocol.TopicGPS {
			gps++
		}
	}
	// Each device sent its second batch after its first was acknowledged.
	if gps < 3 {
		t.Fatalf("ack log has %d GPS acks, want at least 3:\n%s", gps, raw)
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-mqtt", "4.0"}, "-mqtt"},
		{[]string{"-imei-start", "123"}, "-imei-start"},
		{[]string{"-imei-start", "490154203237519"}, "check digit"},
		{[]string{"-devices", "0"}, "-devices"},
		{[]string{"-master-key", "zz"}, "-master-key"},
		{[]string{"-frame-size", "10x10"}, "-frame-size"},
		{[]string{"-route", "moon"}, "-route"},
		{[]string{"-gpx", "/nonexistent.gpx"}, "-gpx"},
		{[]string{"-scenario", "/nonexistent.yaml"}, "-scenario"},
		{[]string{"-receive-max", "0"}, "-receive-max"},
		{[]string{"-log-level", "loud"}, "-log-level"},
		{[]string{"-broker", "http://x:1"}, "scheme"},
		{[]string{"-no-such-flag"}, "no-such-flag"},
		{[]string{"stray"}, "unexpected argument"},
		{[]string{"-load", "-token-seed", "zz"}, "-token-seed"},
		{[]string{"-load", "-mqtt", "3.1.1"}, "MQTT 5 only"},
		{[]string{"-load", "-scenario", "x.yaml"}, "not available in load mode"},
		{[]string{"-load", "-connect-parallel", "0"}, "-connect-parallel"},
		{[]string{"-load", "-window", "-1"}, "-window"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"-state-dir", ""}, tc.args...), &stdout, &stderr)
			if code != 2 && code != 1 {
				t.Fatalf("exit %d, want a failure", code)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("stderr %q does not name %q", stderr.String(), tc.want)
			}
		})
	}
}
