package cloudapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

func TestDeviceCommandCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, command, action string
	}{
		{"/reboot", protocol.CmdReboot, "device.reboot"},
		{"/wakeup", protocol.CmdWakeup, "device.wakeup"},
		{"/factory-reset", protocol.CmdFactoryReset, "device.factoryReset"},
	} {
		t.Run(tc.command, func(t *testing.T) {
			w := newDeviceWorld(t, 3)
			online, offline, failing := w.imeis[0], w.imeis[1], w.imeis[2]
			w.cmd.setOnline(online, true)
			w.cmd.setOnline(failing, true)
			w.cmd.reply(tc.command, func(imei string) (json.RawMessage, error) {
				if imei == failing {
					return nil, fmt.Errorf("%w: busy", ErrCommandFailed)
				}
				return nil, nil
			})
			r := w.do("POST", devPath(online, tc.path), w.editor, nil).want(http.StatusOK)
			if r.str("requestId") == "" {
				t.Fatalf("answer %s", r.raw)
			}
			sent, _, _ := w.cmd.take()
			if len(sent) != 1 || sent[0].IMEI != online || sent[0].Name != tc.command {
				t.Fatalf("sent %+v", sent)
			}
			if a := w.audit(tc.action); len(a) != 1 || a[0].EntityID != online {
				t.Fatalf("audit %+v", a)
			}
			w.do("POST", devPath(offline, tc.path), w.editor, nil).wantError(http.StatusExpectationFailed, nameExpectationFailed, "online")
			w.do("POST", devPath(failing, tc.path), w.editor, nil).wantError(http.StatusExpectationFailed, nameExpectationFailed, "could not carry out")
			w.do("POST", devPath(online, tc.path), w.viewer, nil).wantError(http.StatusForbidden, nameForbidden)
			w.do("POST", devPath(w.otherIMEI, tc.path), w.editor, nil).wantError(http.StatusNotFound, nameNotFound)
			if sent, _, _ := w.cmd.take(); len(sent) != 1 || sent[0].IMEI != failing {
				t.Fatalf("sent %+v: only the failing device got another command", sent)
			}
		})
	}
}

func TestFactoryResetDropsResetSettings(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	imei := w.imeis[0]
	w.cmd.setOnline(imei, true)
	w.do("PUT", devPath(imei, "/demo-mode"), w.editor, nil).want(http.StatusOK)
	w.do("POST", devPath(imei, "/otg-settings"), w.editor, map[string]any{"enabled": true}).want(http.StatusOK)
	w.do("PUT", devPath(imei, "/device-config"), w.editor, map[string]any{"brightness": map[string]any{"value": 10}}).want(http.StatusOK)
	pins := w.do("POST", devPath(imei, "/pin-codes"), w.editor, map[string]any{"password": "Secret123"}).want(http.StatusOK)
	w.do("POST", devPath(imei, "/factory-reset"), w.editor, nil).want(http.StatusOK)
	ds, e := w.settings(imei)
	if ds.Device != nil || e.Device.Brightness != store.DefaultDeviceConfig().Brightness {
		t.Fatalf("device configuration after a reset: %+v", ds.Device)
	}
	if e.Control.Mode != store.ModeNormal || store.Enabled(e.Control.OTGEnabled) {
		t.Fatalf("control after a reset: %+v", e.Control)
	}
	if e.Control.PinCodes == nil || !protocolPins(e.Control.PinCodes).Matches(true, pins.str("data.adminPin.value")) {
		t.Fatal("the PIN codes did not survive the reset")
	}
	if _, _, pushed := w.cmd.take(); !slices.Contains(pushed, imei) {
		t.Fatal("the reset settings were not pushed")
	}
}

func protocolPins(p *store.PinCodes) *protocol.PinCodeHashes {
	return &protocol.PinCodeHashes{Salt: p.Salt, AdminPinHash: p.AdminPinHash, DriverPinHash: p.DriverPinHash}
}

func TestDeviceModes(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	online, offline := w.imeis[0], w.imeis[1]
	w.cmd.setOnline(online, true)
	mode := func(imei string) string { _, e := w.settings(imei); return e.Control.Mode }

	r := w.do("PUT", devPath(online, "/demo-mode"), w.editor, nil).want(http.StatusOK)
	if got := strs(r.list("data.success")); !slices.Equal(got, []string{online}) || mode(online) != store.ModeDemo {
		t.Fatalf("demo mode: success %v, mode %q", got, mode(online))
	}
	if d := w.do("GET", "/v2/devices/"+offline, w.viewer, nil).want(http.StatusOK); d.get("data.isSemiOnline") != false {
		t.Fatalf("before semi-online: %s", d.raw)
	}
	r = w.do("PUT", devPath(offline, "/semi-online"), w.editor, nil).want(http.StatusOK)
	if got := strs(r.list("data.accepted")); !slices.Equal(got, []string{offline}) || mode(offline) != store.ModeSemiOnline {
		t.Fatalf("semi-online: accepted %v, mode %q", got, mode(offline))
	}
	for _, path := range []string{"/v2/devices/" + offline, fmt.Sprintf("/v2/organizations/%d/devices", w.orgID)} {
		d := w.do("GET", path, w.viewer, nil).want(http.StatusOK)
		if got := d.get("data.isSemiOnline"); path != "/v2/devices/"+offline {
			got = nil
			for _, it := range d.list("data") {
				if m := it.(map[string]any); m["imei"] == offline {
					got = m["isSemiOnline"]
				}
			}
			if got != true {
				t.Fatalf("device list after semi-online: %s", d.raw)
			}
		} else if got != true {
			t.Fatalf("device after semi-online: %s", d.raw)
		}
	}
	if _, _, pushed := w.cmd.take(); !slices.Equal(pushed, []string{online, offline}) {
		t.Fatalf("pushed %v", pushed)
	}
	w.do("DELETE", devPath(online, "/demo-mode"), w.editor, nil).want(http.StatusOK)
	w.do("DELETE", devPath(offline, "/demo-mode"), w.editor, nil).want(http.StatusOK)
	if mode(online) != store.ModeNormal || mode(offline) != store.ModeNormal {
		t.Fatalf("modes after DELETE: %q %q", mode(online), mode(offline))
	}
	if a := w.audit("device.mode"); len(a) != 4 {
		t.Fatalf("audited %d mode changes, want 4", len(a))
	}
	w.do("PUT", devPath(online, "/demo-mode"), w.viewer, nil).wantError(http.StatusForbidden, nameForbidden)
	w.do("PUT", devPath(w.otherIMEI, "/semi-online"), w.editor, nil).wantError(http.StatusNotFound, nameNotFound)
	w.do("DELETE", devPath(w.otherIMEI, "/demo-mode"), w.editor, nil).wantError(http.StatusNotFound, nameNotFound)
}

func TestOTGSettings(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	imei := w.imeis[0]
	r := w.do("POST", devPath(imei, "/otg-settings"), w.editor, map[string]any{"enabled": true}).want(http.StatusOK)
	if r.get("enabled") != true {
		t.Fatalf("answer %s", r.raw)
	}
	if _, e := w.settings(imei); !store.Enabled(e.Control.OTGEnabled) {
		t.Fatal("OTG not stored")
	}
	w.do("POST", devPath(imei, "/otg-settings"), w.editor, map[string]any{"enabled": false}).want(http.StatusOK)
	if _, e := w.settings(imei); store.Enabled(e.Control.OTGEnabled) {
		t.Fatal("OTG still on")
	}
	w.do("POST", devPath(imei, "/otg-settings"), w.editor, map[string]any{}).wantError(http.StatusBadRequest, nameBadRequest, "enabled")
	w.do("POST", devPath(imei, "/otg-settings"), w.viewer, map[string]any{"enabled": true}).wantError(http.StatusForbidden, nameForbidden)
	w.do("POST", devPath(w.otherIMEI, "/otg-settings"), w.editor, map[string]any{"enabled": true}).wantError(http.StatusNotFound, nameNotFound)
}

func TestTailgatingMute(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	online, offline := w.imeis[0], w.imeis[1]
	w.cmd.setOnline(online, true)
	body := func(minutes int, imeis ...string) map[string]any {
		return map[string]any{"entityType": "device", "entityValues": imeis, "coolOffDuration": minutes}
	}
	r := w.do("POST", "/v2/devices/tailgating-event-mute/configure", w.editor, body(30, online, offline, w.otherIMEI)).want(http.StatusOK)
	if !slices.Equal(strs(r.list("data.success")), []string{online}) || !slices.Equal(strs(r.list("data.accepted")), []string{offline}) ||
		r.str("data.rejected.0.imei") != w.otherIMEI {
		t.Fatalf("answer %s", r.raw)
	}
	for _, imei := range []string{online, offline} {
		if _, e := w.settings(imei); e.Control.TailgatingCoolOffMinutes != 30 {
			t.Fatalf("%s mutes %d minutes", imei, e.Control.TailgatingCoolOffMinutes)
		}
	}
	if _, e := w.settings(w.otherIMEI); e.Control.TailgatingCoolOffMinutes != 0 {
		t.Fatal("another tenant's device was changed")
	}
	w.do("POST", "/v2/devices/tailgating-event-mute/configure", w.editor, body(9, online)).wantError(http.StatusBadRequest, nameBadRequest, "coolOffDuration")
	w.do("POST", "/v2/devices/tailgating-event-mute/configure", w.editor, body(481, online)).wantError(http.StatusBadRequest, nameBadRequest, "coolOffDuration")
	w.do("POST", "/v2/devices/tailgating-event-mute/configure", w.editor, body(30)).wantError(http.StatusBadRequest, nameBadRequest, "entityValues")
	bad := body(30, online)
	bad["entityType"] = "organization"
	w.do("POST", "/v2/devices/tailgating-event-mute/configure", w.editor, bad).wantError(http.StatusBadRequest, nameBadRequest, "entityType")
	w.do("POST", "/v2/devices/tailgating-event-mute/configure", w.viewer, body(30, online)).wantError(http.StatusForbidden, nameForbidden)
}

// pairAux records auxiliary camera 50 as paired with imei.
func (w *deviceWorld) pairAux(imei string, ids ...int) {
	w.t.Helper()
	err := w.db.Update(w.t.Context(), store.Actor{Source: "device"}, func(tx *store.Tx) error {
		d, err := tx.Device(imei)
		if err != nil {
			return err
		}
		var cams []store.AuxCamera
		for _, id := range ids {
			cams = append(cams, store.AuxCamera{CameraID: id, SSID: fmt.Sprintf("AUX-%d", id), Kind: "wifi", Paired: true})
		}
		return tx.RecordAuxPairing(d, cams)
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

func TestDeviceCameras(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	online, offline := w.imeis[0], w.imeis[1]
	w.cmd.setOnline(online, true)
	w.pairAux(online, 50, 51)
	ids := func(r *response) []string {
		var out []string
		for i := range r.list("data") {
			out = append(out, fmt.Sprint(r.num(fmt.Sprintf("data.%d.cameraId", i))))
		}
		return out
	}
	r := w.do("GET", devPath(online, "/cameras"), w.viewer, nil).want(http.StatusOK)
	if got := ids(r); !slices.Equal(got, []string{"1", "2", "50", "51"}) {
		t.Fatalf("cameras %v", got)
	}
	w.do("GET", devPath(offline, "/cameras"), w.viewer, nil).wantError(http.StatusExpectationFailed, nameExpectationFailed, "online")
	w.do("GET", devPath(w.otherIMEI, "/cameras"), w.viewer, nil).wantError(http.StatusNotFound, nameNotFound)

	r = w.do("PATCH", devPath(online, "/cameras"), w.editor, []map[string]any{{"cameraId": 50, "name": "Trailer"}, {"cameraId": 51, "name": "Rear"}}).
		want(http.StatusOK)
	if r.str("data.0.name") != "Trailer" || r.str("data.1.name") != "Rear" {
		t.Fatalf("answer %s", r.raw)
	}
	if _, e := w.settings(online); e.Control.CameraNames[50] != "Trailer" {
		t.Fatalf("names %v", e.Control.CameraNames)
	}
	if _, _, pushed := w.cmd.take(); !slices.Contains(pushed, online) {
		t.Fatal("camera names not pushed")
	}
	w.do("PATCH", devPath(online, "/cameras"), w.editor, []map[string]any{{"cameraId": 51, "name": nil}}).want(http.StatusOK)
	r = w.do("GET", devPath(online, "/cameras"), w.viewer, nil).want(http.StatusOK)
	if r.str("data.2.name") != "Trailer" || r.str("data.3.name") != "" {
		t.Fatalf("after unnaming 51: %s", r.raw)
	}
	for _, tc := range []struct {
		body  any
		field string
	}{
		{[]map[string]any{{"cameraId": 2, "name": "Cabin"}}, "[0].cameraId"},
		{[]map[string]any{{"cameraId": 52, "name": "Nope"}}, "not paired"},
		{[]map[string]any{{"cameraId": 50}}, "[0].name"},
		{[]map[string]any{{"cameraId": 50, "name": ""}}, "[0].name"},
		{[]map[string]any{{"cameraId": 50, "name": "A"}, {"cameraId": 50, "name": "B"}}, "twice"},
		{[]map[string]any{}, "from 1 to 10"},
	} {
		w.do("PATCH", devPath(online, "/cameras"), w.editor, tc.body).wantError(http.StatusBadRequest, nameBadRequest, tc.field)
	}
	w.do("PATCH", devPath(online, "/cameras"), w.viewer, []map[string]any{{"cameraId": 50, "name": "X"}}).wantError(http.StatusForbidden, nameForbidden)
	w.do("PATCH", devPath(w.otherIMEI, "/cameras"), w.editor, []map[string]any{{"cameraId": 50, "name": "X"}}).wantError(http.StatusNotFound, nameNotFound)
}

func TestCameraSnapshot(t *testing.T) {
	t.Parallel()
	m := newMediaEnv(t)
	now := m.clock.Now()
	m.cmd.set(m.dev.IMEI, func(d *fakeDevice) {
		d.recordings[1] = [][2]int64{{now.Add(-time.Hour).Unix(), now.Unix()}}
	})
	r := m.do("GET", devPath(m.dev.IMEI, "/cameras/1/snapshot"), m.partnerToken, nil).want(http.StatusOK)
	link := r.str("data")
	if link == "" || r.str("metadata.time") != isoTime(now) {
		t.Fatalf("answer %s", r.raw)
	}
	status, body, header := m.fetch(link)
	if status != http.StatusOK || header.Get("Content-Type") != "image/jpeg" || len(body) == 0 {
		t.Fatalf("link answers %d %s (%d bytes)", status, header.Get("Content-Type"), len(body))
	}
	clips := m.cmd.commands(protocol.CmdClip)
	var args protocol.ClipArgs
	json.Unmarshal(clips[0].args, &args)
	if len(clips) != 1 || args.MediaType != "snapshot" || args.CameraID != 1 || args.Time != now.Unix() {
		t.Fatalf("clip commands %+v", clips)
	}
	// The same second again is the stored file: the device is not asked again.
	m.do("GET", devPath(m.dev.IMEI, "/cameras/1/snapshot"), m.partnerToken, nil).want(http.StatusOK)
	if n := len(m.cmd.commands(protocol.CmdClip)); n != 1 {
		t.Fatalf("%d clip commands, want 1", n)
	}
	past := now.Add(-2 * time.Hour).Format(time.RFC3339)
	m.do("GET", devPath(m.dev.IMEI, "/cameras/1/snapshot?time="+past), m.partnerToken, nil).
		wantError(http.StatusNotFound, NameNoRecordingAvailable)
	future := now.Add(time.Hour).Format(time.RFC3339)
	m.do("GET", devPath(m.dev.IMEI, "/cameras/1/snapshot?time="+future), m.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "time")
	m.do("GET", devPath(m.dev.IMEI, "/cameras/0/snapshot"), m.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "cameraId")
	m.do("GET", devPath(m.dev.IMEI, "/cameras/50/snapshot"), m.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "camera 50")
	m.do("GET", devPath(m.dev.IMEI, "/cameras/x/snapshot"), m.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "cameraId")
	m.do("GET", devPath(m.dev.IMEI, "/cameras/1/snapshot"), m.otherToken, nil).wantError(http.StatusNotFound, nameNotFound)
	m.cmd.set(m.dev2.IMEI, func(d *fakeDevice) { d.online = false })
	m.do("GET", devPath(m.dev2.IMEI, "/cameras/1/snapshot"), m.partnerToken, nil).wantError(http.StatusExpectationFailed, nameExpectationFailed)
}
