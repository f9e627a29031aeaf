package cloudapi

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// dataEnv is the fleet with a presence table: devices[0] connected and
// reported its health (no SD card, recording test passed, ADAS
// calibrated, cellular usage) and paired auxiliary camera 50;
// devices[1] connected and reported a failed recording test; the others
// never connected.
type dataEnv struct {
	*fleetEnv
	pres *fakePresence
	t0   time.Time
}

func newDataEnv(t *testing.T) *dataEnv {
	t.Helper()
	pres := &fakePresence{m: map[string]DeviceConnection{}}
	e := &dataEnv{fleetEnv: newFleetEnv(t, func(_ *configs.Config, d *Deps) { d.Presence = pres }), pres: pres}
	// devices[1] reports an hour before devices[0]; t0 is the later report.
	e.fleetUpdate(func(tx *store.Tx) error {
		d1, err := tx.Device(e.devices[1])
		if err != nil {
			return err
		}
		_, err = tx.ApplyStatusReport(d1, store.DeviceHealth{SDCard: &store.SDCardHealth{Present: true, Healthy: true},
			RecordingTest: "failed", ReportedAt: e.clock.Now()})
		return err
	})
	e.clock.Advance(time.Hour)
	e.t0 = e.clock.Now()
	calibrated := true
	e.pres.set(e.devices[0], DeviceConnection{Status: ConnectionOnline, LastSeen: e.t0, FirmwareVersion: "3.14.2"})
	e.pres.set(e.devices[1], DeviceConnection{Status: ConnectionOffline, LastSeen: e.t0.Add(-48 * time.Hour), FirmwareVersion: "3.12.0"})
	e.fleetUpdate(func(tx *store.Tx) error {
		d0, err := tx.Device(e.devices[0])
		if err != nil {
			return err
		}
		if _, err := tx.ApplyStatusReport(d0, store.DeviceHealth{SDCard: &store.SDCardHealth{Present: false}, RecordingTest: "passed",
			AdasCalibrated: &calibrated, ReportedAt: e.t0,
			DataUsage: &store.DataUsage{PeriodStart: time.Date(2026, 2, 15, 0, 0, 0, 0, time.UTC), BytesUp: 1_500_000, BytesDown: 2_250_000}}); err != nil {
			return err
		}
		return tx.RecordAuxPairing(d0, []store.AuxCamera{{CameraID: 50, SerialNumber: "AUX-50"}})
	})
	return e
}

func TestDeviceTelemetry(t *testing.T) {
	t.Parallel()
	e := newDataEnv(t)
	r := e.do("GET", devPath(e.devices[0], "/telemetry"), e.viewerToken, nil).want(http.StatusOK)
	if r.str("data.firmwareVersion") != "3.14.2" || r.str("data.lastSeenOnline") != isoTime(e.t0) || r.str("data.status") != ConnectionOnline ||
		r.get("data.sdCardInserted") != false || r.get("data.calibrationCompleted") != true || r.str("data.simState") != "unknown" ||
		len(r.list("data.auxCameras")) != 1 || r.num("data.auxCameras.0.cameraId") != 50 || r.str("data.auxCameras.0.state") != "notConnected" {
		t.Fatalf("telemetry of the reporting device: %s", r.raw)
	}
	r = e.do("GET", devPath(e.devices[1], "/telemetry"), e.adminToken, nil).want(http.StatusOK)
	if r.get("data.sdCardInserted") != true || r.get("data.calibrationCompleted") != false || r.str("data.status") != ConnectionOffline {
		t.Fatalf("telemetry of the offline device: %s", r.raw)
	}
	e.do("GET", devPath(e.devices[2], "/telemetry"), e.adminToken, nil).wantError(http.StatusExpectationFailed, nameExpectationFailed, "never connected")
	e.do("GET", devPath(e.devices[0], "/telemetry"), e.rivalToken, nil).wantError(404, nameNotFound)
	e.do("GET", devPath(e.devices[0], "/telemetry"), e.org2Token, nil).wantError(404, nameNotFound)
}

func TestCameraTelemetry(t *testing.T) {
	t.Parallel()
	e := newDataEnv(t)
	imei := e.devices[0]
	code := func(camera string) string {
		t.Helper()
		return e.do("GET", devPath(imei, "/"+camera+"/telemetry"), e.adminToken, nil).want(http.StatusOK).str("data.code")
	}
	if c := code("1"); c != codeLiveNotReady {
		t.Fatalf("camera 1 without a stream: %s", c)
	}
	st, _ := e.api.live.Begin(imei, 2, 0)
	if c := code("2"); c != codeLiveNotReady {
		t.Fatalf("camera 2 before its first frame: %s", c)
	}
	st.Publish([]byte("frame"))
	if c2, c0, c1 := code("2"), code("0"), code("1"); c2 != codeLiveReady || c0 != codeLiveReady || c1 != codeLiveNotReady {
		t.Fatalf("streaming camera 2: camera 2 %s, every camera %s, camera 1 %s", c2, c0, c1)
	}
	e.api.live.End(st)
	if c := code("2"); c != codeLiveNotReady {
		t.Fatalf("camera 2 after its stream ended: %s", c)
	}
	if c := code("50"); c != codeLiveNotReady {
		t.Fatalf("paired auxiliary camera: %s", c)
	}
	e.do("GET", devPath(imei, "/51/telemetry"), e.adminToken, nil).wantError(404, nameNotFound, "51")
	e.do("GET", devPath(imei, "/3/telemetry"), e.adminToken, nil).wantError(400, nameBadRequest, "cameraId")
	e.do("GET", devPath(imei, "/1/telemetry"), e.rivalToken, nil).wantError(404, nameNotFound)
}

func TestDataUsageReport(t *testing.T) {
	t.Parallel()
	e := newDataEnv(t)
	r := e.do("GET", "/v2/device-data-usage", e.adminToken, nil).want(http.StatusOK)
	if r.num("metadata.count") != 3 || r.str("data.0.imei") != e.devices[0] || r.num("data.0.dataUsageMegabytes") != 3.75 ||
		r.str("data.0.billingDate") != "2026-02-15" || r.str("data.0.firmwareVersion") != "3.14.2" || r.str("data.1.billingDate") != "" {
		t.Fatalf("report of organization one: %s", r.raw)
	}
	// A partner covers all its organizations, or the one it names.
	if n := e.do("GET", "/v2/device-data-usage", e.partnerToken, nil).want(http.StatusOK).num("metadata.count"); n != 4 {
		t.Fatalf("partner report counts %v devices, want 4", n)
	}
	if n := e.do("GET", q("/v2/device-data-usage", e.org2.ID), e.partnerToken, nil).want(http.StatusOK).num("metadata.count"); n != 1 {
		t.Fatalf("organization two counts %v devices, want 1", n)
	}
	r = e.do("GET", "/v2/device-data-usage?limit=1&offset=1&name=truck", e.adminToken, nil).want(http.StatusOK)
	if r.num("metadata.count") != 3 || len(r.list("data")) != 1 || r.str("data.0.imei") != e.devices[1] {
		t.Fatalf("second page: %s", r.raw)
	}
	if n := e.do("GET", "/v2/device-data-usage?imei="+e.devices[2], e.adminToken, nil).want(http.StatusOK).num("metadata.count"); n != 1 {
		t.Fatalf("imei filter counts %v", n)
	}
	e.do("GET", q("/v2/device-data-usage", e.org.ID), e.rivalToken, nil).wantError(404, nameNotFound)
	e.do("GET", q("/v2/device-data-usage", e.org2.ID), e.adminToken, nil).wantError(404, nameNotFound)
	e.do("GET", "/v2/device-data-usage?organizationId=x", e.partnerToken, nil).wantError(400, nameBadRequest, "organizationId")
	e.do("GET", "/v2/device-data-usage?limit=0", e.adminToken, nil).wantError(400, nameBadRequest, "limit")
}

func TestBulkAndOrganizationDataUsage(t *testing.T) {
	t.Parallel()
	e := newDataEnv(t)
	r := e.do("POST", "/v2/devices/bulk-data-usage", e.viewerToken, map[string]any{"imeis": []string{e.devices[0], e.devices[1]}}).want(http.StatusOK)
	if len(r.list("data")) != 2 || r.num("data.0.mobileTx") != 1_500_000 || r.num("data.0.mobileRx") != 2_250_000 ||
		r.str("data.0.receivedAt") != isoTime(e.t0) || r.str("data.1.imei") != e.devices[1] || r.get("data.1.receivedAt") != nil {
		t.Fatalf("bulk usage: %s", r.raw)
	}
	e.do("POST", "/v2/devices/bulk-data-usage", e.adminToken, map[string]any{"imeis": []string{e.devices[0], e.devices[3]}}).
		wantError(404, nameNotFound, e.devices[3])
	e.do("POST", "/v2/devices/bulk-data-usage", e.adminToken, map[string]any{"imeis": []string{}}).wantError(400, nameBadRequest, "imeis")
	e.do("POST", "/v2/devices/bulk-data-usage", e.adminToken, map[string]any{"imei": e.devices[0]}).wantError(400, nameBadRequest, "imei")

	path := orgPath(e.org.ID, "/devices-data-usage")
	r = e.do("GET", path, e.partnerToken, nil).want(http.StatusOK)
	if r.num("metadata.count") != 3 || r.num("metadata.limit") != 100 || r.num("data.0.mobileTx") != 1_500_000 {
		t.Fatalf("organization usage: %s", r.raw)
	}
	if r := e.do("GET", path+"?limit=2&offset=2", e.adminToken, nil).want(http.StatusOK); len(r.list("data")) != 1 || r.str("data.0.imei") != e.devices[2] {
		t.Fatalf("last page: %s", r.raw)
	}
	e.do("GET", path+"?limit=201", e.partnerToken, nil).wantError(400, nameBadRequest, "limit")
	e.do("GET", path, e.rivalToken, nil).wantError(404, nameNotFound)
	e.do("GET", path, e.org2Token, nil).wantError(404, nameNotFound)
}

func TestDeviceHealthReport(t *testing.T) {
	t.Parallel()
	e := newDataEnv(t)
	r := e.do("GET", "/v2/device-health?sort=imei&order=asc", e.adminToken, nil).want(http.StatusOK)
	if r.num("metadata.count") != 3 || r.str("data.0.imei") != e.devices[0] || r.str("data.0.lastConnectedAt") != isoTime(e.t0) ||
		r.get("data.0.lastRecordingHealth") != true || r.get("data.0.calibrationCompleted") != true || r.num("data.0.auxNum") != 1 ||
		r.str("data.0.auxiliaryCameras.0.auxSerial") != "AUX-50" || len(r.list("data.0.alarms")) != 1 ||
		r.str("data.0.alarms.0.code") != itoa(store.AlarmSDCardMissing) {
		t.Fatalf("health of the reporting device: %s", r.raw)
	}
	if r.get("data.1.lastRecordingHealth") != false || r.str("data.1.alarms.0.code") != itoa(store.AlarmRecordingFailed) ||
		r.get("data.2.lastConnectedAt") != nil || r.get("data.2.lastRecordingHealth") != nil {
		t.Fatalf("health of the other devices: %s", r.raw)
	}
	only := func(path, token string, want ...string) {
		t.Helper()
		r := e.do("GET", path, token, nil).want(http.StatusOK)
		if got := imeis(r); !slices.Equal(got, want) {
			t.Fatalf("%s lists %v, want %v", path, got, want)
		}
	}
	only("/v2/device-health?lastRecordingHealth=1", e.adminToken, e.devices[0])
	only("/v2/device-health?lastRecordingHealth=0", e.adminToken, e.devices[1])
	only("/v2/device-health?lastRecordingHealth=-1", e.adminToken, e.devices[2])
	only("/v2/device-health?sort=lastConnectedAt&order=desc&limit=2", e.adminToken, e.devices[0], e.devices[1])
	only("/v2/device-health?lastConnectedAtStart="+isoTime(e.t0.Add(-time.Hour))+"&lastConnectedAtEnd="+isoTime(e.t0), e.adminToken, e.devices[0])
	only("/v2/device-health?lastRecordingUpdatedAtStart="+isoTime(e.t0.Add(-2*time.Hour))+"&lastRecordingUpdatedAtEnd="+isoTime(e.t0.Add(-time.Minute)),
		e.adminToken, e.devices[1])
	only("/v2/device-health?billingStatus=suspended", e.adminToken)
	only(q("/v2/device-health?order=asc", e.org2.ID), e.partnerToken, e.devices[3])

	e.do("GET", "/v2/device-health?lastConnectedAtStart="+isoTime(e.t0), e.adminToken, nil).wantError(400, nameBadRequest, "lastConnectedAtEnd")
	e.do("GET", "/v2/device-health?lastRecordingHealth=2", e.adminToken, nil).wantError(400, nameBadRequest, "lastRecordingHealth")
	e.do("GET", "/v2/device-health?sort=speed", e.adminToken, nil).wantError(400, nameBadRequest, "sort")
	e.do("GET", q("/v2/device-health", e.org.ID), e.rivalToken, nil).wantError(404, nameNotFound)
}

func TestAssociatedDevices(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	r := e.do("POST", "/v2/associated-devices", e.viewerToken, map[string]any{"imeis": []string{e.devices[1], e.devices[0], e.devices[1]}}).
		want(http.StatusOK)
	if got := imeis(r); !slices.Equal(got, []string{e.devices[1], e.devices[0]}) || r.get("data.0.associatedDevice") != nil {
		t.Fatalf("associated devices: %s", r.raw)
	}
	if _, given := r.get("data.0").(map[string]any)["associatedDevice"]; !given {
		t.Fatalf("associatedDevice left out: %s", r.raw)
	}
	e.do("POST", "/v2/associated-devices", e.adminToken, map[string]any{"imeis": []string{e.devices[0], e.rivalDevices[0]}}).
		wantError(http.StatusNotFound, nameNotFound, e.rivalDevices[0])
	e.do("POST", "/v2/associated-devices", e.partnerToken, map[string]any{"imeis": []string{}}).wantError(http.StatusBadRequest, nameBadRequest, "imeis")
}
