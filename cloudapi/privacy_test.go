package cloudapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// privacyMessages returns the privacyMode system messages recorded so far.
func (w *deviceWorld) privacyMessages() []privacyMessage {
	w.t.Helper()
	msgs := allMessages(w.t, w.db)
	var out []privacyMessage
	for _, m := range msgs {
		if m.Kind != store.MessageSystem || m.SubType != store.SystemPrivacyMode {
			continue
		}
		if m.Privacy == nil || m.OrganizationID != w.orgID {
			w.t.Fatalf("message %+v", m)
		}
		out = append(out, privacyMessage{PrivacyFact: *m.Privacy, IMEI: m.IMEI, Time: m.Time.Unix()})
	}
	return out
}

// privacyMessage is a privacyMode system message: its device, its time in
// unix seconds and its fact.
type privacyMessage struct {
	store.PrivacyFact
	IMEI string
	Time int64
}

func TestPrivacyControl(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 3)
	online, offline, silent := w.imeis[0], w.imeis[1], w.imeis[2]
	w.cmd.setOnline(online, true)
	w.cmd.setOnline(silent, true)
	w.cmd.reply(protocol.CmdPrivacyMode, func(imei string) (json.RawMessage, error) {
		if imei == silent {
			return nil, ErrCommandTimeout
		}
		return json.RawMessage(`{}`), nil
	})
	r := w.do("POST", "/v2/devices/privacy-control", w.editor, map[string]any{
		"imeis": []string{online, offline, silent, w.otherIMEI}, "privacyMode": "general"}).want(http.StatusOK)
	if !slices.Equal(strs(r.list("data.success")), []string{online}) ||
		!slices.Equal(strs(r.list("data.accepted")), []string{offline, silent}) || len(r.list("data.rejected")) != 1 ||
		r.str("data.rejected.0.imei") != w.otherIMEI || r.num("data.rejected.0.errorCode") != rejectNotFound {
		t.Fatalf("answer %s", r.raw)
	}
	sent, queued, pushed := w.cmd.take()
	on := protocol.PrivacyModeArgs{Mode: store.PrivacyModeOn}
	slices.SortFunc(sent, func(a, b commandCall) int { return compareStrings(a.IMEI, b.IMEI) })
	if len(sent) != 2 || sent[0] != (commandCall{IMEI: online, Name: protocol.CmdPrivacyMode, Args: on}) || sent[1].IMEI != silent {
		t.Fatalf("sent %+v", sent)
	}
	slices.SortFunc(queued, func(a, b commandCall) int { return compareStrings(a.IMEI, b.IMEI) })
	if len(queued) != 2 || queued[0] != (commandCall{IMEI: offline, Name: protocol.CmdPrivacyMode, Args: on}) || queued[1].IMEI != silent {
		t.Fatalf("queued %+v", queued)
	}
	if len(pushed) != 3 {
		t.Fatalf("pushed %v", pushed)
	}
	for _, imei := range w.imeis {
		if r := w.do("GET", "/v2/devices/"+imei+"/privacy-control", w.viewer, nil).want(http.StatusOK); r.str("data.privacyMode") != "general" {
			t.Fatalf("%s: %s", imei, r.raw)
		}
	}
	if r := w.do("GET", "/v2/devices/"+w.otherIMEI+"/privacy-control", w.otherToken, nil).want(http.StatusOK); r.str("data.privacyMode") != "disabled" {
		t.Fatal("another partner's device switched")
	}

	// The privacy mode's own audit entry: device, initiating user, before and after
	// (named as the privacy-control API names them), time.
	entries := w.audit("device.privacyMode")
	if len(entries) != 3 {
		t.Fatalf("%d audit entries", len(entries))
	}
	var editorID int64
	w.db.View(t.Context(), func(tx *store.Tx) error {
		u, err := tx.UserByEmail("editor@example.com")
		if err == nil {
			editorID = u.ID
		}
		return err
	})
	for _, a := range entries {
		var before, after store.PrivacyModeChange
		json.Unmarshal(a.Before, &before)
		json.Unmarshal(a.After, &after)
		if a.UserID != editorID || editorID == 0 || a.Time.IsZero() || before.DeviceID != a.EntityID ||
			before.PrivacyMode != "disabled" || after.PrivacyMode != "general" {
			t.Fatalf("audit entry %+v %s %s", a, a.Before, a.After)
		}
	}
	// One privacyMode system message per device, pending where the device was offline.
	msgs := w.privacyMessages()
	pending := map[string]bool{}
	for _, m := range msgs {
		if m.Change != "mode" || m.Before != "off" || m.After != "on" || m.Time == 0 || m.InitiatedBy != editorID {
			t.Fatalf("message %+v", m)
		}
		pending[m.IMEI] = m.Pending
	}
	if len(msgs) != 3 || pending[online] || !pending[offline] || pending[silent] {
		t.Fatalf("messages %+v", msgs)
	}

	// The same mode again changes nothing; switching off does.
	w.do("POST", "/v2/devices/privacy-control", w.editor, map[string]any{"imeis": []string{online}, "privacyMode": "general"}).want(http.StatusOK)
	if len(w.audit("device.privacyMode")) != 3 || len(w.privacyMessages()) != 3 {
		t.Fatal("a repeated mode was recorded as a change")
	}
	w.do("POST", "/v2/devices/privacy-control", w.editor, map[string]any{"imeis": []string{offline}, "privacyMode": "off"}).want(http.StatusOK)
	if _, e := w.settings(offline); e.PrivacyMode != store.PrivacyModeOff {
		t.Fatal("privacy mode not switched off")
	}
	if msgs := w.privacyMessages(); len(msgs) != 4 || msgs[3].Before != "on" || msgs[3].After != "off" || !msgs[3].Pending {
		t.Fatalf("messages %+v", msgs)
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestPrivacyControlValidation(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	many := make([]string, maxBulkPrivacyIMEIs+1)
	for i := range many {
		many[i] = worldIMEI(100 + i)
	}
	tests := []struct {
		name string
		body any
		frag string
	}{
		{"unknown mode", map[string]any{"imeis": w.imeis, "privacyMode": "maybe"}, "privacyMode must be general"},
		{"no mode", map[string]any{"imeis": w.imeis}, "privacyMode is required"},
		{"no devices", map[string]any{"imeis": []string{}, "privacyMode": "general"}, "imeis is required"},
		{"too many devices", map[string]any{"imeis": many, "privacyMode": "general"}, "at most 200"},
		{"mode not a string", map[string]any{"imeis": w.imeis, "privacyMode": true}, "privacyMode must be a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w.do("POST", "/v2/devices/privacy-control", w.partnerToken, tc.body).wantError(http.StatusBadRequest, nameBadRequest, tc.frag)
		})
	}
	if n := len(w.audit("device.privacyMode")); n != 0 {
		t.Fatalf("%d changes recorded by refused calls", n)
	}
}

func TestBulkPrivacyConfig(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	w.cmd.setOnline(w.imeis[0], true)
	r := w.do("GET", "/v2/devices/"+w.imeis[0]+"/privacy-config", w.viewer, nil).want(http.StatusOK)
	if r.str("data.privacyConfig.gpsTracking") != "disabled" || r.str("data.privacyConfig.otherEvents") != "disabled" {
		t.Fatalf("defaults %s", r.raw)
	}
	body := map[string]any{"imeis": []string{w.imeis[0], w.imeis[1], w.otherIMEI},
		"privacyConfig": map[string]any{"gpsTracking": "enabled", "liveVideo": "enabled"}}
	r = w.do("PATCH", "/v2/devices/bulk/privacy-config", w.partnerToken, body).want(http.StatusOK)
	if !slices.Equal(strs(r.list("data.success")), w.imeis[:1]) || !slices.Equal(strs(r.list("data.accepted")), w.imeis[1:]) ||
		len(r.list("data.rejected")) != 1 {
		t.Fatalf("answer %s", r.raw)
	}
	// PATCH keeps what it does not name.
	w.do("PATCH", "/v2/devices/bulk/privacy-config", w.partnerToken, map[string]any{"imeis": w.imeis[:1],
		"privacyConfig": map[string]any{"liveVideo": "disabled", "virtualEvent": "enabled"}}).want(http.StatusOK)
	r = w.do("GET", "/v2/devices/"+w.imeis[0]+"/privacy-config", w.viewer, nil).want(http.StatusOK)
	if r.str("data.privacyConfig.gpsTracking") != "enabled" || r.str("data.privacyConfig.liveVideo") != "disabled" ||
		r.str("data.privacyConfig.virtualEvent") != "enabled" || r.str("data.privacyConfig.cabinEvents") != "disabled" {
		t.Fatalf("after PATCH %s", r.raw)
	}
	if _, e := w.settings(w.otherIMEI); e.PrivacyModeConfig.GPSTracking {
		t.Fatal("another partner's device changed")
	}
	msgs := w.privacyMessages()
	if len(msgs) != 3 || msgs[0].Change != "config" || msgs[0].Config == nil || !msgs[0].Config.GPSTracking || msgs[0].Pending || !msgs[1].Pending {
		t.Fatalf("messages %+v", msgs)
	}
	if n := len(w.audit("device.privacyConfig")); n != 3 {
		t.Fatalf("%d audit entries", n)
	}
	bad := []struct {
		name string
		body map[string]any
		frag string
	}{
		{"bad value", map[string]any{"imeis": w.imeis, "privacyConfig": map[string]any{"gpsTracking": "on"}}, "privacyConfig.gpsTracking must be enabled or disabled"},
		{"unknown member", map[string]any{"imeis": w.imeis, "privacyConfig": map[string]any{"radio": "enabled"}}, "radio is not a known field"},
		{"nothing named", map[string]any{"imeis": w.imeis, "privacyConfig": map[string]any{}}, "at least one"},
		{"no config", map[string]any{"imeis": w.imeis}, "privacyConfig is required"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			w.do("PATCH", "/v2/devices/bulk/privacy-config", w.partnerToken, tc.body).wantError(http.StatusBadRequest, nameBadRequest, tc.frag)
		})
	}
}

func TestOrgPrivacyConfig(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	own, inherits := w.imeis[0], w.imeis[1]
	w.cmd.setOnline(own, true)
	org := "/v2/organizations/" + idStr(w.orgID) + "/privacy-config"
	w.do("PATCH", "/v2/devices/bulk/privacy-config", w.partnerToken, map[string]any{"imeis": []string{own},
		"privacyConfig": map[string]any{"otherEvents": "enabled"}}).want(http.StatusOK)
	w.cmd.take()

	// Profile off: the default changes; a device with its own configuration keeps it.
	r := w.do("PATCH", org, w.editor, map[string]any{"gpsTracking": "enabled"}).want(http.StatusOK)
	if r.str("data.gpsTracking") != "enabled" || r.str("data.liveVideo") != "disabled" {
		t.Fatalf("answer %s", r.raw)
	}
	if _, e := w.settings(inherits); !e.PrivacyModeConfig.GPSTracking {
		t.Fatal("a device following the organization did not get the default")
	}
	if _, e := w.settings(own); e.PrivacyModeConfig.GPSTracking || !e.PrivacyModeConfig.OtherEvents {
		t.Fatal("profile off: a device's own configuration changed")
	}
	if _, _, pushed := w.cmd.take(); !slices.Equal(pushed, w.imeis) {
		t.Fatalf("pushed %v", pushed)
	}
	if msgs := w.privacyMessages(); len(msgs) != 2 || msgs[1].IMEI != inherits || !msgs[1].Pending || !msgs[1].Config.GPSTracking {
		t.Fatalf("messages %+v", msgs)
	}

	// Profile on: the named members reach every device at once (connected)
	// or on reconnect; what is not named stays as each device has it.
	w.setProfile(true)
	w.do("PATCH", org, w.editor, map[string]any{"cabinEvents": "enabled"}).want(http.StatusOK)
	if _, e := w.settings(own); !e.PrivacyModeConfig.CabinEvents || !e.PrivacyModeConfig.OtherEvents || e.PrivacyModeConfig.GPSTracking {
		t.Fatalf("profile on, own: %+v", e.PrivacyModeConfig)
	}
	if _, e := w.settings(inherits); !e.PrivacyModeConfig.CabinEvents || !e.PrivacyModeConfig.GPSTracking {
		t.Fatalf("profile on, following: %+v", e.PrivacyModeConfig)
	}
	msgs := w.privacyMessages()[2:]
	if len(msgs) != 2 || msgs[0].IMEI != own || msgs[0].Pending || msgs[1].IMEI != inherits || !msgs[1].Pending {
		t.Fatalf("messages %+v", msgs)
	}
	if _, _, pushed := w.cmd.take(); !slices.Equal(pushed, w.imeis) {
		t.Fatalf("pushed %v", pushed)
	}
	if r := w.do("GET", org, w.viewer, nil).want(http.StatusOK); r.str("data.cabinEvents") != "enabled" || r.str("data.gpsTracking") != "enabled" {
		t.Fatalf("GET %s", r.raw)
	}
	w.do("PATCH", org, w.editor, map[string]any{"cabinEvents": "yes"}).wantError(http.StatusBadRequest, nameBadRequest, "cabinEvents must be enabled or disabled")
}
