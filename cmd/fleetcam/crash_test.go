package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/devicesim"
)

// childEnv makes the test binary run fleetcam itself (see TestMain), so a
// test can kill it with SIGKILL.
const childEnv = "FLEETCAM_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(run(context.Background(), nil, os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// startChild runs fleetcam in a child process over dir and returns it with
// its HTTP base URL, read from its start-up log line.
func startChild(t *testing.T, dir, receiverURL string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "FLEETCAM_DATA_DIR="+dir,
		"FLEETCAM_HTTP_ADDR=127.0.0.1:0", "FLEETCAM_MQTT_ADDR=127.0.0.1:0",
		"FLEETCAM_PARTNER_EMAIL=ops@fleet.example", "FLEETCAM_PARTNER_PASSWORD=Partner123",
		"FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS=true", "FLEETCAM_LOG_LEVEL=info")
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			var line struct {
				Msg  string `json:"msg"`
				HTTP string `json:"http"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "fleetcam started" {
				addr <- line.HTTP
			}
		}
		io.Copy(io.Discard, logs)
	}()
	select {
	case a := <-addr:
		return cmd, "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("fleetcam child did not start")
	}
	return nil, ""
}

// TestKilledMidDeliveryLosesNoWebhook kills fleetcam with SIGKILL while it
// delivers webhooks to a slow receiver, starts it again on the same data dir
// and checks that every message still arrives, signed, and that a message
// delivered twice carries the same webhook-id both times.
func TestKilledMidDeliveryLosesNoWebhook(t *testing.T) {
	const devices = 30
	dir := t.TempDir()
	var (
		mu       sync.Mutex
		secret   string
		ids      = map[string]string{} // serialNumber → webhook-id
		received int
		bad      int
		arrived  = make(chan struct{}, 1000)
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		time.Sleep(20 * time.Millisecond) // slow enough to be killed mid-delivery
		mu.Lock()
		defer mu.Unlock()
		if err := webhooks.Verify(secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var m map[string]any
		json.Unmarshal(body, &m)
		sn, _ := dig(m, "data", "serialNumber").(string)
		if prev, seen := ids[sn]; seen && prev != r.Header.Get("webhook-id") {
			t.Errorf("device %s delivered again under webhook-id %s, first %s", sn, r.Header.Get("webhook-id"), prev)
		}
		ids[sn] = r.Header.Get("webhook-id")
		received++
		arrived <- struct{}{}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()

	child, base := startChild(t, dir, rcv.URL)
	c := client{t: t, base: base}
	tok := c.login("ops@fleet.example", "Partner123")
	_, out := c.call("POST", "/v2/organizations", tok, map[string]any{"name": "Crash test fleet"})
	org := "/v2/organizations/" + strconv.FormatInt(int64(dig(out, "data", "organizationId").(float64)), 10)
	imeis, err := devicesim.IMEIs("35693810000100", devices)
	if err != nil {
		t.Fatal(err)
	}
	for _, imei := range imeis {
		if status, out := c.call("POST", org+"/devices", tok, map[string]any{"imei": imei, "name": imei}); status != http.StatusOK {
			t.Fatalf("add device: %d %v", status, out)
		}
	}
	status, out := c.call("POST", org+"/webhook-settings", tok, map[string]any{"systemMessagesWebhook": []map[string]any{{
		"url": rcv.URL, "config": map[string]any{"deviceRemoved": map[string]any{"isEnabled": true}}}}})
	if status != http.StatusOK {
		t.Fatalf("webhook settings: %d %v", status, out)
	}
	mu.Lock()
	secret, _ = dig(out, "data", "webhookSecret").(string)
	mu.Unlock()

	// Every removal is a deviceRemoved message in the outbox, committed with
	// the removal itself.
	for _, imei := range imeis {
		if status, out := c.call("DELETE", org+"/devices/"+imei, tok, nil); status != http.StatusOK {
			t.Fatalf("remove device: %d %v", status, out)
		}
	}
	for i := 0; i < 3; i++ {
		select {
		case <-arrived:
		case <-time.After(20 * time.Second):
			t.Fatal("no webhook arrived before the kill")
		}
	}
	child.Process.Kill()
	child.Wait()
	mu.Lock()
	before := received
	mu.Unlock()
	if before >= devices {
		t.Fatalf("all %d webhooks arrived before the kill; the test proves nothing", before)
	}

	startChild(t, dir, rcv.URL)
	eventually(t, "every deviceRemoved webhook after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ids) == devices
	})
	mu.Lock()
	defer mu.Unlock()
	for _, imei := range imeis {
		if ids[imei] == "" {
			t.Errorf("no webhook for %s", imei)
		}
	}
	if bad != 0 {
		t.Errorf("%d deliveries failed signature verification", bad)
	}
	t.Logf("%d delivered before the kill, %d deliveries in all for %d messages", before, received, devices)
}
