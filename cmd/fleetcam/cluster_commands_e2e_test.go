package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/devicesim"
)

// TestClusterCommandKinds: each kind of command the API sends, issued
// through a node the device is not connected to, reaches it and is
// answered with the device's reply: a clip for a virtual event, ADAS
// calibration images, auxiliary camera search and pairing, and a reboot.
func TestClusterCommandKinds(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 3, nil)
	imei := e.addDevice("35693810002400", "Truck 24")
	dev, _ := e.simulateWith(0, imei, stateDir(t), func(o *devicesim.Options) { o.RebootDelay = 100 * time.Millisecond })
	eventually(t, "the device connected to node-a", func() bool { return dev.Connected() && e.holder(imei) == "node-a" })
	b, c := e.nodes[1].c, e.nodes[2].c

	// A clip of a moment the device recorded, through node-b.
	status, out := b.call("POST", "/v2/devices/"+imei+"/virtual-event", e.tok, map[string]any{
		"time": time.Now().Add(-2 * time.Second).UTC().Format(time.RFC3339), "mediaType": "snapshot", "cameraId": 1})
	if files, _ := dig(out, "data", "files").([]any); status != http.StatusOK || len(files) != 1 {
		t.Fatalf("virtual event through node-b: %d %v", status, out)
	}

	// ADAS calibration images asked for through node-c.
	status, out = c.call("GET", "/v2/devices/"+imei+"/adas-calibration-images?max=2", e.tok, nil)
	if status != http.StatusOK || dig(out, "data", "state") != "requested" {
		t.Fatalf("ADAS images through node-c: %d %v", status, out)
	}

	// Auxiliary cameras searched and paired through node-b.
	nearby := dev.NearbyAuxCameras()
	status, out = b.call("GET", "/v2/devices/"+imei+"/auxiliary-cameras/search?limit=2", e.tok, nil)
	if found, _ := dig(out, "data", "auxiliaryCameras").([]any); status != http.StatusOK || len(found) != 2 ||
		dig(found[0].(map[string]any), "ssid") != nearby[0].SSID {
		t.Fatalf("auxiliary camera search through node-b: %d %v", status, out)
	}
	status, out = c.call("POST", "/v2/devices/"+imei+"/auxiliary-cameras/pair", e.tok,
		map[string]any{"auxiliaryCameras": []map[string]any{{"ssid": nearby[1].SSID}}})
	if paired, _ := dig(out, "data", "auxiliaryCameras").([]any); status != http.StatusOK || len(paired) != 1 {
		t.Fatalf("auxiliary camera pairing through node-c: %d %v", status, out)
	}
	if cams := dev.AuxCameras(); len(cams) != 1 || cams[0].ID != 50 {
		t.Fatalf("cameras paired at the device %+v", cams)
	}

	// A reboot through node-b: the device answers, goes away and comes back
	// on a connection of its own.
	conn := func() string {
		l, err := e.nodes[0].a.broker.Presence(imei)
		if err != nil {
			return ""
		}
		return l.ConnectionID
	}
	before := conn()
	status, out = b.call("POST", "/v2/devices/"+imei+"/reboot", e.tok, nil)
	if status != http.StatusOK {
		t.Fatalf("reboot through node-b: %d %v", status, out)
	}
	eventually(t, "the device back after its reboot", func() bool {
		now := conn()
		return dev.Connected() && now != "" && now != before
	})
}
