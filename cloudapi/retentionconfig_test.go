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
	// Neither the device nor its organization bounds the retention.
	if got := config(e.viewerToken); got != nil {
		t.Fatalf("retention without any: %v", got)
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
