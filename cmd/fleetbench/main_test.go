package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// buildFleetcam builds the server the bench runs as a child process.
func buildFleetcam(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fleetcam")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/fleetcam/fleetcam/cmd/fleetcam").CombinedOutput()
	if err != nil {
		t.Fatalf("build fleetcam: %v\n%s", err, out)
	}
	return bin
}

// TestQuickBenchReportsSaneFigures runs every part at its tiny scale
// against a real fleetcam child process and checks the figures.
func TestQuickBenchReportsSaneFigures(t *testing.T) {
	bin := buildFleetcam(t)
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "results.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	began := time.Now()
	code := run(ctx, []string{"-quick", "-runs", "1", "-fleetcam", bin, "-work", filepath.Join(dir, "work"), "-json", jsonPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("quick bench took %s", time.Since(began).Round(time.Millisecond))
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []result          `json:"results"`
		Skipped map[string]string `json:"skipped"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range rep.Results {
		got[r.Part+"/"+r.Name] = r.Value
	}
	between := func(key string, lo, hi float64) {
		t.Helper()
		v, ok := got[key]
		if !ok {
			t.Errorf("no figure %s in %s", key, raw)
			return
		}
		if v < lo || v > hi {
			t.Errorf("%s = %g, want %g to %g", key, v, lo, hi)
		}
	}
	sc := quickScale
	between("hold/devices_online", float64(sc.holdDevices), float64(sc.holdDevices))
	between("hold/connect_rate", 10, 1e6)
	between("hold/rss_per_device", 1, 10_000)
	between("hold/heap_per_device", 0.1, 1000)
	// Offered: 40 devices × (5 GPS messages + 0.5 events) per second.
	offered := float64(sc.ingestDevices) * (sc.sustainedGPS + sc.sustainedEvents)
	between("ingest/sustained_msgs_per_s", offered*0.5, offered*1.5)
	between("ingest/sustained_ack_p99", 0.01, 2000)
	between("ingest/gps_fixes_per_s", 1, 1e7)
	between("ingest/closed_loop_msgs_per_s", 10, 1e6)
	between("webhook/bad_signatures", 0, 0)
	rate := sc.webhookRates[0]
	key := func(name string) string {
		return "webhook/" + name + "_at_" + strings.TrimSuffix(num(rate), ".0") + "_per_s"
	}
	if acked, delivered := got["webhook/acked_at_10_per_s"], got["webhook/delivered_at_10_per_s"]; acked < 1 || delivered != acked {
		t.Errorf("webhook: %g events acknowledged, %g delivered (%s)", acked, delivered, key("acked"))
	}
	between("webhook/p99_at_10_per_s", 0.01, 5000)
	between("api/startup_seconds", 0.001, 60)
	if _, skipped := rep.Skipped["api"]; !skipped {
		between("api/device_events_p99", 0.01, 5000)
		between("api/org_events_p99", 0.01, 5000)
	}
	if _, skipped := rep.Skipped["baseline"]; !skipped {
		between("baseline/mosquitto_closed_loop_msgs_per_s", 10, 1e7)
		between("baseline/mosquitto_rss_per_device", 0.01, 10_000)
	} else if !strings.Contains(stdout.String(), "baseline: skipped: mosquitto is not installed") {
		t.Errorf("baseline skipped without saying why:\n%s", stdout.String())
	}
	between("durability/acked_messages_lost", 0, 0)
	between("durability/acked_messages_checked", 10, 1e9)
	for _, title := range []string{"1. Connection hold", "2. Ingest", "3. Event → webhook", "6. Durability", "Targets"} {
		if !strings.Contains(stdout.String(), title) {
			t.Errorf("report lacks %q:\n%s", title, stdout.String())
		}
	}
}

// The durability check finds an acknowledged message the store lacks.
func TestVerifyAcksCountsMissingMessages(t *testing.T) {
	dir := t.TempDir()
	fl, err := seedFleet(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := seedEvents(fl, 1, 1, at.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	db := storetest.Open(t, storetest.WithPath(filepath.Join(dir, "fleetcam.db")))
	err = db.Update(t.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		d, err := tx.Device(fl.imeis[0])
		if err != nil {
			return err
		}
		_, err = tx.AddGPS(d, []store.GPSPoint{{Time: at, Lat: 52, Lon: 4}})
		return err
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	acks := []devicesim.Ack{
		{IMEI: fl.imeis[0], Topic: protocol.TopicGPS, Key: ms},                                      // stored
		{IMEI: fl.imeis[0], Topic: protocol.TopicGPS, Key: strconv.FormatInt(at.UnixMilli()+1, 10)}, // missing
		{IMEI: fl.imeis[0], Topic: protocol.TopicEvent, Key: "L" + ms},                              // another event id at that time
	}
	lost, gps, events, err := verifyAcks(dir, acks)
	if err != nil {
		t.Fatal(err)
	}
	if lost != 2 || gps != 2 || events != 1 {
		t.Fatalf("lost %d of %d GPS messages and %d events, want 2 lost", lost, gps, events)
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-part", "nap"}, "-part"},
		{[]string{"-runs", "0"}, "-runs"},
		{[]string{"-fleetcam", "/nonexistent/fleetcam"}, "make build"},
		{[]string{"stray"}, "unexpected argument"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q does not name %q", tc.args, stderr.String(), tc.want)
		}
	}
}
