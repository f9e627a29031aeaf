package cloudapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// auxDevice answers the auxiliary camera commands like a dashcam with two
// cameras in range; pairing assigns ids from 50.
func auxDevice(imei, name string, args any) (json.RawMessage, error) {
	switch name {
	case protocol.CmdAuxSearch:
		return json.Marshal(protocol.AuxCamerasResult{Cameras: []protocol.AuxCameraInfo{
			{SSID: "AUX-1", Kind: "wifi"}, {SSID: "AUX-2", Kind: "wifi"}}})
	case protocol.CmdAuxPair:
		var out protocol.AuxCamerasResult
		for i, ssid := range args.(protocol.AuxPairArgs).SSIDs {
			out.Cameras = append(out.Cameras, protocol.AuxCameraInfo{CameraID: 50 + i, SSID: ssid, SerialNumber: "SN-" + ssid, Kind: "wifi"})
		}
		return json.Marshal(out)
	case protocol.CmdAuxUnpair:
		return nil, nil
	}
	return nil, ErrDeviceOffline
}

func TestAuxiliaryCameraPairing(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	dev := e.devices[0]
	base := "/v2/devices/" + dev + "/auxiliary-cameras"
	pair := map[string]any{"auxiliaryCameras": []map[string]any{{"ssid": "AUX-1"}}}
	e.do("POST", base+"/pair", e.partnerToken, pair).wantError(417, nameExpectationFailed, "online")
	e.cmd.reply = auxDevice

	e.do("POST", base+"/pair", e.adminToken, pair).wantError(403, nameForbidden, "partners")
	e.do("POST", base+"/pair", e.rivalToken, pair).wantError(404, nameNotFound)
	e.do("POST", base+"/pair", e.partnerToken, map[string]any{"auxiliaryCameras": []map[string]any{}}).wantError(400, nameBadRequest, "auxiliaryCameras")
	e.do("POST", base+"/pair", e.partnerToken, map[string]any{"auxiliaryCameras": []map[string]any{{"cameraId": 50}}}).wantError(400, nameBadRequest, "ssid")
	e.do("GET", base+"/search?limit=9", e.partnerToken, nil).wantError(400, nameBadRequest, "limit")

	r := e.do("GET", base+"/search?limit=1", e.partnerToken, nil).want(http.StatusOK)
	if len(r.list("data.auxiliaryCameras")) != 1 || r.str("data.auxiliaryCameras.0.ssid") != "AUX-1" {
		t.Fatalf("search %s", r.raw)
	}
	r = e.do("POST", base+"/pair", e.partnerToken, pair).want(http.StatusOK)
	if r.num("data.auxiliaryCameras.0.cameraId") != 50 || r.str("data.auxiliaryCameras.0.serialNumber") != "SN-AUX-1" {
		t.Fatalf("pair %s", r.raw)
	}
	r = e.do("GET", base, e.partnerToken, nil).want(http.StatusOK)
	if len(r.list("data")) != 1 || r.get("data.0.paired") != true {
		t.Fatalf("cameras %s", r.raw)
	}
	// The device reports the camera connected: one system and one activation message.
	e.fleetUpdate(func(tx *store.Tx) error {
		d, _ := tx.Device(dev)
		return tx.ApplyAuxCameraStatus(d, []store.CameraHealth{{ID: 50, Connected: true, Kind: "wifi", SerialNumber: "SN-AUX-1"}})
	})
	e.do("POST", base+"/unpair", e.partnerToken, map[string]any{"auxiliaryCameras": []map[string]any{{"serialNumber": "nope"}}}).
		wantError(404, nameNotFound, "nope")
	e.do("POST", base+"/unpair", e.partnerToken, map[string]any{"auxiliaryCameras": []map[string]any{{"serialNumber": "SN-AUX-1", "cameraId": 50}}}).
		wantError(400, nameBadRequest, "serialNumber or by cameraId")
	r = e.do("POST", base+"/unpair", e.partnerToken, map[string]any{"auxiliaryCameras": []map[string]any{{"cameraId": 50}}}).want(http.StatusOK)
	if r.num("data.unpaired.0") != 50 {
		t.Fatalf("unpair %s", r.raw)
	}
	msgs := allMessages(t, e.db)
	var statuses []string
	activations := 0
	for _, m := range msgs {
		switch {
		case m.Kind == store.MessageSystem && (m.SubType == store.SystemAuxCameraStatus || m.SubType == store.SystemAuxCameraPairing):
			switch {
			case m.AuxSearch != nil:
				statuses = append(statuses, "searchCompleted")
			case m.AuxCamera != nil:
				statuses = append(statuses, m.AuxCamera.Status)
			}
		case m.Kind == store.MessageActivation:
			activations++
		}
	}
	if strings.Join(statuses, ",") != "searchCompleted,paired,connected,unpaired" || activations != 1 {
		t.Fatalf("system messages %v, activation messages %d", statuses, activations)
	}
	_, sent, _ := e.cmd.snapshot()
	if len(sent) != 4 || sent[3] != dev+" "+protocol.CmdAuxUnpair {
		t.Fatalf("commands %v", sent)
	}
}

func TestAuxiliaryBilling(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	withCam, noCam, refurb := e.devices[0], e.devices[1], e.devices[2]
	e.fleetUpdate(func(tx *store.Tx) error {
		d, _ := tx.Device(withCam)
		if err := tx.RecordAuxPairing(d, []store.AuxCamera{{CameraID: 50}}); err != nil {
			return err
		}
		d, _ = tx.Device(refurb)
		if err := tx.RecordAuxPairing(d, []store.AuxCamera{{CameraID: 50}}); err != nil {
			return err
		}
		return tx.SetRefurbished(refurb, true)
	})
	status := func(token string, body any) *response {
		return e.do("POST", "/v2/auxiliary-cameras/billing-status", token, body)
	}
	r := status(e.partnerToken, map[string]any{"imeis": []string{withCam, "357660100000999", e.rivalDevices[0]}}).want(http.StatusOK)
	if len(r.list("data")) != 1 || r.str("data.0.imei") != withCam || r.str("data.0.auxBillingStatus") != "disable" ||
		r.get("data.0.auxBillingStatusUpdatedAt") != nil || len(r.list("devices")) != 1 {
		t.Fatalf("status %s", r.raw)
	}
	status(e.partnerToken, map[string]any{"imeis": []string{"357660100000999", e.rivalDevices[0]}}).wantError(404, nameNotFound)
	status(e.adminToken, map[string]any{"imeis": []string{withCam}}).wantError(403, nameForbidden, "partners")
	status(e.partnerToken, map[string]any{"imeis": []string{}}).wantError(400, nameBadRequest, "imeis")
	status(e.partnerToken, map[string]any{"imeis": []string{withCam, withCam}}).wantError(400, nameBadRequest, "imeis[1]")
	status(e.partnerToken, map[string]any{"organizationId": e.rivalOrg.ID}).wantError(404, nameNotFound)
	if n := len(status(e.partnerToken, map[string]any{"organizationId": e.org.ID}).want(http.StatusOK).list("data")); n != 3 {
		t.Fatalf("organization status lists %d devices, want 3", n)
	}

	set := func(path string, body any) *response { return e.do("POST", path, e.partnerToken, body) }
	set("/v2/auxiliary-cameras/billing", map[string]any{"imeis": []string{withCam}}).wantError(400, nameBadRequest, "billingStatus")
	r = set("/v2/devices/auxiliary-cameras/billing", map[string]any{"billingStatus": "enable",
		"imeis": []string{withCam, noCam, refurb, e.rivalDevices[0]}}).want(http.StatusOK)
	if len(r.list("data.success")) != 1 || r.str("data.success.0") != withCam || len(r.list("data.rejected")) != 3 {
		t.Fatalf("enable %s", r.raw)
	}
	codes := map[string]float64{}
	for i := range r.list("data.rejected") {
		codes[r.str(fmt.Sprintf("data.rejected.%d.imei", i))] = r.num(fmt.Sprintf("data.rejected.%d.errorCode", i))
	}
	if codes[noCam] != 400 || codes[refurb] != 409 || codes[e.rivalDevices[0]] != 404 {
		t.Fatalf("rejection codes %v", codes)
	}
	r = status(e.partnerToken, map[string]any{"imeis": []string{withCam}}).want(http.StatusOK)
	if r.str("data.0.auxBillingStatus") != "enable" || r.str("data.0.auxBillingStatusUpdatedAt") != isoTime(e.clock.Now()) {
		t.Fatalf("after enable %s", r.raw)
	}
	// The reference contract's path answers the same.
	alias := e.do("POST", "/v2/devices/auxiliary-cameras/billing-status", e.partnerToken, map[string]any{"imeis": []string{withCam}}).want(http.StatusOK)
	if alias.str("data.0.imei") != withCam || alias.str("data.0.auxBillingStatus") != "enable" || len(alias.list("devices")) != 1 {
		t.Fatalf("billing status at /v2/devices/auxiliary-cameras/billing-status %s", alias.raw)
	}
	set("/v2/auxiliary-cameras/billing", map[string]any{"billingStatus": "disable", "organizationId": e.org.ID}).want(http.StatusOK)
}

func TestDeviceBillingStatusAndDataProfile(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	dev, refurb := e.devices[0], e.devices[2]
	e.fleetUpdate(func(tx *store.Tx) error { return tx.SetRefurbished(refurb, true) })
	r := e.do("GET", "/v2/devices/"+dev+"/billing-status", e.partnerToken, nil).want(http.StatusOK)
	if r.str("data.imei") != dev || r.str("data.billingStatus") != "pendingActivation" || r.get("data.automaticFirmwareUpdates") != true {
		t.Fatalf("billing status %s", r.raw)
	}
	e.do("GET", "/v2/devices/"+dev+"/billing-status", e.adminToken, nil).wantError(403, nameForbidden)
	e.do("GET", "/v2/devices/"+dev+"/billing-status", e.rivalToken, nil).wantError(404, nameNotFound)
	e.do("PUT", "/v2/devices/"+dev+"/billing-status/activated", e.partnerToken, nil).wantError(400, nameBadRequest, "billingStatus")
	r = e.do("PUT", "/v2/devices/"+dev+"/billing-status/suspended", e.partnerToken, nil).want(http.StatusOK)
	if r.str("data.billingStatus") != "suspended" {
		t.Fatalf("after PUT %s", r.raw)
	}
	e.do("PUT", "/v2/devices/"+refurb+"/billing-status/suspended", e.partnerToken, nil).wantError(409, nameConflict, "refurbished")
	r = e.do("PUT", "/v2/devices/billing-status/deactivated", e.partnerToken, map[string]any{"imeis": []string{dev, refurb, e.rivalDevices[0]}}).
		want(http.StatusOK)
	if len(r.list("data.accepted")) != 1 || len(r.list("data.rejected")) != 2 {
		t.Fatalf("bulk %s", r.raw)
	}
	r = e.do("GET", "/v2/organizations/"+itoa(e.org.ID)+"/devices/billing-status?limit=2", e.partnerToken, nil).want(http.StatusOK)
	if r.num("metadata.count") != 3 || len(r.list("data")) != 2 || r.str("data.0.billingStatus") != "deactivated" {
		t.Fatalf("organization billing %s", r.raw)
	}
	e.do("GET", "/v2/organizations/"+itoa(e.rivalOrg.ID)+"/devices/billing-status", e.partnerToken, nil).wantError(404, nameNotFound)

	// Data profile: the subscription id with its audit entry.
	e.do("PUT", "/v2/devices/"+dev+"/data-profile/x", e.partnerToken, nil).wantError(400, nameBadRequest, "dataProfileId")
	r = e.do("PUT", "/v2/devices/"+dev+"/data-profile/12", e.partnerToken, nil).want(http.StatusOK)
	if r.num("data.dataProfileId") != 12 || r.get("data.automaticFirmwareUpdates") != false {
		t.Fatalf("data profile %s", r.raw)
	}
	entries, _, _ := e.db.AuditLog(t.Context(), store.AuditFilter{Action: "device.subscription.update", EntityID: dev}, store.Page{})
	if len(entries) != 1 || entries[0].UserEmail != "partner@example.com" || !strings.Contains(entries[0].Reason, "data-profile") ||
		string(entries[0].Before) != `{"subscriptionId":0,"automaticFirmwareUpdates":true}` ||
		string(entries[0].After) != `{"subscriptionId":12,"automaticFirmwareUpdates":false}` {
		t.Fatalf("audit %+v", entries)
	}
	r = e.do("PUT", "/v2/devices/data-profile/3", e.partnerToken, map[string]any{"imeis": []string{dev, e.rivalDevices[0]}}).want(http.StatusOK)
	if len(r.list("data.accepted")) != 1 || r.num("data.rejected.0.errorCode") != 1001 {
		t.Fatalf("bulk data profile %s", r.raw)
	}
	r = e.do("PUT", "/v2/organizations/"+itoa(e.org.ID)+"/devices/data-profile/4", e.partnerToken, nil).want(http.StatusOK)
	if r.num("data.updated") != 3 {
		t.Fatalf("organization data profile %s", r.raw)
	}
	e.do("PUT", "/v2/organizations/"+itoa(e.org2.ID)+"/data-profile", e.partnerToken, map[string]any{"defaultDataProfileId": 0}).
		wantError(400, nameBadRequest, "defaultDataProfileId")
	e.do("PUT", "/v2/organizations/"+itoa(e.org2.ID)+"/data-profile", e.partnerToken, map[string]any{"defaultDataProfileId": 7}).want(http.StatusOK)
	if r := e.do("GET", "/v2/organizations/"+itoa(e.org2.ID)+"/data-profile", e.partnerToken, nil); r.num("data.defaultDataProfileId") != 7 {
		t.Fatalf("default data profile %s", r.raw)
	}
	// A device added later gets the organization default.
	added := e.fleetDevice(20, e.org2.ID, e.partnerID)
	if r := e.do("GET", "/v2/devices/"+added+"/billing-status", e.partnerToken, nil); r.num("data.dataProfileId") != 7 {
		t.Fatalf("device added to org two %s", r.raw)
	}
	if r := e.do("GET", "/v2/devices/"+e.devices[3]+"/billing-status", e.partnerToken, nil); r.num("data.dataProfileId") != 0 {
		t.Fatalf("existing device of org two changed without the organization profile: %s", r.raw)
	}
}

// TestBulkBillingAnswers holds the bulk billing calls to their per-IMEI
// answers: IMEIs not found or not the partner's first, in list order, then
// the devices the change refused, each with its code and reason.
func TestBulkBillingAnswers(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	dev, noCam, refurb, rival := e.devices[0], e.devices[1], e.devices[2], e.rivalDevices[0]
	unknown := "357660100000999"
	e.fleetUpdate(func(tx *store.Tx) error {
		for _, imei := range []string{dev, refurb} {
			d, _ := tx.Device(imei)
			if err := tx.RecordAuxPairing(d, []store.AuxCamera{{CameraID: 50}}); err != nil {
				return err
			}
		}
		return tx.SetRefurbished(refurb, true)
	})
	notFound := func(imei string, code int) map[string]any {
		return map[string]any{"imei": imei, "reason": "the IMEI was not found", "errorCode": code}
	}
	refurbished := func(code int) map[string]any {
		return map[string]any{"imei": refurb, "reason": "the device is refurbished; its billing cannot change", "errorCode": code}
	}
	imeis := []string{rival, dev, unknown, noCam, refurb, "12345"}
	tests := []struct {
		name, method, path string
		body               map[string]any
		want               map[string]any
		action             string
		audited            []string
	}{
		{"auxiliary billing", "POST", "/v2/auxiliary-cameras/billing", map[string]any{"imeis": imeis, "billingStatus": "enable"},
			map[string]any{"success": []string{dev}, "rejected": []map[string]any{notFound(rival, 404), notFound(unknown, 404), notFound("12345", 404),
				{"imei": noCam, "reason": "the auxiliary camera was not found", "errorCode": 400}, refurbished(409)}},
			"device.auxiliaryBilling", []string{dev}},
		{"billing status", "PUT", "/v2/devices/billing-status/suspended", map[string]any{"imeis": imeis},
			map[string]any{"accepted": []string{dev, noCam}, "rejected": []map[string]any{notFound(rival, rejectNotFound),
				notFound(unknown, rejectNotFound), notFound("12345", rejectNotFound), refurbished(rejectRefurbished)}},
			"device.billingStatus", []string{dev, noCam}},
		{"data profile", "PUT", "/v2/devices/data-profile/12", map[string]any{"imeis": imeis},
			map[string]any{"accepted": []string{dev, noCam, refurb}, "rejected": []map[string]any{notFound(rival, rejectNotFound),
				notFound(unknown, rejectNotFound), notFound("12345", rejectNotFound)}},
			"device.subscription.update", []string{dev, noCam, refurb}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, e.partnerToken, tc.body).want(http.StatusOK)
			sameJSON(t, "answer", r.get("data"), tc.want)
			entries, _, _ := e.db.AuditLog(t.Context(), store.AuditFilter{Action: tc.action}, store.Page{})
			var got []string
			for _, a := range entries {
				got = append(got, a.EntityID)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.audited))
			if !slices.Equal(got, want) {
				t.Fatalf("audited %v, want %v", got, want)
			}
		})
	}
	// A repeated IMEI is refused before anything changes.
	e.do("PUT", "/v2/devices/billing-status/deactivated", e.partnerToken, map[string]any{"imeis": []string{dev, dev}}).
		wantError(http.StatusBadRequest, nameBadRequest, "imeis[1]", "repeats")
}

// TestSingleDeviceBillingAnswers holds the one-device billing writes to the
// same answer: the device's billing record after the change.
func TestSingleDeviceBillingAnswers(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	dev, refurb := e.devices[0], e.devices[2]
	e.fleetUpdate(func(tx *store.Tx) error { return tx.SetRefurbished(refurb, true) })
	r := e.do("PUT", "/v2/devices/"+dev+"/billing-status/suspended", e.partnerToken, nil).want(http.StatusOK)
	sameJSON(t, "billing status", r.get("data"), map[string]any{"imei": dev, "billingStatus": "suspended", "auxBillingStatus": "disable",
		"auxBillingStatusUpdatedAt": nil, "dataProfileId": 0, "automaticFirmwareUpdates": true, "refurbished": false})
	r = e.do("PUT", "/v2/devices/"+refurb+"/data-profile/11", e.partnerToken, nil).want(http.StatusOK)
	sameJSON(t, "data profile", r.get("data"), map[string]any{"imei": refurb, "billingStatus": "pendingActivation", "auxBillingStatus": "disable",
		"auxBillingStatusUpdatedAt": nil, "dataProfileId": 11, "automaticFirmwareUpdates": false, "refurbished": true})
	for _, path := range []string{"/billing-status/suspended", "/data-profile/11"} {
		e.do("PUT", "/v2/devices/"+e.rivalDevices[0]+path, e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
	}
	e.do("PUT", "/v2/devices/"+refurb+"/billing-status/suspended", e.partnerToken, nil).wantError(http.StatusConflict, nameConflict, "refurbished")
}
