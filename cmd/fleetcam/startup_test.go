package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stopped is a context that has ended: a start that should be refused
// cannot hang the test when it is not, and stops at once.
func stopped() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// A first start with a password the API would refuse stops before anything
// is created, naming the variable and the rule.
func TestFirstStartRefusesWeakPartnerPassword(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	for _, tc := range []struct{ password, rule string }{
		{"a", "must be at least 8 characters long"},
		{"guard-pass-123456", "must contain an upper-case letter, a lower-case letter and a digit"},
	} {
		e := testEnv(dir)
		e["FLEETCAM_PARTNER_PASSWORD"] = tc.password
		var stderr bytes.Buffer
		code := run(stopped(), nil, e.get, io.Discard, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), "FLEETCAM_PARTNER_PASSWORD") || !strings.Contains(stderr.String(), tc.rule) {
			t.Errorf("password %q: exit %d: %s", tc.password, code, stderr.String())
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the refused start created the data dir: %v", err)
	}
}

// A listener address in use stops start-up before the data dir, its store
// and the first partner are created.
func TestPortInUseCreatesNoDataDir(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, setting := range []string{"http.addr", "mqtt.addr", "mqtt.wsAddr", "debug.pprofAddr", "metrics.addr"} {
		t.Run(setting, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			e := testEnv(dir)
			e[map[string]string{"http.addr": "FLEETCAM_HTTP_ADDR", "mqtt.addr": "FLEETCAM_MQTT_ADDR",
				"mqtt.wsAddr": "FLEETCAM_MQTT_WS_ADDR", "debug.pprofAddr": "FLEETCAM_PPROF_ADDR",
				"metrics.addr": "FLEETCAM_METRICS_ADDR"}[setting]] = taken.Addr().String()
			var stderr bytes.Buffer
			code := run(stopped(), nil, e.get, io.Discard, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), setting+" "+taken.Addr().String()) {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("the failed start created the data dir: %v", err)
			}
		})
	}
}

// Ctrl-C and SIGTERM stop the server with exit status 0: make run reports
// any other status as a failure.
func TestSignalStopsWithExitZero(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, _ := startChild(t, t.TempDir(), "")
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("fleetcam ended with %v", err)
				}
			case <-time.After(patience):
				t.Fatal("fleetcam did not stop")
			}
		})
	}
}

func TestEveryInterface(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		":80": true, "0.0.0.0:8883": true, "[::]:443": true,
		"127.0.0.1:80": false, "[::1]:8883": false, "192.0.2.1:80": false, "localhost:443": false,
	} {
		if got := everyInterface(addr); got != want {
			t.Errorf("everyInterface(%q) = %t, want %t", addr, got, want)
		}
	}
}
