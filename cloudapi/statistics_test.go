package cloudapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// TestOperationalStatistics checks every member against values computed by
// hand from the seeded fleet: the partner's org one (3 devices) and org two
// (1 device), all created on Sunday 2026-03-01, and the rival's device.
func TestOperationalStatistics(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	adas := true
	e.fleetUpdate(func(tx *store.Tx) error {
		if err := tx.SetBillingStatus(e.devices[0], store.DeviceActivated); err != nil {
			return err
		}
		d1, _ := tx.Device(e.devices[1])
		if _, err := tx.ApplyHealthAlarms(d1, store.DeviceHealth{RecordingTest: "failed"}); err != nil {
			return err
		}
		d3, _ := tx.Device(e.devices[3])
		d3.ProductType = "AI-14"
		if err := tx.UpdateDevice(d3, "device.productType.report"); err != nil {
			return err
		}
		if _, err := tx.ApplyHealthAlarms(d3, store.DeviceHealth{RecordingTest: "passed", AdasCalibrated: &adas}); err != nil {
			return err
		}
		rival, _ := tx.Device(e.rivalDevices[0])
		_, err := tx.ApplyHealthAlarms(rival, store.DeviceHealth{RecordingTest: "failed"})
		return err
	})
	e.clock.Advance(time.Hour)
	r := e.do("GET", "/v2/partners/operational-statistics?months=1&weeks=0", e.partnerToken, nil).want(http.StatusOK)
	if r.str("requestId") == "" {
		t.Fatal("no requestId")
	}
	org1, org2 := float64(e.org.ID), float64(e.org2.ID)
	want := map[string]any{
		"devices": map[string]any{"total": 4, "activated": 1, "deactivated": 0, "pendingActivation": 3, "suspended": 0},
		"trends": map[string]any{
			"activations": map[string]any{"total": 1,
				"previousMonths": []any{
					map[string]any{"monthsAgo": 0, "startTime": "2026-03-01T00:00:00.000Z", "endTime": "2026-04-01T00:00:00.000Z", "count": 1},
					map[string]any{"monthsAgo": 1, "startTime": "2026-02-01T00:00:00.000Z", "endTime": "2026-03-01T00:00:00.000Z", "count": 0}},
				"previousWeeks": []any{
					map[string]any{"weeksAgo": 0, "startTime": "2026-02-23T00:00:00.000Z", "endTime": "2026-03-02T00:00:00.000Z", "count": 1}}},
			"organizations": map[string]any{"total": 2,
				"previousMonths": []any{
					map[string]any{"monthsAgo": 0, "startTime": "2026-03-01T00:00:00.000Z", "endTime": "2026-04-01T00:00:00.000Z", "count": 2},
					map[string]any{"monthsAgo": 1, "startTime": "2026-02-01T00:00:00.000Z", "endTime": "2026-03-01T00:00:00.000Z", "count": 0}},
				"previousWeeks": []any{
					map[string]any{"weeksAgo": 0, "startTime": "2026-02-23T00:00:00.000Z", "endTime": "2026-03-02T00:00:00.000Z", "count": 2}}},
		},
		"devicesByOrganization": []any{map[string]any{"organizationId": org1, "name": "Fleet one", "count": 3},
			map[string]any{"organizationId": org2, "name": "Fleet two", "count": 1}},
		"recordingHealthFailedByOrganization": []any{map[string]any{"organizationId": org1, "name": "Fleet one", "count": 1},
			map[string]any{"organizationId": org2, "name": "Fleet two", "count": 0}},
		"recordingHealthSummary": []any{map[string]any{"recordingTestResult": "passed", "count": 1},
			map[string]any{"recordingTestResult": "failed", "count": 1}, map[string]any{"recordingTestResult": "notTested", "count": 2}},
		"alarmsByOrganization": []any{map[string]any{"organizationId": org1, "name": "Fleet one", "count": 1},
			map[string]any{"organizationId": org2, "name": "Fleet two", "count": 0}},
		"alarmsByType": []any{
			map[string]any{"alarmDefinitionId": 1001, "name": "Recording health test failed", "count": 1},
			map[string]any{"alarmDefinitionId": 1002, "name": "SD card missing", "count": 0},
			map[string]any{"alarmDefinitionId": 1003, "name": "SD card failing", "count": 0},
			map[string]any{"alarmDefinitionId": 1004, "name": "Camera disconnected", "count": 0},
			map[string]any{"alarmDefinitionId": 1005, "name": "Power disconnected", "count": 0},
			map[string]any{"alarmDefinitionId": 1006, "name": "Device offline for a long time", "count": 0}},
		"adasCalibrationSummary": []any{map[string]any{"productType": "AI-12", "totalDevice": 0, "adasCalibrationCount": 0},
			map[string]any{"productType": "AI-14", "totalDevice": 1, "adasCalibrationCount": 1}},
	}
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(r.get("data"))
	var w, g any
	json.Unmarshal(wantJSON, &w)
	json.Unmarshal(gotJSON, &g)
	wj, _ := json.MarshalIndent(w, "", " ")
	gj, _ := json.MarshalIndent(g, "", " ")
	if string(wj) != string(gj) {
		t.Fatalf("statistics\n%s\nwant\n%s", gj, wj)
	}

	rival := e.do("GET", "/v2/partners/operational-statistics", e.rivalToken, nil).want(http.StatusOK)
	if rival.num("data.devices.total") != 1 || len(rival.list("data.trends.activations.previousMonths")) != 2 ||
		len(rival.list("data.trends.activations.previousWeeks")) != 2 || rival.num("data.alarmsByType.0.count") != 1 {
		t.Fatalf("rival statistics %s", rival.raw)
	}
	for _, bad := range []string{"months=-1", "months=37", "weeks=157", "weeks=x", "months=1.5"} {
		e.do("GET", "/v2/partners/operational-statistics?"+bad, e.partnerToken, nil).wantError(400, nameBadRequest, bad[:5])
	}
	e.do("GET", "/v2/partners/operational-statistics", e.adminToken, nil).wantError(403, nameForbidden, "partners")
	e.do("GET", "/v2/partners/operational-statistics", "", nil).wantError(401, nameUnauthorized)
}

func TestDeviceDataUsage(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	dev := e.devices[0]
	r := e.do("GET", "/v2/devices/"+dev+"/data-usage", e.viewerToken, nil).want(http.StatusOK)
	if r.str("requestId") == "" || r.str("data.imei") != dev || r.get("data.receivedAt") != nil || len(r.list("data.periods")) != 0 {
		t.Fatalf("no usage yet %s", r.raw)
	}
	feb, mar := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, u := range []store.DataUsage{{PeriodStart: feb, BytesUp: 100, BytesDown: 900}, {PeriodStart: mar, BytesUp: 5, BytesDown: 50}} {
		e.fleetUpdate(func(tx *store.Tx) error { return tx.RecordDataUsage(dev, u) })
	}
	r = e.do("GET", "/v2/devices/"+dev+"/data-usage", e.partnerToken, nil).want(http.StatusOK)
	if r.num("data.mobileTx") != 5 || r.num("data.mobileRx") != 50 || r.str("data.periodStart") != "2026-03-01T00:00:00.000Z" ||
		len(r.list("data.periods")) != 2 || r.num("data.periods.1.mobileRx") != 900 || r.str("data.receivedAt") != isoTime(e.clock.Now()) {
		t.Fatalf("usage %s", r.raw)
	}
	if r.num("data.usageEventsTodayDay") != 0 || r.num("data.usageEventsTodayMonth") != 0 || r.get("data.liveStreamingUsage") != float64(0) {
		t.Fatalf("usage without events %s", r.raw)
	}
	// The events of this UTC day and of this month are counted.
	e.clock.Advance(20 * time.Hour) // 2026-03-02T08:00Z, the tokens still valid
	for i, at := range []time.Time{time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)} {
		e.fleetUpdate(func(tx *store.Tx) error {
			d, err := tx.Device(dev)
			if err != nil {
				return err
			}
			return broker.IngestEvent(tx, d, protocol.Event{ID: fmt.Sprint("usage-", i), Type: "button", Time: at.UnixMilli()})
		})
	}
	r = e.do("GET", "/v2/devices/"+dev+"/data-usage", e.partnerToken, nil).want(http.StatusOK)
	if r.num("data.usageEventsTodayDay") != 1 || r.num("data.usageEventsTodayMonth") != 2 {
		t.Fatalf("events counted %s", r.raw)
	}
	e.do("GET", "/v2/devices/"+dev+"/data-usage", e.org2Token, nil).wantError(404, nameNotFound)
	e.do("GET", "/v2/devices/"+dev+"/data-usage", e.rivalToken, nil).wantError(404, nameNotFound)
}
