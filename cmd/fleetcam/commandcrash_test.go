package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/devicesim"
)

// TestKilledAfterCommitKeepsQueuedCommand switches privacy mode on for an
// offline device, kills fleetcam right after the change is committed and
// before anything follows the commit, starts it again on the same data dir
// and checks that the device, once connected, receives the privacy-mode
// command: the command commits with the change or not at all.
func TestKilledAfterCommitKeepsQueuedCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := runCrashingChild(t, dir)
	e := openEnv(t, first.base)
	imei := testIMEIs(t, "35693810000300", 1)[0]
	e.addDevice(imei, "Crash van")

	body, _ := json.Marshal(map[string]any{"imeis": []string{imei}, "privacyMode": "general"})
	req, _ := http.NewRequest("POST", first.base+"/v2/devices/privacy-control", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.tok)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("privacy-control answered %d; fleetcam was to die after the commit", res.StatusCode)
	}
	if err := first.cmd.Wait(); err == nil {
		t.Fatal("fleetcam exited cleanly; it was to be killed after the commit")
	}

	second := runChild(t, dir)
	c := client{t: t, base: second.base}
	tok := c.login(partnerEmail, partnerPassword)
	if status, out := c.call("GET", "/v2/devices/"+imei+"/privacy-control", tok, nil); status != http.StatusOK ||
		dig(out, "data", "privacyMode") != "general" {
		t.Fatalf("privacy mode after the restart: %d %v; the change was to be committed before the kill", status, out)
	}

	master, _ := hex.DecodeString(configs.Default().Devices.FactoryMasterKey)
	stats := devicesim.NewStats()
	dev, err := devicesim.New(devicesim.Options{IMEI: imei, BrokerURL: "tcp://" + second.mqtt, FactoryMasterKey: master,
		StateDir: filepath.Join(dir, "sim"), Stats: stats})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); dev.Run(ctx) }()
	defer func() { stop(); <-done }()
	eventually(t, "the queued privacy-mode command to reach the device", func() bool {
		return stats.Snapshot().Commands > 0 && dev.PrivacyMode() == "on"
	})
}
