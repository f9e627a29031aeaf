package cloudapi

import (
	"net/http"
	"slices"
	"testing"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// v wraps a parameter value as the API wants it.
func v(x any) map[string]any { return map[string]any{"value": x} }

func TestDeviceConfigValidation(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	path := "/v2/devices/" + w.imeis[0] + "/device-config"
	prompt := func(extra map[string]any) map[string]any {
		di := map[string]any{"driverPrompt": true, "driverPromptDurationSeconds": 30}
		for k, x := range extra {
			di[k] = x
		}
		return map[string]any{"pinCodeDi": v(true), "driverIdentification": di}
	}
	tests := []struct {
		name      string
		body      map[string]any
		fragments []string // empty: accepted
	}{
		{"brightness below 0", map[string]any{"brightness": v(-1)}, []string{"brightness.value", "from 0 to 255"}},
		{"brightness 0", map[string]any{"brightness": v(0)}, nil},
		{"brightness 255", map[string]any{"brightness": v(255)}, nil},
		{"brightness above 255", map[string]any{"brightness": v(256)}, []string{"brightness.value", "from 0 to 255"}},
		{"brightness not an integer", map[string]any{"brightness": v(12.5)}, []string{"brightness.value must be an integer"}},
		{"brightness without value", map[string]any{"brightness": map[string]any{}}, []string{"brightness.value is required"}},
		{"prompt 9 seconds", prompt(map[string]any{"driverPromptDurationSeconds": 9}), []string{"driverPromptDurationSeconds", "from 10 to 60"}},
		{"prompt 10 seconds", prompt(map[string]any{"driverPromptDurationSeconds": 10}), nil},
		{"prompt 60 seconds", prompt(map[string]any{"driverPromptDurationSeconds": 60}), nil},
		{"prompt 61 seconds", prompt(map[string]any{"driverPromptDurationSeconds": 61}), []string{"driverPromptDurationSeconds", "from 10 to 60"}},
		{"prompt without duration", map[string]any{"pinCodeDi": v(true), "driverIdentification": map[string]any{"driverPrompt": true}},
			[]string{"driverPromptDurationSeconds is required when driverPrompt is enabled"}},
		{"duration without prompt", map[string]any{"pinCodeDi": v(true), "driverIdentification": map[string]any{"driverPromptDurationSeconds": 20}},
			[]string{"driverPromptDurationSeconds is allowed only when driverPrompt is enabled"}},
		{"pin and QR together", map[string]any{"pinCodeDi": v(true), "qrDi": v(true)}, []string{"pinCodeDi", "qrDi cannot both be enabled"}},
		{"identification without pin or QR", map[string]any{"driverIdentification": map[string]any{}},
			[]string{"driverIdentification can be enabled only when pinCodeDi or qrDi is enabled"}},
		{"identification by QR", map[string]any{"qrDi": v(true), "driverIdentification": map[string]any{}}, nil},
		{"identification by PIN", map[string]any{"pinCodeDi": v(true), "driverIdentification": map[string]any{"value": true}}, nil},
		{"audio alert without prompt", map[string]any{"qrDi": v(true), "driverIdentification": map[string]any{"audioAlert": true}},
			[]string{"driverIdentification.audioAlert applies only when driverPrompt is enabled"}},
		{"audio alert with prompt", prompt(map[string]any{"audioAlert": true}), nil},
		{"prompt with identification off", map[string]any{"qrDi": v(true), "driverIdentification": map[string]any{"value": false, "driverPrompt": true, "driverPromptDurationSeconds": 20}},
			[]string{"driverPrompt can be enabled only with driver identification"}},
		{"standby 0 minutes", map[string]any{"standby": map[string]any{"timeout": 0}}, []string{"standby.timeout", "from 1 to 1440"}},
		{"standby 1 minute", map[string]any{"standby": map[string]any{"timeout": 1}}, nil},
		{"standby 24 hours", map[string]any{"standby": map[string]any{"timeout": 1440}}, nil},
		{"standby over 24 hours", map[string]any{"standby": map[string]any{"timeout": 1441}}, []string{"standby.timeout", "from 1 to 1440"}},
		{"standby without timeout", map[string]any{"standby": map[string]any{}}, []string{"standby.timeout is required"}},
		{"screen timeout 9", map[string]any{"screenTimeout": v(9)}, []string{"screenTimeout.value", "from 10 to 300"}},
		{"screen timeout 10", map[string]any{"screenTimeout": v(10)}, nil},
		{"screen timeout 300", map[string]any{"screenTimeout": v(300)}, nil},
		{"screen timeout 301", map[string]any{"screenTimeout": v(301)}, []string{"screenTimeout.value", "from 10 to 300"}},
		{"passengers 0", map[string]any{"passengerLimit": v(0)}, []string{"passengerLimit.value", "from 1 to 4"}},
		{"passengers 1", map[string]any{"passengerLimit": v(1)}, nil},
		{"passengers 4", map[string]any{"passengerLimit": v(4)}, nil},
		{"passengers 5", map[string]any{"passengerLimit": v(5)}, []string{"passengerLimit.value", "from 1 to 4"}},
		{"wake-up message 0 seconds", map[string]any{"wakeupMsg": map[string]any{"enabled": true, "timeout": 0}}, []string{"wakeupMsg.timeout", "from 1 to 300"}},
		{"wake-up message 1 second", map[string]any{"wakeupMsg": map[string]any{"enabled": true, "timeout": 1}}, nil},
		{"wake-up message 300 seconds", map[string]any{"wakeupMsg": map[string]any{"enabled": true, "timeout": 300}}, nil},
		{"wake-up message 301 seconds", map[string]any{"wakeupMsg": map[string]any{"enabled": true, "timeout": 301}}, []string{"wakeupMsg.timeout", "from 1 to 300"}},
		{"wake-up message without enabled", map[string]any{"wakeupMsg": map[string]any{"timeout": 5}}, []string{"wakeupMsg.enabled is required"}},
		{"driver position", map[string]any{"driverPosition": v("middle")}, []string{"driverPosition.value", "left right"}},
		{"speed units", map[string]any{"speedUnits": v("mph")}, nil},
		{"date units", map[string]any{"dateTimeUnits": v("iso")}, []string{"dateTimeUnits.value"}},
		{"hotspot without internet access", map[string]any{"hotSpot": map[string]any{"hotspotEnabled": true}}, []string{"hotSpot.internetAccess is required"}},
		{"camera 3", map[string]any{"privacy": map[string]any{"cameras": []any{map[string]any{"cameraId": 3, "eventsEnabled": false}}}},
			[]string{"privacy.cameras[0].cameraId", "50 and above"}},
		{"camera 50", map[string]any{"privacy": map[string]any{"cameras": []any{map[string]any{"cameraId": 50, "recordingEnabled": false}}}}, nil},
		{"camera twice", map[string]any{"privacy": map[string]any{"cameras": []any{map[string]any{"cameraId": 1}, map[string]any{"cameraId": 1}}}},
			[]string{"privacy.cameras[1].cameraId", "twice"}},
		{"camera without id", map[string]any{"privacy": map[string]any{"cameras": []any{map[string]any{"eventsEnabled": true}}}},
			[]string{"privacy.cameras[0].cameraId is required"}},
		{"unsupported parameter", map[string]any{"adminPin": v("1234")}, []string{"adminPin is not a known field"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := w.do("PUT", path, w.partnerToken, tc.body)
			if len(tc.fragments) == 0 {
				r.want(http.StatusOK)
				return
			}
			r.wantError(http.StatusBadRequest, nameBadRequest, tc.fragments...)
		})
	}
	// The organization default follows the same rules.
	w.do("POST", "/v2/organizations/"+idStr(w.orgID)+"/device-settings", w.partnerToken,
		map[string]any{"brightness": v(256)}).wantError(http.StatusBadRequest, nameBadRequest, "brightness.value")
	w.do("PUT", "/v2/devices/device-config", w.partnerToken, map[string]any{"imeis": w.imeis,
		"config": map[string]any{"qrDi": v(true), "pinCodeDi": v(true)}}).wantError(http.StatusBadRequest, nameBadRequest, "config.pinCodeDi")
}

func TestDeviceConfigPutReplaces(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	online, offline := w.imeis[0], w.imeis[1]
	w.cmd.setOnline(online, true)
	path := "/v2/devices/" + online + "/device-config"

	r := w.do("GET", path, w.viewer, nil).want(http.StatusOK)
	if r.num("data.brightness.value") != 128 || r.str("metadata.status") != "online" || r.str("metadata.source") != "cloud" {
		t.Fatalf("defaults: %s", r.raw)
	}
	r = w.do("PUT", path, w.editor, map[string]any{"brightness": v(10), "voiceRecording": v(true),
		"pinCodeDi": v(true), "driverIdentification": map[string]any{"driverPrompt": true, "driverPromptDurationSeconds": 15}}).want(http.StatusOK)
	if got := strs(r.list("data.effectedImeis")); !slices.Equal(got, []string{online}) || !slices.Equal(strs(r.list("data.success")), []string{online}) {
		t.Fatalf("answer %s", r.raw)
	}
	if r.num("data.config.brightness.value") != 10 || r.num("data.config.driverIdentification.driverPromptDurationSeconds") != 15 {
		t.Fatalf("config %s", r.raw)
	}
	if _, _, pushed := w.cmd.take(); !slices.Equal(pushed, []string{online}) {
		t.Fatalf("pushed %v", pushed)
	}
	ds, e := w.settings(online)
	if ds.Version != 1 || e.Device.Brightness != 10 || !e.Device.VoiceRecording || !e.Device.DriverPrompt {
		t.Fatalf("stored %+v", e.Device)
	}

	// PUT replaces: what the second call does not name returns to its default.
	w.do("PUT", path, w.editor, map[string]any{"voiceRecording": v(false)}).want(http.StatusOK)
	r = w.do("GET", path, w.viewer, nil).want(http.StatusOK)
	if r.num("data.brightness.value") != 128 || r.get("data.pinCodeDi.value") != false || r.get("data.driverIdentification.driverPrompt") != false {
		t.Fatalf("not replaced: %s", r.raw)
	}
	if n := len(w.audit("device.config")); n != 2 {
		t.Fatalf("%d audit entries, want 2", n)
	}

	// An offline device is accepted for later.
	r = w.do("PUT", "/v2/devices/"+offline+"/device-config", w.partnerToken, map[string]any{}).want(http.StatusOK)
	if !slices.Equal(strs(r.list("data.accepted")), []string{offline}) || len(r.list("data.success")) != 0 {
		t.Fatalf("offline answer %s", r.raw)
	}
}

func TestOrgDeviceSettingsPostKeeps(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	own, inherits := w.imeis[0], w.imeis[1]
	org := "/v2/organizations/" + idStr(w.orgID) + "/device-settings"
	w.do("PUT", "/v2/devices/"+own+"/device-config", w.partnerToken, map[string]any{"brightness": v(200)}).want(http.StatusOK)
	w.cmd.take()

	r := w.do("POST", org, w.editor, map[string]any{"brightness": v(10)}).want(http.StatusOK)
	if r.num("data.brightness.value") != 10 {
		t.Fatalf("answer %s", r.raw)
	}
	r = w.do("POST", org, w.editor, map[string]any{"voiceRecording": v(true)}).want(http.StatusOK)
	if r.num("data.brightness.value") != 10 || r.get("data.voiceRecording.value") != true {
		t.Fatalf("POST did not keep what it does not name: %s", r.raw)
	}
	if r := w.do("GET", org, w.viewer, nil).want(http.StatusOK); r.num("data.brightness.value") != 10 {
		t.Fatalf("GET %s", r.raw)
	}
	if _, _, pushed := w.cmd.take(); len(pushed) != 4 {
		t.Fatalf("pushed %v, want both devices twice", pushed)
	}
	if _, e := w.settings(inherits); e.Device.Brightness != 10 || !e.Device.VoiceRecording {
		t.Fatalf("device without its own configuration: %+v", e.Device)
	}
	if _, e := w.settings(own); e.Device.Brightness != 200 {
		t.Fatalf("profile off, the device's own configuration changed: %+v", e.Device)
	}

	// With the organization profile the default reaches every device.
	w.setProfile(true)
	w.do("POST", org, w.editor, map[string]any{"liveVideo": v(false)}).want(http.StatusOK)
	for _, imei := range w.imeis {
		if _, e := w.settings(imei); e.Device.Brightness != 10 || e.Device.LiveVideo || !e.Device.VoiceRecording {
			t.Fatalf("profile on, %s runs %+v", imei, e.Device)
		}
	}
	if n := len(w.audit("organization.deviceSettings")); n != 3 {
		t.Fatalf("%d organization audit entries", n)
	}
	if n := len(w.audit("device.config")); n != 3 { // the first PUT, then one per device
		t.Fatalf("%d device audit entries, want 3", n)
	}
	if _, _, pushed := w.cmd.take(); len(pushed) != 2 {
		t.Fatalf("pushed %v", pushed)
	}
	w.do("POST", "/v2/organizations/"+idStr(w.otherOrgID)+"/device-settings", w.partnerToken, map[string]any{}).wantError(http.StatusNotFound, nameNotFound)
}

func TestBulkDeviceConfig(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 3)
	w.cmd.setOnline(w.imeis[0], true)
	unknown := worldIMEI(777)
	r := w.do("PUT", "/v2/devices/device-config", w.partnerToken, map[string]any{
		"imeis":  []string{w.imeis[0], w.imeis[1], w.otherIMEI, "12345", unknown, w.imeis[0]},
		"config": map[string]any{"brightness": v(42)},
	}).want(http.StatusOK)
	if got := strs(r.list("data.effectedImeis")); !slices.Equal(got, w.imeis[:2]) {
		t.Fatalf("effected %v", got)
	}
	if !slices.Equal(strs(r.list("data.success")), w.imeis[:1]) || !slices.Equal(strs(r.list("data.accepted")), w.imeis[1:2]) {
		t.Fatalf("delivery %s", r.raw)
	}
	rejected := r.list("data.rejected")
	if len(rejected) != 3 {
		t.Fatalf("rejected %s", r.raw)
	}
	for i, imei := range []string{w.otherIMEI, "12345", unknown} {
		rj := rejected[i].(map[string]any)
		if rj["imei"] != imei || rj["errorCode"].(float64) != rejectNotFound || rj["reason"] == "" {
			t.Fatalf("rejection %d: %v", i, rj)
		}
	}
	if _, e := w.settings(w.imeis[2]); e.Device.Brightness != 128 {
		t.Fatal("an unnamed device changed")
	}
	if _, e := w.settings(w.otherIMEI); e.Device.Brightness != 128 {
		t.Fatal("another partner's device changed")
	}

	// By organization and groups.
	var group int64
	err := w.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		g, err := tx.CreateGroup(w.orgID, "Vans")
		if err != nil {
			return err
		}
		group = g.ID
		d, err := tx.Device(w.imeis[2])
		if err != nil {
			return err
		}
		d.GroupID = g.ID
		return tx.UpdateDevice(d, "test")
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body map[string]any
		want []string
	}{
		{"whole organization", map[string]any{"organizationId": w.orgID}, w.imeis},
		{"one group", map[string]any{"organizationId": w.orgID, "groupIds": []int64{group}}, w.imeis[2:]},
		{"devices in no group", map[string]any{"organizationId": w.orgID, "groupIds": []int64{-1}}, w.imeis[:2]},
		{"excluding one", map[string]any{"organizationId": w.orgID, "excludeSerialNumbers": []string{w.imeis[1]}},
			[]string{w.imeis[0], w.imeis[2]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.body["config"] = map[string]any{"brightness": v(7)}
			r := w.do("PUT", "/v2/devices/device-config", w.editor, tc.body).want(http.StatusOK)
			if got := strs(r.list("data.effectedImeis")); !slices.Equal(got, tc.want) {
				t.Fatalf("effected %v, want %v", got, tc.want)
			}
		})
	}
	errors := []struct {
		name   string
		body   map[string]any
		status int
		frag   string
	}{
		{"another partner's organization", map[string]any{"organizationId": w.otherOrgID, "config": map[string]any{}}, 404, "organization"},
		{"both forms", map[string]any{"organizationId": w.orgID, "imeis": w.imeis, "config": map[string]any{}}, 400, "not both"},
		{"no config", map[string]any{"imeis": w.imeis}, 400, "config is required"},
		{"no devices", map[string]any{"imeis": []string{}, "config": map[string]any{}}, 400, "imeis is required"},
		{"group of nobody", map[string]any{"organizationId": w.orgID, "groupIds": []int64{999}, "config": map[string]any{}}, 404, "group 999"},
	}
	for _, tc := range errors {
		t.Run(tc.name, func(t *testing.T) {
			name := map[int]string{400: nameBadRequest, 404: nameNotFound}[tc.status]
			w.do("PUT", "/v2/devices/device-config", w.partnerToken, tc.body).wantError(tc.status, name, tc.frag)
		})
	}
	many := make([]string, maxBulkConfigIMEIs+1)
	for i := range many {
		many[i] = worldIMEI(1000 + i)
	}
	w.do("PUT", "/v2/devices/device-config", w.partnerToken, map[string]any{"imeis": many, "config": map[string]any{}}).
		wantError(http.StatusBadRequest, nameBadRequest, "at most 1000")
}

func TestSettingsAccess(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	mine := "/v2/devices/" + w.imeis[0]
	theirs := "/v2/devices/" + w.otherIMEI
	org := "/v2/organizations/" + idStr(w.orgID)
	scoped := w.scopedToken(w.imeis[0], allFeatures...)
	body := map[string]any{}
	events := map[string]any{"vehicleType": "Van", "events": []any{}}
	tests := []struct {
		name, method, path, token string
		body                      any
		status                    int
	}{
		{"viewer reads config", "GET", mine + "/device-config", w.viewer, nil, 200},
		{"viewer writes config", "PUT", mine + "/device-config", w.viewer, body, 403},
		{"viewer writes events", "PUT", mine + "/event-config", w.viewer, events, 403},
		{"viewer writes organization events", "PATCH", org + "/event-settings", w.viewer, events, 403},
		{"viewer switches privacy", "POST", "/v2/devices/privacy-control", w.viewer, map[string]any{"imeis": []string{w.imeis[0]}, "privacyMode": "general"}, 403},
		{"viewer reads hotspot password", "GET", mine + "/hotspot", w.viewer, nil, 403},
		{"viewer formats storage", "GET", mine + "/format-storage", w.viewer, nil, 403},
		{"another partner's device config", "GET", theirs + "/device-config", w.partnerToken, nil, 404},
		{"another partner's device write", "PUT", theirs + "/device-config", w.partnerToken, body, 404},
		{"another partner's events", "PUT", theirs + "/event-config", w.partnerToken, events, 404},
		{"another partner's privacy", "GET", theirs + "/privacy-control", w.partnerToken, nil, 404},
		{"another partner's hotspot", "GET", theirs + "/hotspot", w.partnerToken, nil, 404},
		{"another partner's storage", "GET", theirs + "/format-storage", w.partnerToken, nil, 404},
		{"another partner's GPS", "GET", theirs + "/gps?start=2026-03-01T00:00:00Z&end=2026-03-02T00:00:00Z", w.partnerToken, nil, 404},
		{"another partner reads my organization", "GET", org + "/device-settings", w.otherToken, nil, 404},
		{"another partner writes my organization", "POST", org + "/device-settings", w.otherToken, body, 404},
		{"another partner's organization privacy", "PATCH", org + "/privacy-config", w.otherToken, map[string]any{"gpsTracking": "enabled"}, 404},
		{"organization user of another organization", "GET", theirs + "/event-config", w.editor, nil, 404},
		{"scoped token on config", "GET", mine + "/device-config", scoped, nil, 403},
		{"scoped token on privacy", "GET", mine + "/privacy-control", scoped, nil, 403},
		{"scoped token writes", "PUT", mine + "/hotspot", scoped, map[string]any{"hotspotEnabled": true}, 403},
		{"no token", "GET", mine + "/device-config", "", nil, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := w.do(tc.method, tc.path, tc.token, tc.body)
			if tc.status == 200 {
				r.want(200)
				return
			}
			name := map[int]string{401: nameUnauthorized, 403: nameForbidden, 404: nameNotFound}[tc.status]
			r.wantError(tc.status, name)
		})
	}
}

func TestConfigMetadataStatus(t *testing.T) {
	t.Parallel()
	pres := &fakePresence{m: map[string]DeviceConnection{}}
	w := newDeviceWorld(t, 1, func(_ *configs.Config, d *Deps) { d.Presence = pres })
	imei := w.imeis[0]
	status := func() string {
		return w.do("GET", "/v2/devices/"+imei+"/event-config", w.viewer, nil).want(http.StatusOK).str("metadata.status")
	}
	if s := status(); s != ConnectionOffline {
		t.Fatalf("never connected: %s", s)
	}
	w.cmd.setOnline(imei, true)
	if s := status(); s != ConnectionOnline {
		t.Fatalf("connected: %s", s)
	}
	pres.set(imei, DeviceConnection{Status: ConnectionStandby})
	if s := status(); s != ConnectionStandby {
		t.Fatalf("standby: %s", s)
	}
}
