package cloudapi

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

var hexKey = regexp.MustCompile(`^[0-9a-f]{32}$`)

// keyReads counts the audit entries of recording key reads of imei.
func keyReads(e *fleetEnv, imei string) int {
	e.t.Helper()
	entries, _, err := e.db.AuditLog(e.t.Context(), store.AuditFilter{Action: "device.recordingKey.read", EntityID: imei}, store.Page{})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(entries)
}

func TestDeviceRecordingKeys(t *testing.T) {
	e := newFleetEnv(t)
	path := devPath(e.devices[0], "/recording-encryption-keys")
	r := e.do("GET", path, e.adminToken, nil).want(http.StatusOK)
	key := r.str("active.key")
	if !hexKey.MatchString(key) || r.str("active.algorithm") != recordingKeyAlgorithm || r.get("active.confirmedByDevice") != false ||
		len(r.list("keyHistory")) != 1 || r.str("keyHistory.0.key") != key || r.str("active.createdAt") == "" {
		t.Fatalf("keys: %s", r.raw)
	}
	// The key is derived, not random: the same on every read; another device's differs.
	if again := e.do("GET", path, e.partnerToken, nil).want(http.StatusOK).str("active.key"); again != key {
		t.Fatalf("key changed between reads: %s, %s", key, again)
	}
	if other := e.do("GET", devPath(e.devices[1], "/recording-encryption-keys"), e.adminToken, nil).want(http.StatusOK).str("active.key"); other == key {
		t.Fatal("two devices share a recording key")
	}
	if n := keyReads(e, e.devices[0]); n != 2 {
		t.Fatalf("%d audited reads, want 2", n)
	}
	// A device that leaves and rejoins its organization gets a new key.
	e.fleetUpdate(func(tx *store.Tx) error {
		if err := tx.RemoveDevice(e.devices[0]); err != nil {
			return err
		}
		return tx.AddDevice(&store.Device{IMEI: e.devices[0], Name: "Truck 1", OrganizationID: e.org.ID, PartnerID: e.partnerID})
	})
	if fresh := e.do("GET", path, e.adminToken, nil).want(http.StatusOK).str("active.key"); fresh == key || !hexKey.MatchString(fresh) {
		t.Fatalf("key of the new ownership %q, the old one %q", fresh, key)
	}
	e.do("GET", path, e.viewerToken, nil).wantError(http.StatusForbidden, nameForbidden, "viewer")
	e.do("GET", path, e.rivalToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", path, e.org2Token, nil).wantError(http.StatusNotFound, nameNotFound)
	if n := keyReads(e, e.devices[0]); n != 3 {
		t.Fatalf("%d audited reads after refused calls, want 3", n)
	}
}

func TestOrganizationRecordingKeys(t *testing.T) {
	e := newFleetEnv(t)
	path := orgPath(e.org.ID, "/get-recording-encryption-keys")
	single := e.do("GET", devPath(e.devices[1], "/recording-encryption-keys"), e.adminToken, nil).want(http.StatusOK).str("active.key")

	r := e.do("POST", path, e.partnerToken, nil).want(http.StatusOK)
	if len(r.list("keys")) != 3 || r.str("keys.1.imei") != e.devices[1] || r.str("keys.1.key") != single || r.get("keys.1.confirmedByDevice") != false {
		t.Fatalf("every device's key: %s", r.raw)
	}
	r = e.do("POST", path, e.adminToken, map[string]any{"imeis": []string{e.devices[2]}}).want(http.StatusOK)
	if len(r.list("keys")) != 1 || r.str("keys.0.imei") != e.devices[2] || !hexKey.MatchString(r.str("keys.0.key")) {
		t.Fatalf("one device's key: %s", r.raw)
	}
	if n := keyReads(e, e.devices[2]); n != 2 {
		t.Fatalf("%d audited reads of device 3, want 2", n)
	}
	e.do("POST", path, e.adminToken, map[string]any{"imeis": []string{e.devices[3]}}).wantError(http.StatusNotFound, nameNotFound, e.devices[3])
	e.do("POST", path, e.adminToken, map[string]any{"imeis": "all"}).wantError(http.StatusBadRequest, nameBadRequest, "imeis")
	e.do("POST", path, e.viewerToken, nil).wantError(http.StatusForbidden, nameForbidden, "viewer")
	e.do("POST", path, e.rivalToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", path, e.org2Token, nil).wantError(http.StatusNotFound, nameNotFound)
}

func TestGenerateEncryptionKey(t *testing.T) {
	e := newFleetEnv(t)
	a := e.do("PUT", "/v2/generate-encryption-key", e.adminToken, nil).want(http.StatusOK).str("generatedKey")
	b := e.do("PUT", "/v2/generate-encryption-key", e.partnerToken, nil).want(http.StatusOK).str("generatedKey")
	if !hexKey.MatchString(a) || !hexKey.MatchString(b) || a == b {
		t.Fatalf("generated keys %q and %q", a, b)
	}
	e.do("PUT", "/v2/generate-encryption-key", e.viewerToken, nil).wantError(http.StatusForbidden, nameForbidden)
	e.do("PUT", "/v2/generate-encryption-key", "", nil).wantError(http.StatusUnauthorized, nameUnauthorized)
}
