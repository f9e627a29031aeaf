package cloudapi

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestHotspotPasswords(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	imei := w.imeis[0]
	path := "/v2/devices/" + imei + "/hotspot"
	r := w.do("GET", path, w.editor, nil).want(http.StatusOK)
	if r.get("data.hotspotEnabled") != false || r.str("data.password") != store.DefaultHotspotPassword || r.get("data.defaultPassword") != true {
		t.Fatalf("a new device: %s", r.raw)
	}
	set := func(on bool) string {
		t.Helper()
		r := w.do("PUT", path, w.editor, map[string]any{"hotspotEnabled": on}).want(http.StatusOK)
		if r.get("data.hotspotEnabled") != on {
			t.Fatalf("switch %v: %s", on, r.raw)
		}
		if g := w.do("GET", path, w.partnerToken, nil).want(http.StatusOK); g.str("data.password") != r.str("data.password") {
			t.Fatal("GET and PUT disagree on the password")
		}
		return r.str("data.password")
	}
	seen := map[string]bool{store.DefaultHotspotPassword: true}
	current := store.DefaultHotspotPassword
	for i := 0; i < 40; i++ {
		p := set(true)
		if seen[p] {
			t.Fatalf("cycle %d: Off to On kept or repeated %q", i, p)
		}
		if len(p) != 20 || !strings.ContainsAny(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") || !strings.ContainsAny(p, "abcdefghijklmnopqrstuvwxyz") ||
			!strings.ContainsAny(p, "0123456789") || strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != "" {
			t.Fatalf("password %q breaks the rules", p)
		}
		seen[p] = true
		if again := set(true); again != p {
			t.Fatal("On to On changed the password")
		}
		if off := set(false); off != p {
			t.Fatal("switching off changed the password")
		}
		current = p
	}
	if _, _, pushed := w.cmd.take(); len(pushed) != 120 {
		t.Fatalf("%d configuration pushes, want one per switch", len(pushed))
	}

	// The device configuration switches it as well.
	w.do("PUT", "/v2/devices/"+imei+"/device-config", w.partnerToken, map[string]any{
		"hotSpot": map[string]any{"internetAccess": true, "hotspotEnabled": true}}).want(http.StatusOK)
	r = w.do("GET", path, w.editor, nil).want(http.StatusOK)
	if p := r.str("data.password"); p == current || seen[p] || r.get("data.internetAccess") != true {
		t.Fatalf("device-config switch: %s", r.raw)
	}
	_, e := w.settings(imei)
	if e.HotspotPassword != r.str("data.password") || !e.Device.HotspotEnabled {
		t.Fatal("the desired configuration does not carry the password")
	}

	// A firmware update changes nothing; a factory reset restores the default.
	err := w.db.Update(t.Context(), store.Actor{Source: "device"}, func(tx *store.Tx) error { return tx.ResetHotspot(imei) })
	if err != nil {
		t.Fatal(err)
	}
	r = w.do("GET", path, w.editor, nil).want(http.StatusOK)
	if r.str("data.password") != store.DefaultHotspotPassword || r.get("data.defaultPassword") != true || r.get("data.hotspotEnabled") != true {
		t.Fatalf("after factory reset: %s", r.raw)
	}

	// Passwords never reach the audit log.
	entries, _, err := w.db.AuditLog(t.Context(), store.AuditFilter{}, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range entries {
		for p := range seen {
			if p != store.DefaultHotspotPassword && (bytes.Contains(a.Before, []byte(p)) || bytes.Contains(a.After, []byte(p))) {
				t.Fatalf("audit entry %d (%s) holds a password", a.ID, a.Action)
			}
		}
	}
	w.do("PUT", path, w.editor, map[string]any{"internetAccess": true}).wantError(http.StatusBadRequest, nameBadRequest, "hotspotEnabled is required")
}

func TestWifiPassword(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	on := w.do("PUT", "/v2/devices/"+w.imeis[0]+"/hotspot", w.partnerToken, map[string]any{"hotspotEnabled": true}).want(http.StatusOK).str("data.password")
	r := w.do("POST", "/v2/devices/wifi-password", w.editor, map[string]any{"imeis": []string{w.imeis[0], w.imeis[1], w.otherIMEI}}).want(http.StatusOK)
	devices := r.list("data.devices")
	if len(devices) != 2 || r.str("data.devices.0.imei") != w.imeis[0] || r.str("data.devices.0.password") != on || r.get("data.devices.0.hotspotEnabled") != true ||
		r.str("data.devices.1.password") != store.DefaultHotspotPassword || r.get("data.devices.1.hotspotEnabled") != false {
		t.Fatalf("answer %s", r.raw)
	}
	if len(r.list("data.rejected")) != 1 || r.str("data.rejected.0.imei") != w.otherIMEI {
		t.Fatalf("rejected %s", r.raw)
	}
	w.do("POST", "/v2/devices/wifi-password", w.viewer, map[string]any{"imeis": w.imeis}).wantError(http.StatusForbidden, nameForbidden, "viewer")
	many := make([]string, maxWifiPasswordIMEIs+1)
	for i := range many {
		many[i] = worldIMEI(50 + i)
	}
	w.do("POST", "/v2/devices/wifi-password", w.partnerToken, map[string]any{"imeis": many}).wantError(http.StatusBadRequest, nameBadRequest, "at most 100")
}
