package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/store"
)

// TestFleetEndToEnd runs fleetcam with a simulated dashcam through the
// driver and trip flow: the driver's PIN reaches the device in its
// configuration, the device checks the driver in, a power on and off make a
// trip attributed to the driver with the distance of its GPS track, the
// status report's data usage is readable, and a check-out through the API
// reaches the device.
func TestFleetEndToEnd(t *testing.T) {
	t.Parallel()
	onEveryEngine(t, testFleetEndToEnd)
}

func testFleetEndToEnd(t *testing.T, engine envOption) {
	e := startEnv(t, engine, withDevice("35693810000100", "Truck 9"))
	c, tok, imei := e.c, e.tok, e.imei
	orgQ := "?organizationId=" + strconv.FormatInt(e.orgID, 10)
	ctx := context.Background()

	status, out := c.call("POST", "/v2/drivers"+orgQ, tok, map[string]any{"data": []map[string]any{
		{"organizationId": e.orgID, "driverThirdPartyId": "moshe123", "firstName": "Moshe"}}})
	if status != http.StatusCreated {
		t.Fatalf("create driver: %d %v", status, out)
	}
	pin := dig(out, "data").([]any)[0].(map[string]any)["driverCode"].(string)

	dev := e.connect(func(o *devicesim.Options) { o.GPSInterval = 200 * time.Millisecond })

	eventually(t, "the driver's PIN in the device configuration", func() bool {
		cfg := dev.AppliedConfig()
		return cfg != nil && len(cfg.Drivers) == 1 && cfg.Drivers[0].PinCode == pin
	})
	if _, err := dev.CheckIn(ctx, pin, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the driver checked in at the device", func() bool {
		_, out := c.call("GET", "/v2/drivers"+orgQ, tok, nil)
		list, _ := dig(out, "data").([]any)
		return len(list) == 1 && list[0].(map[string]any)["imei"] == imei
	})

	on, err := dev.Emit(ctx, devicesim.EventSpec{Type: "accOn"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "GPS fixes stored during the trip", func() bool {
		var n int
		e.a.db.View(t.Context(), func(tx *store.Tx) error {
			pts, err := tx.GPS(imei, time.UnixMilli(on.Time), time.Now(), 0)
			n = len(pts)
			return err
		})
		return n >= 3
	})
	if _, err := dev.Emit(ctx, devicesim.EventSpec{Type: "accOff"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a finished trip with the driver and a distance", func() bool {
		_, out := c.call("GET", "/v2/driving-history"+orgQ, tok, nil)
		list, _ := dig(out, "data").([]any)
		if len(list) != 1 {
			return false
		}
		trip := list[0].(map[string]any)
		return trip["inProgress"] == false && dig(trip, "driver", "driverThirdPartyId") == "moshe123" &&
			trip["distanceMeters"].(float64) > 0
	})
	eventually(t, "the data usage of the status report", func() bool {
		_, out := c.call("GET", "/v2/devices/"+imei+"/data-usage", tok, nil)
		return dig(out, "data", "receivedAt") != nil && dig(out, "requestId") != ""
	})

	status, out = c.call("POST", "/v2/devices/"+imei+"/driver-checkout", tok, nil)
	if status != http.StatusOK || dig(out, "data", "deviceNotified") != true {
		t.Fatalf("check-out: %d %v", status, out)
	}
	eventually(t, "the device to check the driver out", func() bool {
		_, checkedIn := dev.Driver()
		return !checkedIn
	})
}

// A device removed from the inventory is disconnected at once, and its
// reconnections are refused.
func TestRemovedDeviceDisconnected(t *testing.T) {
	t.Parallel()
	e := startEnv(t, withDevice("35693810000300", "Truck 3"))
	dev := e.connect(nil)
	e.waitOnline()
	if status, _ := e.c.call("DELETE", e.org+"/devices/"+e.imei, e.tok, nil); status != http.StatusOK {
		t.Fatalf("DELETE device: status %d", status)
	}
	eventually(t, "the removed device to be disconnected", func() bool { return !e.a.broker.Online(e.imei) && !dev.Connected() })
	eventually(t, "a reconnection to be refused", func() bool {
		res, err := http.Get(e.c.base + "/metrics")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		metrics, _ := io.ReadAll(res.Body)
		return bytes.Contains(metrics, []byte(`fleetcam_mqtt_connects_total{result="not_authorized"} `))
	})
	if e.a.broker.Online(e.imei) {
		t.Fatal("the removed device is connected again")
	}
}
