package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/devicesim"
)

// TestDeviceMoveEndToEnd runs a simulated dashcam on the real broker: it
// records a trip with GPS and an accident with video for one organization,
// is removed and added to another organization of the partner, is reset
// and connects again, and the device endpoints show the new organization
// only what the dashcam records from then on.
func TestDeviceMoveEndToEnd(t *testing.T) {
	t.Parallel()
	e := startEnv(t, withDevice("35693810000500", "Truck 5"))
	c, tok, imei := e.c, e.tok, e.imei
	ctx := context.Background()
	dev := e.connect(func(o *devicesim.Options) { o.GPSInterval = 100 * time.Millisecond })
	e.waitOnline()
	start := time.Now().Add(-time.Hour)
	span := func() string {
		return "?start=" + url.QueryEscape(start.UTC().Format(time.RFC3339)) + "&end=" + url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}
	count := func(path string) (int, []any) {
		t.Helper()
		status, out := c.call("GET", path, tok, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, status, out)
		}
		list, _ := dig(out, "data").([]any)
		n, isPage := dig(out, "metadata", "count").(float64)
		if !isPage {
			n = float64(len(list))
		}
		return int(n), list
	}
	drive := func() {
		t.Helper()
		if _, err := dev.Emit(ctx, devicesim.EventSpec{Type: "accOn"}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "GPS during the trip", func() bool { n, _ := count("/v2/devices/" + imei + "/gps" + span()); return n >= 3 })
		for _, typ := range []string{"accident", "accOff"} {
			if _, err := dev.Emit(ctx, devicesim.EventSpec{Type: typ}); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "the trip's events", func() bool { n, _ := count("/v2/devices/" + imei + "/events" + span()); return n >= 3 })
	}
	drive()
	_, before := count("/v2/devices/" + imei + "/events" + span())
	oldIDs := map[float64]bool{}
	for _, ev := range before {
		oldIDs[ev.(map[string]any)["id"].(float64)] = true
	}

	if status, _ := c.call("DELETE", e.org+"/devices/"+imei, tok, nil); status != http.StatusOK {
		t.Fatalf("DELETE device: %d", status)
	}
	eventually(t, "the removed device to be disconnected", func() bool { return !e.a.broker.Online(imei) })
	removed := time.Now()
	status, out := c.call("POST", "/v2/organizations", tok, map[string]any{"name": "Southwind Haulage"})
	if status != http.StatusOK {
		t.Fatalf("second organization: %d %v", status, out)
	}
	e.org = fmt.Sprintf("/v2/organizations/%d", int64(dig(out, "data", "organizationId").(float64)))
	e.orgID = int64(dig(out, "data", "organizationId").(float64))
	e.addDevice(imei, "Truck 5, moved")
	// Its token went with the removal: reset, the dashcam bootstraps a new one.
	dev.FactoryReset()
	e.waitOnline()

	// Whatever the dashcam sends now is the new organization's; nothing from before is.
	_, evs := count("/v2/devices/" + imei + "/events" + span())
	for _, ev := range evs {
		if oldIDs[ev.(map[string]any)["id"].(float64)] {
			t.Fatalf("the new organization sees the old organization's event: %v", ev)
		}
	}
	_, pts := count("/v2/devices/" + imei + "/gps" + span())
	for _, p := range pts {
		if at := time.UnixMilli(int64(p.(map[string]any)["time"].(float64) * 1000)); at.Before(removed.Add(-time.Second)) {
			t.Fatalf("the new organization sees GPS from before the move: %v", p)
		}
	}
	history := fmt.Sprintf("/v2/driving-history?organizationId=%d", e.orgID)
	if n, trips := count(history); n != 0 {
		t.Fatalf("the new organization sees the old organization's trip: %v", trips)
	}
	drive()
	eventually(t, "the new organization's own trip", func() bool { n, _ := count(history); return n == 1 })
	if n, _ := count("/v2/devices/" + imei + "/events" + span()); n < 3 {
		t.Fatalf("the new organization has %d events of its own", n)
	}
}
