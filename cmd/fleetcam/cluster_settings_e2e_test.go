package main

import (
	"net/http"
	"testing"
)

// TestClusterSettingsPushKinds: each kind of setting changed through node C
// reaches the device connected to node A at once: its event configuration,
// its organization's privacy defaults and device defaults, and its
// geofences.
func TestClusterSettingsPushKinds(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 3, nil)
	imei := e.addDevice("35693810002500", "Truck 25")
	dev, _ := e.simulate(0, imei, stateDir(t))
	eventually(t, "the device connected to node-a", func() bool { return dev.Connected() && e.holder(imei) == "node-a" })
	c := e.nodes[2].c
	change := func(what, method, path string, body any) {
		t.Helper()
		if status, out := c.call(method, path, e.tok, body); status != http.StatusOK {
			t.Fatalf("%s through node-c: %d %v", what, status, out)
		}
	}

	change("event configuration", "PUT", "/v2/devices/"+imei+"/event-config", map[string]any{"vehicleType": "Van", "events": []any{}})
	eventually(t, "the event configuration at the device", func() bool {
		cfg := dev.AppliedConfig()
		return cfg != nil && cfg.Events.VehicleType == "Van"
	})

	// What privacy mode keeps enabled is sent once the mode was switched.
	change("privacy mode", "POST", "/v2/devices/privacy-control", map[string]any{"imeis": []string{imei}, "privacyMode": "on"})
	change("organization privacy defaults", "PATCH", e.org+"/privacy-config", map[string]any{"gpsTracking": "enabled"})
	eventually(t, "the organization's privacy default at the device", func() bool {
		cfg := dev.AppliedConfig()
		return cfg != nil && cfg.Privacy.ModeConfig != nil && cfg.Privacy.ModeConfig.GPSTracking
	})

	change("organization device defaults", "POST", e.org+"/device-settings", map[string]any{"brightness": map[string]any{"value": 33}})
	eventually(t, "the organization's device default at the device", func() bool {
		cfg := dev.AppliedConfig()
		return cfg != nil && cfg.Device.Brightness == 33
	})

	change("geofences", "PUT", "/v2/devices/"+imei+"/geofences", []map[string]any{{"id": 1, "name": "Depot", "lat": 32.0, "lon": 34.8, "radius": 500}})
	eventually(t, "the geofence at the device", func() bool {
		cfg := dev.AppliedConfig()
		return cfg != nil && len(cfg.Geofences) == 1 && cfg.Geofences[0].Name == "Depot"
	})
}
