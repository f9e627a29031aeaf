package main

import (
	"io"
	"net/http"
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// TestDeviceControlEndToEnd: settings made while a simulated dashcam is
// offline (operating mode, USB OTG, PIN codes, ADAS measurements) reach it
// when it connects, and the control commands (wake-up, calibrations, a
// live snapshot, reboot, factory reset) reach it over the real broker.
func TestDeviceControlEndToEnd(t *testing.T) {
	t.Parallel()
	onEveryEngine(t, testDeviceControlEndToEnd)
}

func testDeviceControlEndToEnd(t *testing.T, engine envOption) {
	e := startEnv(t, engine, withDevice("35693811000000", "Control truck"))
	imei, dev := e.imei, "/v2/devices/"+e.imei
	must := func(method, path string, body any) map[string]any {
		t.Helper()
		status, out := e.c.call(method, path, e.tok, body)
		if status != http.StatusOK {
			t.Fatalf("%s %s: %d %v", method, path, status, out)
		}
		return out
	}
	out := must("PUT", dev+"/demo-mode", nil)
	if accepted, _ := dig(out, "data", "accepted").([]any); len(accepted) != 1 || accepted[0] != imei {
		t.Fatalf("demo mode of an offline device: %v", out)
	}
	must("POST", dev+"/otg-settings", map[string]any{"enabled": true})
	out = must("POST", dev+"/pin-codes", map[string]any{"password": partnerPassword})
	admin, _ := dig(out, "data", "adminPin", "value").(string)
	driver, _ := dig(out, "data", "driverPin", "value").(string)
	must("PUT", dev+"/calibrate-adas", map[string]any{"cameraHeight": 160, "cameraOffset": 5, "vehicleWidth": 190})
	if status, _ := e.c.call("POST", dev+"/wakeup", e.tok, nil); status != http.StatusExpectationFailed {
		t.Fatalf("wake-up of an offline device: %d", status)
	}

	sim := e.connect(nil)
	e.waitOnline()
	eventually(t, "the control settings applied by the device", func() bool {
		c := sim.Control()
		return c.Mode == protocol.ModeDemo && c.OTGEnabled && c.ADAS != nil && c.ADAS.CameraHeight == 160 && c.PinCodes != nil
	})
	if !sim.CheckPin(true, admin) || !sim.CheckPin(false, driver) || sim.CheckPin(true, driver) {
		t.Fatal("the device does not verify the issued PINs")
	}
	eventually(t, "the manual calibration completed once acknowledged", func() bool {
		_, out := e.c.call("GET", dev+"/auto-calibration/status", e.tok, nil)
		return out["status"] == "completed" && out["type"] == "manual"
	})

	must("POST", dev+"/wakeup", nil)
	if sim.Wakeups() != 1 {
		t.Fatalf("wake-ups %d", sim.Wakeups())
	}
	if out := must("POST", dev+"/calibrate-adas", nil); dig(out, "data", "state") != "completed" || sim.ADASCalibration() != "completed" {
		t.Fatalf("calibration: %v, device %q", out, sim.ADASCalibration())
	}
	if out := must("GET", dev+"/calibrate-adas/state", nil); out["data"] != "completed" {
		t.Fatalf("state %v", out)
	}
	out = must("POST", e.org+"/devices/calibrate-accelerometer", map[string]any{"imeis": []string{imei}})
	if accepted, _ := dig(out, "data", "accepted").([]any); len(accepted) != 1 || sim.AccelerometerCalibrations() != 1 {
		t.Fatalf("accelerometer: %v, device %d", out, sim.AccelerometerCalibrations())
	}
	if cams, _ := must("GET", dev+"/cameras", nil)["data"].([]any); len(cams) != 2 {
		t.Fatalf("cameras %v", cams)
	}
	link, _ := must("GET", dev+"/cameras/1/snapshot", nil)["data"].(string)
	eventually(t, "the snapshot downloadable from its link", func() bool {
		res, err := http.Get(link)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode == http.StatusOK && res.Header.Get("Content-Type") == "image/jpeg" && len(body) > 0
	})

	must("DELETE", dev+"/demo-mode", nil)
	eventually(t, "normal mode applied", func() bool { return sim.Control().Mode == protocol.ModeNormal })

	must("POST", dev+"/factory-reset", nil)
	e.waitOnline()
	eventually(t, "the reset settings pushed after the device bootstrapped again", func() bool {
		c := sim.Control()
		return !c.OTGEnabled && c.ADAS == nil && c.PinCodes != nil && sim.Connected()
	})
	if !sim.CheckPin(true, admin) {
		t.Fatal("the PIN codes did not survive the factory reset")
	}
	if status, out := e.c.call("POST", dev+"/reboot", e.tok, nil); status != http.StatusOK {
		// What the device and the API said of the connection, for a
		// failure that only a loaded machine has shown.
		_, got := e.c.call("GET", dev, e.tok, nil)
		t.Fatalf("POST %s/reboot: %d %v; the device connected %v, its last connection error %v, the API's status %v",
			dev, status, out, sim.Connected(), sim.LastError(), dig(got, "data", "status"))
	}
	e.waitOnline()
}
