package cloudapi

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

var hexKey = regexp.MustCompile(`^[0-9a-f]{32}$`)

// keyReads counts the audit entries of recording key reads of imei.
func keyReads(e *fleetEnv, imei string) int {
	e.t.Helper()
	entries, _, err := e.db.AuditLog(e.t.Context(), store.AuditFilter{Action: actionKeyRead, EntityID: imei}, store.Page{})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(entries)
}

func TestDeviceRecordingKeys(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// keyRefusals counts the audit entries of refused recording key reads of entityID.
func keyRefusals(e *fleetEnv, entityID string) int {
	e.t.Helper()
	entries, _, err := e.db.AuditLog(e.t.Context(), store.AuditFilter{Action: actionKeyRefuse, EntityID: entityID}, store.Page{})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(entries)
}

// TestRecordingKeysByAccessLevel reads both key routes as every access
// level of organization users and partner contacts: a recording key
// decrypts recordings, so whoever may not see media may not read it, and
// each refusal is audited as the reads are.
func TestRecordingKeysByAccessLevel(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	e.addOrgUser(e.org.ID, "nomedia@one.example", "Secret123", store.AccessEditorWithoutMediaAccess)
	_, contactEditor := e.newContact(e.partnerToken, e.partnerID, "editor@partner.example", store.AccessEditor)
	_, contactNoMedia := e.newContact(e.partnerToken, e.partnerID, "nomedia@partner.example", store.AccessEditorWithoutMediaAccess)
	_, contactViewer := e.newContact(e.partnerToken, e.partnerID, "viewer@partner.example", store.AccessViewer)
	imei := e.devices[0]
	orgID := itoa(e.org.ID)
	tests := []struct {
		name   string
		token  string
		status int
		level  string
	}{
		{"organization editor", e.adminToken, http.StatusOK, ""},
		{"organization editorWithoutMediaAccess", e.login("nomedia@one.example", "Secret123"), http.StatusForbidden, store.AccessEditorWithoutMediaAccess},
		{"organization viewer", e.viewerToken, http.StatusForbidden, store.AccessViewer},
		{"partner", e.partnerToken, http.StatusOK, ""},
		{"partner contact editor", contactEditor, http.StatusOK, ""},
		{"partner contact editorWithoutMediaAccess", contactNoMedia, http.StatusForbidden, store.AccessEditorWithoutMediaAccess},
		{"partner contact viewer", contactViewer, http.StatusForbidden, store.AccessViewer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reads, devRefusals, orgRefusals := keyReads(e, imei), keyRefusals(e, imei), keyRefusals(e, orgID)
			dev := e.do("GET", devPath(imei, "/recording-encryption-keys"), tc.token, nil)
			org := e.do("POST", orgPath(e.org.ID, "/get-recording-encryption-keys"), tc.token, map[string]any{"imeis": []string{imei}})
			if tc.status == http.StatusOK {
				if !hexKey.MatchString(dev.want(http.StatusOK).str("active.key")) || !hexKey.MatchString(org.want(http.StatusOK).str("keys.0.key")) {
					t.Fatalf("keys: %s; %s", dev.raw, org.raw)
				}
				if n := keyReads(e, imei); n != reads+2 || keyRefusals(e, imei) != devRefusals || keyRefusals(e, orgID) != orgRefusals {
					t.Fatalf("%d audited reads, want %d, and no refusals", n, reads+2)
				}
				return
			}
			for _, r := range []*response{dev, org} {
				r.wantError(http.StatusForbidden, nameForbidden, tc.level, "recording encryption keys")
				if strings.Contains(string(r.raw), `"key"`) {
					t.Fatalf("a refusal carries a key: %s", r.raw)
				}
			}
			if n := keyReads(e, imei); n != reads {
				t.Fatalf("%d audited reads after refusals, want %d", n, reads)
			}
			if keyRefusals(e, imei) != devRefusals+1 || keyRefusals(e, orgID) != orgRefusals+1 {
				t.Fatalf("refusals audited: device %d (was %d), organization %d (was %d)",
					keyRefusals(e, imei), devRefusals, keyRefusals(e, orgID), orgRefusals)
			}
		})
	}
	// The refusal is the caller's tenant's to read, with its reason.
	r := e.do("GET", "/v2/audit-logs?action="+actionKeyRefuse+"&imei="+imei, e.adminToken, nil).want(http.StatusOK)
	if !strings.Contains(string(r.raw), "editorWithoutMediaAccess access level cannot read recording encryption keys") {
		t.Fatalf("the organization's audit log: %s", r.raw)
	}
}

func TestGenerateEncryptionKey(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	a := e.do("PUT", "/v2/generate-encryption-key", e.adminToken, nil).want(http.StatusOK).str("generatedKey")
	b := e.do("PUT", "/v2/generate-encryption-key", e.partnerToken, nil).want(http.StatusOK).str("generatedKey")
	if !hexKey.MatchString(a) || !hexKey.MatchString(b) || a == b {
		t.Fatalf("generated keys %q and %q", a, b)
	}
	e.do("PUT", "/v2/generate-encryption-key", e.viewerToken, nil).wantError(http.StatusForbidden, nameForbidden)
	e.do("PUT", "/v2/generate-encryption-key", "", nil).wantError(http.StatusUnauthorized, nameUnauthorized)
}
