package cloudapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// sameJSON fails the test unless got and want encode to the same JSON.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// dataWithout returns the data object of r without the named members.
func dataWithout(r *response, names ...string) map[string]any {
	data, _ := r.get("data").(map[string]any)
	out := map[string]any{}
	for k, v := range data {
		if !slices.Contains(names, k) {
			out[k] = v
		}
	}
	return out
}

// TestBulkPerIMEIAnswers holds every bulk per-IMEI call to the same answer:
// a list mixing a connected device, another partner's device, a malformed
// IMEI, an unknown IMEI, an offline device and a repeat is answered per
// IMEI in list order, and only the caller's devices change.
func TestBulkPerIMEIAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path, action string
		body                       map[string]any
		effected                   bool
	}{
		{"privacy mode", "POST", "/v2/devices/privacy-control", "device.privacyMode",
			map[string]any{"privacyMode": "general"}, false},
		{"privacy configuration", "PATCH", "/v2/devices/bulk/privacy-config", "device.privacyConfig",
			map[string]any{"privacyConfig": map[string]any{"gpsTracking": "enabled"}}, false},
		{"device configuration", "PUT", "/v2/devices/device-config", "device.config",
			map[string]any{"config": map[string]any{"brightness": v(42)}}, true},
		{"event configuration", "PUT", "/v2/devices/event-config", "device.events",
			map[string]any{"config": events(ev("tailgating", "video"))}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newDeviceWorld(t, 3)
			online, offline := w.imeis[0], w.imeis[1]
			w.cmd.setOnline(online, true)
			unknown := worldIMEI(777)
			tc.body["imeis"] = []string{online, w.otherIMEI, "12345", unknown, offline, online}
			r := w.do(tc.method, tc.path, w.partnerToken, tc.body).want(http.StatusOK)
			want := map[string]any{
				"success":  []string{online},
				"accepted": []string{offline},
				"rejected": []map[string]any{
					{"imei": w.otherIMEI, "errorCode": rejectNotFound, "reason": "device not found"},
					{"imei": "12345", "errorCode": rejectNotFound, "reason": "not a valid IMEI: " + store.IMEIShape},
					{"imei": unknown, "errorCode": rejectNotFound, "reason": "device not found"},
				},
			}
			if tc.effected {
				want["effectedImeis"] = []string{online, offline}
			}
			sameJSON(t, "answer", dataWithout(r, "config"), want)
			if _, _, pushed := w.cmd.take(); !slices.Equal(pushed, []string{online, offline}) {
				t.Fatalf("pushed %v", pushed)
			}
			entries := w.audit(tc.action)
			if len(entries) != 2 || entries[0].EntityID != online || entries[1].EntityID != offline {
				t.Fatalf("audit entries %+v", entries)
			}
		})
	}
}

// TestSingleDeviceConfigAnswer holds the one-device configuration writes to
// the per-IMEI answer of the bulk calls.
func TestSingleDeviceConfigAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, action string
		body               any
	}{
		{"device configuration", "device-config", "device.config", map[string]any{"brightness": v(42)}},
		{"event configuration", "event-config", "device.events", events(ev("tailgating", "video"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newDeviceWorld(t, 2)
			online, offline := w.imeis[0], w.imeis[1]
			w.cmd.setOnline(online, true)
			for _, imei := range []string{online, offline} {
				r := w.do("PUT", "/v2/devices/"+imei+"/"+tc.path, w.editor, tc.body).want(http.StatusOK)
				want := map[string]any{"effectedImeis": []string{imei}, "success": []string{}, "accepted": []string{}, "rejected": []any{}}
				if imei == online {
					want["success"] = []string{imei}
				} else {
					want["accepted"] = []string{imei}
				}
				sameJSON(t, imei, dataWithout(r, "config"), want)
				if r.get("data.config") == nil {
					t.Fatalf("no config: %s", r.raw)
				}
			}
			w.do("PUT", "/v2/devices/"+w.otherIMEI+"/"+tc.path, w.partnerToken, tc.body).wantError(http.StatusNotFound, nameNotFound)
			if _, _, pushed := w.cmd.take(); !slices.Equal(pushed, []string{online, offline}) {
				t.Fatalf("pushed %v", pushed)
			}
			if n := len(w.audit(tc.action)); n != 2 {
				t.Fatalf("%d audit entries", n)
			}
		})
	}
}
