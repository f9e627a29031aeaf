package cloudapi

import (
	"net/http"
	"net/url"
	"testing"
)

// TestEveryTimeFollowsOneRule sends a time without a zone to every time
// parameter and time member, and an end before its start to every call
// that takes a range: each is a 400 naming the parameter.
func TestEveryTimeFollowsOneRule(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	e.do("POST", "/v2/drivers", e.adminToken, data(driverItem(0, "a"))).want(http.StatusCreated)
	dev := e.devices[0]
	const zoneless, early, late = "2026-02-28T08:00:00", "2026-02-28T08:00:00Z", "2026-02-28T09:00:00+02:00"
	query := func(path, start, end string) string {
		return path + "start=" + url.QueryEscape(start) + "&end=" + url.QueryEscape(end)
	}
	ranges := []struct {
		name, method, path string
		valid              int // the status of a valid range
	}{
		{"alarms", "GET", "/v2/alarms?", 200},
		{"device events", "GET", "/v2/devices/" + dev + "/events?", 200},
		{"organization events", "POST", q("/v2/organizations/"+itoa(e.org.ID)+"/events", e.org.ID) + "&", 200},
		{"gps", "GET", "/v2/devices/" + dev + "/gps?", 200},
		{"driving history", "GET", q("/v2/driving-history", e.org.ID) + "&", 200},
		{"audit log", "GET", q("/v2/audit-logs", e.org.ID) + "&", 200},
		// The test device does not answer: past the checks, it is offline.
		{"recording ranges", "GET", "/v2/devices/" + dev + "/recording-ranges?", http.StatusExpectationFailed},
	}
	for _, r := range ranges {
		t.Run(r.name, func(t *testing.T) {
			e.do(r.method, query(r.path, zoneless, late), e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "start has no time zone")
			e.do(r.method, query(r.path, early, zoneless), e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "end has no time zone")
			e.do(r.method, query(r.path, "", late), e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "start", "ISO 8601")
			// 09:00+02:00 is 07:00Z, an hour before the start.
			e.do(r.method, query(r.path, early, late), e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "end must not be before start")
			e.do(r.method, query(r.path, "2026-02-28T06:00:00.5+00:00", late), e.partnerToken, nil).want(r.valid)
		})
	}
	e.do("GET", "/v2/alarms?end=", e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "end is given empty: leave it out")
	members := []struct {
		name, path, field string
		body              map[string]any
	}{
		{"virtual event", "/v2/devices/" + dev + "/virtual-event", "time", map[string]any{"time": zoneless}},
		{"alarm simulation", "/v2/devices/" + dev + "/alarm-simulator", "createdAt", map[string]any{"alarmDefinitionId": 1002, "createdAt": zoneless}},
		{"driver assignment", "/v2/drivers/devices", "data[0].startTime", data(map[string]any{"driverThirdPartyId": "a", "imei": dev, "startTime": zoneless})},
	}
	for _, m := range members {
		t.Run(m.name, func(t *testing.T) {
			e.do("POST", m.path, e.adminToken, m.body).wantError(http.StatusBadRequest, nameBadRequest, m.field+" has no time zone", "2026-03-01T12:00:00Z")
		})
	}
}
