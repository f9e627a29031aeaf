package cloudapi

import (
	"net/http"
	"testing"
)

// TestListFiltersRefuseEmptyAndUnknownValues gives every list filter that
// takes a fixed set of values an empty and an unknown value: each is a 400
// naming the filter and listing what it takes, and a known value passes.
func TestListFiltersRefuseEmptyAndUnknownValues(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	dev := e.devices[0]
	events := "/v2/devices/" + dev + "/events?start=2026-02-28T00:00:00Z&end=2026-03-01T00:00:00Z&"
	deliveries := "/v2/organizations/" + itoa(e.org.ID) + "/webhook-deliveries?"
	for _, tc := range []struct {
		name, path, filter, known, listed string
	}{
		{"event status", events, "status", "new", "new, resolved"},
		{"alarm severity", "/v2/alarms?", "alarmDefinitionSeverity", "30", "10, 20, 30, 40, 50, 60"},
		{"alarm definition", "/v2/alarms?", "alarmDefinitionId", "1002", "1001"},
		{"alarm order", "/v2/alarms?", "order", "asc", "asc, desc"},
		{"driver activity", q("/v2/drivers", e.org.ID) + "&", "driverIsActive", "false", "true, false"},
		{"delivery status", deliveries, "status", "failed", "pending, delivered, failed"},
		{"delivery type", deliveries, "type", "gps", "gps, event"},
		{"audit entity type", q("/v2/audit-logs", e.org.ID) + "&", "entityType", "device", "account, address, alarm, device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.do("GET", tc.path+tc.filter+"=", e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, tc.filter+" must be", tc.listed)
			e.do("GET", tc.path+tc.filter+"=bogus", e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, tc.filter+" must be", tc.listed)
			e.do("GET", tc.path+tc.filter+"="+tc.known, e.partnerToken, nil).want(http.StatusOK)
		})
	}
	t.Run("alarm flags", func(t *testing.T) {
		e.do("GET", "/v2/alarms?open=false", e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "open is a flag", `"false"`)
		e.do("GET", "/v2/alarms?unread=no", e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "unread is a flag")
		e.do("GET", "/v2/alarms?open&unread=true", e.partnerToken, nil).want(http.StatusOK)
	})
}
