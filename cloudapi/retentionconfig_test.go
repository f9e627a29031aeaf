package cloudapi

import (
	"net/http"
	"slices"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestRetentionConfig(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	imei := e.devices[0]
	path := devPath(imei, "/retention-config")
	type cam struct{ id, minutes float64 }
	config := func(token string) []cam {
		t.Helper()
		var out []cam
		r := e.do("GET", path, token, nil).want(http.StatusOK)
		for i := range r.list("data.config") {
			out = append(out, cam{r.num("data.config." + itoa(int64(i)) + ".cameraId"), r.num("data.config." + itoa(int64(i)) + ".retentionMinutes")})
		}
		return out
	}
	// Neither the device nor its organization set one: every camera has
	// the default the device is given.
	def := float64(store.DefaultDeviceRetentionMinutes)
	if got := config(e.viewerToken); !slices.Equal(got, []cam{{1, def}, {2, def}}) {
		t.Fatalf("retention without any set: %v", got)
	}
	e.fleetUpdate(func(tx *store.Tx) error {
		e.org.Retention.DeviceRetentionMinutes = 600
		return tx.UpdateOrganization(e.org)
	})
	if got := config(e.viewerToken); !slices.Equal(got, []cam{{1, 600}, {2, 600}}) {
		t.Fatalf("the organization's retention: %v", got)
	}
	body := map[string]any{"config": []map[string]any{{"cameraId": 2, "retentionMinutes": 45}}}
	e.do("PUT", path, e.adminToken, body).want(http.StatusOK)
	if got := config(e.partnerToken); !slices.Equal(got, []cam{{1, 600}, {2, 45}}) {
		t.Fatalf("after PUT: %v", got)
	}
	if _, _, pushed := e.cmd.snapshot(); !slices.Contains(pushed, imei) {
		t.Fatalf("configuration not pushed: %v", pushed)
	}
	entries, _, err := e.db.AuditLog(t.Context(), store.AuditFilter{Action: "device.retentionConfig", EntityID: imei}, store.Page{})
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit entries %v %v", entries, err)
	}
	// [] gives every camera back to the organization's retention.
	e.do("PUT", path, e.partnerToken, map[string]any{"config": []any{}}).want(http.StatusOK)
	if got := config(e.adminToken); !slices.Equal(got, []cam{{1, 600}, {2, 600}}) {
		t.Fatalf("after clearing: %v", got)
	}

	e.do("PUT", path, e.viewerToken, body).wantError(http.StatusForbidden, nameForbidden)
	e.do("PUT", path, e.rivalToken, body).wantError(http.StatusNotFound, nameNotFound)
	e.do("PUT", devPath(e.devices[3], "/retention-config"), e.adminToken, body).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", path, e.org2Token, nil).wantError(http.StatusNotFound, nameNotFound)
	for _, bad := range []struct {
		body  any
		field string
	}{
		{map[string]any{}, "config"},
		{map[string]any{"config": []map[string]any{{"cameraId": 1, "retentionMinutes": 3}}}, "config[0].retentionMinutes"},
		{map[string]any{"config": []map[string]any{{"cameraId": 1, "retentionMinutes": 30}, {"cameraId": 7, "retentionMinutes": 30}}}, "config[1].cameraId"},
		{map[string]any{"config": []map[string]any{{"cameraId": 50, "retentionMinutes": 30}}}, "paired"},
		{map[string]any{"config": []map[string]any{{"retentionMinutes": 30}}}, "config[0].cameraId"},
		{map[string]any{"config": []map[string]any{{"cameraId": 1, "retentionMinutes": 4.5}}}, "retentionMinutes"},
	} {
		e.do("PUT", path, e.adminToken, bad.body).wantError(http.StatusBadRequest, nameBadRequest, bad.field)
	}
	if got := config(e.adminToken); !slices.Equal(got, []cam{{1, 600}, {2, 600}}) {
		t.Fatalf("refused writes changed the retention: %v", got)
	}
}

// TestDeviceRetentionIsWhatDevicesApply: every answer that shows an
// organization or its default settings gives deviceRetentionMinutes as
// the retention its devices are given, a value the reference contract
// admits (at least 4): store.DefaultDeviceRetentionMinutes for an
// organization that never set one, else the one it set.
func TestDeviceRetentionIsWhatDevicesApply(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	check := func(want int) {
		t.Helper()
		shown := map[string]float64{
			"GET /organizations/{orgId}":                  e.do("GET", orgPath(e.org.ID, ""), e.adminToken, nil).want(http.StatusOK).num("data.deviceRetentionMinutes"),
			"GET /organizations/{orgId}/default-settings": e.do("GET", orgPath(e.org.ID, "/default-settings"), e.adminToken, nil).want(http.StatusOK).num("data.deviceRetentionMinutes"),
		}
		list := e.do("GET", "/v2/organizations", e.partnerToken, nil).want(http.StatusOK)
		for i := range list.list("data") {
			at := "data." + itoa(int64(i))
			if int64(list.num(at+".id")) == e.org.ID {
				shown["GET /organizations"] = list.num(at + ".deviceRetentionMinutes")
			}
		}
		if len(shown) != 3 {
			t.Fatalf("the organization list does not show organization %d: %s", e.org.ID, list.raw)
		}
		for op, got := range shown {
			if got != float64(want) {
				t.Errorf("%s: deviceRetentionMinutes %v, want %d", op, got, want)
			}
		}
		e.fleetView(func(tx *store.Tx) error {
			eff, err := tx.EffectiveSettings(e.devices[0])
			if err == nil && eff.RetentionMinutes != want {
				t.Errorf("the device is given %d minutes, want %d", eff.RetentionMinutes, want)
			}
			return err
		})
	}
	check(store.DefaultDeviceRetentionMinutes)
	e.do("PATCH", orgPath(e.org.ID, ""), e.partnerToken, map[string]any{"deviceRetentionMinutes": 240}).want(http.StatusOK)
	check(240)
}
