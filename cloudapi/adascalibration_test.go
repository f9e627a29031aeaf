package cloudapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// ackConfig records that imei acknowledged its current configuration version.
func (w *deviceWorld) ackConfig(imei string) {
	w.t.Helper()
	err := w.db.Update(w.t.Context(), store.Actor{Source: "device"}, func(tx *store.Tx) error {
		ds, err := tx.DeviceSettings(imei)
		if err != nil {
			return err
		}
		dl, err := tx.DeviceLink(imei)
		if errors.Is(err, store.ErrNotFound) {
			dl, err = &store.DeviceLink{IMEI: imei}, nil
		}
		if err != nil {
			return err
		}
		dl.AckedConfigVersion, dl.ConfigAckedAt = ds.Version, w.clock.Now()
		return tx.PutDeviceLink(dl)
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// calibrationReply scripts the device's answer to both calibration commands.
func (w *deviceWorld) calibrationReply(state string) {
	reply := func(string) (json.RawMessage, error) {
		return json.Marshal(protocol.AdasCalibrationResult{State: state})
	}
	w.cmd.reply(protocol.CmdAdasCalibrate, reply)
	w.cmd.reply(protocol.CmdAdasCalibrationState, reply)
}

func TestManualADASCalibration(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	imei := w.imeis[0]
	r := w.do("GET", devPath(imei, "/calibrate-adas"), w.viewer, nil).want(http.StatusOK)
	if r.str("data.status") != "none" || r.num("data.measurements.cameraHeight") != 0 || r.str("data.featureStatuses.followingDistance") != "pending" {
		t.Fatalf("before any calibration: %s", r.raw)
	}
	w.do("GET", devPath(imei, "/calibrate-adas/state"), w.viewer, nil).wantError(http.StatusNotFound, nameNotFound, "calibration")
	if r := w.do("GET", devPath(imei, "/auto-calibration/status"), w.viewer, nil).want(http.StatusOK); r.str("status") != "notStarted" {
		t.Fatalf("status %s", r.raw)
	}
	body := map[string]any{"cameraHeight": 150, "cameraOffset": -20, "vehicleWidth": 185.5}
	w.do("PUT", devPath(imei, "/calibrate-adas"), w.editor, body).want(http.StatusOK)
	r = w.do("GET", devPath(imei, "/calibrate-adas"), w.viewer, nil).want(http.StatusOK)
	if r.str("data.status") != "ready" || r.num("data.measurements.vehicleWidth") != 185.5 || r.num("data.measurements.cameraOffset") != -20 {
		t.Fatalf("after PUT: %s", r.raw)
	}
	if r := w.do("GET", devPath(imei, "/auto-calibration/status"), w.viewer, nil).want(http.StatusOK); r.str("status") != "pending" || r.str("type") != "manual" {
		t.Fatalf("status before the device acknowledged: %s", r.raw)
	}
	if _, _, pushed := w.cmd.take(); !slices.Contains(pushed, imei) {
		t.Fatal("the measurements were not pushed")
	}
	w.ackConfig(imei)
	r = w.do("GET", devPath(imei, "/calibrate-adas"), w.viewer, nil).want(http.StatusOK)
	if r.str("data.status") != "completed" || r.str("data.featureStatuses.criticalDistance") != "active" {
		t.Fatalf("after the device acknowledged: %s", r.raw)
	}
	if r := w.do("GET", devPath(imei, "/calibrate-adas/state"), w.viewer, nil).want(http.StatusOK); r.str("data") != "completed" {
		t.Fatalf("state %s", r.raw)
	}
	points := map[string]any{"cameraHeight": 150, "cameraOffset": 0, "vehicleWidth": 180, "lowestUsableRow": 600,
		"calpickTopLeftCol": 600, "calpickTopLeftRow": 400, "calpickBottomLeftCol": 300, "calpickBottomLeftRow": 650,
		"calpickTopRightCol": 680, "calpickTopRightRow": 400, "calpickBottomRightCol": 1000, "calpickBottomRightRow": 650}
	w.do("PUT", devPath(imei, "/calibrate-adas"), w.editor, points).want(http.StatusOK)
	if _, e := w.settings(imei); e.Control.ADAS.Points == nil || e.Control.ADAS.Points.CalpickBottomRightCol != 1000 {
		t.Fatalf("points %+v", e.Control.ADAS)
	}
	with := func(k string, v any) map[string]any {
		out := map[string]any{}
		for key, val := range points {
			out[key] = val
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{with("cameraHeight", 99), "cameraHeight"},
		{with("cameraHeight", nil), "cameraHeight"},
		{with("cameraOffset", 201), "cameraOffset"},
		{with("vehicleWidth", 401), "vehicleWidth"},
		{with("calpickTopRightRow", nil), "calpickTopRightRow"},
		{with("calpickBottomRightCol", 1280), "calpickBottomRightCol"},
		{with("calpickTopLeftCol", 100), "calpickTopLeftCol"},
		{with("colour", "red"), "colour"},
	} {
		w.do("PUT", devPath(imei, "/calibrate-adas"), w.editor, tc.body).wantError(http.StatusBadRequest, nameBadRequest, tc.field)
	}
	w.do("PUT", devPath(imei, "/calibrate-adas"), w.viewer, body).wantError(http.StatusForbidden, nameForbidden)
	w.do("PUT", devPath(w.otherIMEI, "/calibrate-adas"), w.editor, body).wantError(http.StatusNotFound, nameNotFound)
	w.do("GET", devPath(w.otherIMEI, "/calibrate-adas"), w.editor, nil).wantError(http.StatusNotFound, nameNotFound)
	w.do("GET", devPath(w.otherIMEI, "/calibrate-adas/state"), w.editor, nil).wantError(http.StatusNotFound, nameNotFound)
	w.do("GET", devPath(w.otherIMEI, "/auto-calibration/status"), w.editor, nil).wantError(http.StatusNotFound, nameNotFound)
}

func TestADASCalibrationNow(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	online, offline := w.imeis[0], w.imeis[1]
	w.cmd.setOnline(online, true)
	w.calibrationReply(protocol.CalibrationPending)
	r := w.do("POST", devPath(online, "/calibrate-adas"), w.editor, nil).want(http.StatusOK)
	if r.str("data.state") != "pending" {
		t.Fatalf("answer %s", r.raw)
	}
	sent, _, _ := w.cmd.take()
	if len(sent) != 1 || sent[0].Name != protocol.CmdAdasCalibrate || sent[0].Args.(protocol.AdasCalibrateArgs).Type != protocol.CalibrationAuto {
		t.Fatalf("sent %+v", sent)
	}
	// Still calibrating: the device is asked, and a second calibration refused.
	w.do("POST", devPath(online, "/calibrate-adas"), w.editor, nil).wantError(http.StatusConflict, nameConflict, "calibrating")
	if sent, _, _ := w.cmd.take(); len(sent) != 1 || sent[0].Name != protocol.CmdAdasCalibrationState {
		t.Fatalf("sent %+v", sent)
	}
	if r := w.do("GET", devPath(online, "/auto-calibration/status"), w.viewer, nil).want(http.StatusOK); r.str("status") != "pending" || r.str("type") != "auto" {
		t.Fatalf("status %s", r.raw)
	}
	w.calibrationReply(protocol.CalibrationCompleted)
	if r := w.do("GET", devPath(online, "/calibrate-adas/state"), w.viewer, nil).want(http.StatusOK); r.str("data") != "completed" {
		t.Fatalf("state %s", r.raw)
	}
	if _, e := w.settings(online); e.Control.Calibration.State != store.CalibrationCompleted {
		t.Fatalf("stored %+v: the state the device reported is kept", e.Control.Calibration)
	}
	w.cmd.take()
	if r := w.do("GET", devPath(online, "/calibrate-adas/state"), w.viewer, nil).want(http.StatusOK); r.str("data") != "completed" {
		t.Fatalf("state %s", r.raw)
	}
	if sent, _, _ := w.cmd.take(); len(sent) != 0 {
		t.Fatalf("a completed calibration was asked about: %+v", sent)
	}
	if a := w.audit("device.adasCalibrate"); len(a) != 1 {
		t.Fatalf("audit %+v", a)
	}
	w.do("POST", devPath(offline, "/calibrate-adas"), w.editor, nil).wantError(http.StatusExpectationFailed, nameExpectationFailed)
	w.do("POST", devPath(online, "/calibrate-adas"), w.viewer, nil).wantError(http.StatusForbidden, nameForbidden)
	w.do("POST", devPath(w.otherIMEI, "/calibrate-adas"), w.editor, nil).wantError(http.StatusNotFound, nameNotFound)
}

func TestAutoRecalibrate(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 3)
	online, offline, failing := w.imeis[0], w.imeis[1], w.imeis[2]
	w.cmd.setOnline(online, true)
	w.cmd.setOnline(failing, true)
	w.cmd.reply(protocol.CmdAdasCalibrate, func(imei string) (json.RawMessage, error) {
		if imei == failing {
			return nil, fmt.Errorf("%w: no images", ErrCommandFailed)
		}
		return json.Marshal(protocol.AdasCalibrationResult{State: protocol.CalibrationCompleted})
	})
	r := w.do("POST", "/v2/devices/auto-recalibrate", w.editor, map[string]any{"imeis": []string{online, offline, failing, w.otherIMEI}}).
		want(http.StatusOK)
	if got := strs(r.list("data.accepted")); !slices.Equal(got, []string{online}) {
		t.Fatalf("accepted %v; %s", got, r.raw)
	}
	rejected := map[string]string{}
	for i := range r.list("data.rejected") {
		rejected[r.str(fmt.Sprintf("data.rejected.%d.imei", i))] = r.str(fmt.Sprintf("data.rejected.%d.reason", i))
	}
	if len(rejected) != 3 || rejected[offline] == "" || rejected[failing] == "" || rejected[w.otherIMEI] == "" {
		t.Fatalf("rejected %v", rejected)
	}
	if r := w.do("GET", devPath(online, "/auto-calibration/status"), w.viewer, nil).want(http.StatusOK); r.str("type") != "auto_recalibration" || r.str("status") != "completed" {
		t.Fatalf("status %s", r.raw)
	}
	if sent, _, _ := w.cmd.take(); len(sent) != 2 || sent[0].Args.(protocol.AdasCalibrateArgs).Type != protocol.CalibrationRecalibration {
		t.Fatalf("sent %+v", sent)
	}
	w.do("POST", "/v2/devices/auto-recalibrate", w.editor, map[string]any{"imeis": []string{}}).wantError(http.StatusBadRequest, nameBadRequest, "imeis")
	w.do("POST", "/v2/devices/auto-recalibrate", w.viewer, map[string]any{"imeis": []string{online}}).wantError(http.StatusForbidden, nameForbidden)
}

func TestAutoCalibrationConfig(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	own, inherits := w.imeis[0], w.imeis[1]
	auto := func(imei string) bool { _, e := w.settings(imei); return store.Enabled(e.Control.AutoCalibration) }
	cfg := func(enabled bool, typ string, value any) map[string]any {
		return map[string]any{"enabled": enabled, "entityType": typ, "entityValue": value}
	}
	const path = "/v2/devices/auto-calibration/config"
	w.do("POST", path, w.editor, cfg(true, "organization", w.orgID)).want(http.StatusOK)
	if !auto(own) || !auto(inherits) {
		t.Fatal("the organization default does not reach its devices")
	}
	w.do("POST", path, w.editor, cfg(false, "device", own)).want(http.StatusOK)
	if auto(own) || !auto(inherits) {
		t.Fatal("a device's own switch does not win over the organization's")
	}
	w.do("POST", path, w.partnerToken, cfg(false, "partner", w.partnerID)).want(http.StatusOK)
	if auto(inherits) {
		t.Fatal("the partner level does not reach the partner's organizations")
	}
	if _, e := w.settings(w.otherIMEI); e.Control.AutoCalibration != nil {
		t.Fatal("another partner's device was changed")
	}
	if _, _, pushed := w.cmd.take(); !slices.Contains(pushed, inherits) {
		t.Fatalf("pushed %v", pushed)
	}
	if a := w.audit("organization.autoCalibration"); len(a) != 2 {
		t.Fatalf("audited %d organization changes, want 2", len(a))
	}
	w.do("POST", path, w.editor, cfg(true, "partner", w.partnerID)).wantError(http.StatusNotFound, nameNotFound)
	w.do("POST", path, w.partnerToken, cfg(true, "organization", w.otherOrgID)).wantError(http.StatusNotFound, nameNotFound)
	w.do("POST", path, w.partnerToken, cfg(true, "device", w.otherIMEI)).wantError(http.StatusNotFound, nameNotFound)
	w.do("POST", path, w.editor, cfg(true, "fleet", 1)).wantError(http.StatusBadRequest, nameBadRequest, "entityType")
	w.do("POST", path, w.editor, cfg(true, "organization", "x")).wantError(http.StatusBadRequest, nameBadRequest, "entityValue")
	w.do("POST", path, w.editor, map[string]any{"entityType": "device", "entityValue": own}).wantError(http.StatusBadRequest, nameBadRequest, "enabled")
	w.do("POST", path, w.viewer, cfg(true, "device", own)).wantError(http.StatusForbidden, nameForbidden)
}

func TestCalibrateAccelerometer(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 3)
	grouped, ungrouped, offline := w.imeis[0], w.imeis[1], w.imeis[2]
	for _, imei := range []string{grouped, ungrouped} {
		w.cmd.setOnline(imei, true)
	}
	g := w.do("POST", orgPath(w.orgID, "/groups"), w.editor, map[string]any{"name": "Vans"}).want(http.StatusOK).id("data.id")
	w.do("POST", orgPath(w.orgID, "/groups/"+idStr(g)+"/devices"), w.editor, []string{grouped}).want(http.StatusOK)
	path := orgPath(w.orgID, "/devices/calibrate-accelerometer")
	r := w.do("POST", path, w.editor, map[string]any{"groups": []int64{g}, "imeis": []string{offline, w.otherIMEI}}).want(http.StatusOK)
	if got := strs(r.list("data.accepted")); !slices.Equal(got, []string{grouped}) || len(r.list("data.rejected")) != 2 {
		t.Fatalf("answer %s", r.raw)
	}
	r = w.do("POST", path, w.editor, map[string]any{"ungrouped": true}).want(http.StatusOK)
	if got := strs(r.list("data.accepted")); !slices.Equal(got, []string{ungrouped}) || r.str("data.rejected.0.imei") != offline {
		t.Fatalf("ungrouped: %s", r.raw)
	}
	sent, _, _ := w.cmd.take()
	if len(sent) != 2 || sent[0].Name != protocol.CmdCalibrateAccelerometer || sent[1].IMEI != ungrouped {
		t.Fatalf("sent %+v", sent)
	}
	if a := w.audit("device.calibrateAccelerometer"); len(a) != 2 {
		t.Fatalf("audit %+v", a)
	}
	w.do("POST", path, w.editor, map[string]any{}).wantError(http.StatusBadRequest, nameBadRequest, "imeis")
	otherGroup := int64(999999)
	w.do("POST", path, w.editor, map[string]any{"groups": []int64{otherGroup}}).wantError(http.StatusBadRequest, nameBadRequest, "groups[0]")
	w.do("POST", path, w.viewer, map[string]any{"ungrouped": true}).wantError(http.StatusForbidden, nameForbidden)
	w.do("POST", orgPath(w.otherOrgID, "/devices/calibrate-accelerometer"), w.editor, map[string]any{"ungrouped": true}).
		wantError(http.StatusNotFound, nameNotFound)
}

// TestAutoCalibrationGuestPartner: a guest partner of a shared organization
// switches auto-calibration of its own device there, not the host's default.
func TestAutoCalibrationGuestPartner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tokB, org := e.sharedOrg()
	devB := e.newDevice(tokB, org.id, testIMEI(2), "B van")
	cfg := func(typ string, value any) map[string]any {
		return map[string]any{"enabled": true, "entityType": typ, "entityValue": value}
	}
	e.do("POST", "/v2/devices/auto-calibration/config", tokB, cfg("organization", org.id)).wantError(http.StatusForbidden, nameForbidden)
	e.do("POST", "/v2/devices/auto-calibration/config", tokB, cfg("device", devB)).want(http.StatusOK)
	e.do("POST", "/v2/devices/auto-calibration/config", e.partnerToken, cfg("organization", org.id)).want(http.StatusOK)
	var os *store.OrgSettings
	e.db.View(t.Context(), func(tx *store.Tx) (err error) { os, err = tx.OrgSettings(org.id); return err })
	if os.Control == nil || !store.Enabled(os.Control.AutoCalibration) {
		t.Fatalf("host's default %+v", os.Control)
	}
}
