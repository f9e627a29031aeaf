package cloudapi

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// ev is one event item of an event configuration body.
func ev(eventType, dataType string, extra ...any) map[string]any {
	it := map[string]any{"eventType": eventType, "dataType": dataType}
	for i := 0; i+1 < len(extra); i += 2 {
		it[extra[i].(string)] = extra[i+1]
	}
	return it
}

func events(items ...map[string]any) map[string]any {
	list := make([]any, len(items))
	for i, it := range items {
		list[i] = it
	}
	return map[string]any{"vehicleType": "Van", "events": list}
}

func TestEventConfigValidation(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	path := "/v2/devices/" + w.imeis[0] + "/event-config"
	lane := func(times, secs any) map[string]any {
		cfg := map[string]any{}
		if times != nil {
			cfg["laneWeavingTimes"] = times
		}
		if secs != nil {
			cfg["laneWeavingDurationSeconds"] = secs
		}
		return events(ev("laneWeaving", "video", "config", cfg))
	}
	fatigue := func(h any) map[string]any { return events(ev("possibleFatigue", "video", "drivingDuration", h)) }
	mvai := func(speed any) map[string]any { return events(ev("smoking", "video", "minimumSpeed", speed)) }
	limit := func(kmh any) map[string]any { return events(ev("speedLimit", "none", "speedLimit", kmh)) }
	tests := []struct {
		name      string
		body      map[string]any
		fragments []string
	}{
		{"lane weaving 1 lane", lane(1, nil), []string{"events[0].config.laneWeavingTimes", "from 2 to 10"}},
		{"lane weaving 2 lanes", lane(2, nil), nil},
		{"lane weaving 10 lanes", lane(10, nil), nil},
		{"lane weaving 11 lanes", lane(11, nil), []string{"events[0].config.laneWeavingTimes", "from 2 to 10"}},
		{"lane weaving 4 seconds", lane(nil, 4), []string{"laneWeavingDurationSeconds", "from 5 to 60"}},
		{"lane weaving 5 seconds", lane(nil, 5), nil},
		{"lane weaving 60 seconds", lane(nil, 60), nil},
		{"lane weaving 61 seconds", lane(nil, 61), []string{"laneWeavingDurationSeconds", "from 5 to 60"}},
		{"driving -1 hours", fatigue(-1), []string{"events[0].drivingDuration", "from 0 to 20"}},
		{"driving 0 hours", fatigue(0), nil},
		{"driving 20 hours", fatigue(20), nil},
		{"driving 21 hours", fatigue(21), []string{"events[0].drivingDuration", "from 0 to 20"}},
		{"driving 2.5 hours", fatigue(2.5), []string{"whole number of hours"}},
		{"MV+AI speed -1", mvai(-1), []string{"events[0].minimumSpeed", "from 0 to 180"}},
		{"MV+AI speed 0", mvai(0), nil},
		{"MV+AI speed 180", mvai(180), nil},
		{"MV+AI speed 181", mvai(181), []string{"events[0].minimumSpeed", "from 0 to 180"}},
		{"minimum speed of a non MV+AI event", events(ev("acceleration", "video", "minimumSpeed", 10)), []string{"minimumSpeed applies only to MV+AI events"}},
		{"beeps 0", events(ev("cellPhoneUse", "video", "numberOfBeeps", 0)), []string{"numberOfBeeps", "from 1 to 6"}},
		{"beeps 1", events(ev("cellPhoneUse", "video", "numberOfBeeps", 1)), nil},
		{"beeps 6", events(ev("cellPhoneUse", "video", "numberOfBeeps", 6)), nil},
		{"beeps 7", events(ev("cellPhoneUse", "video", "numberOfBeeps", 7)), []string{"numberOfBeeps", "from 1 to 6"}},
		{"weight 6", events(ev("jolt", "video", "weight", 6)), []string{"weight", "from 0 to 5"}},
		{"speed limit 0", limit(0), []string{"events[0].speedLimit", "from 1 to 300"}},
		{"speed limit 1", limit(1), nil},
		{"speed limit 300", limit(300), nil},
		{"speed limit 301", limit(301), []string{"events[0].speedLimit", "from 1 to 300"}},
		{"speed limit missing", events(ev("speedLimit", "none")), []string{"events[0].speedLimit is required"}},
		{"speed limit on another event", events(ev("jolt", "video", "speedLimit", 50)), []string{"speedLimit applies only to speedLimit"}},
		{"lane config on another event", events(ev("jolt", "video", "config", map[string]any{"laneWeavingTimes": 3})), []string{"config applies only to laneWeaving"}},
		{"driving hours on another event", events(ev("jolt", "video", "drivingDuration", 3)), []string{"drivingDuration applies only to possibleFatigue"}},
		{"unknown event", events(ev("teleport", "video")), []string{"events[0].eventType", "teleport"}},
		{"webhook syntax", events(ev("sharp_turn_right", "video")), []string{"events[0].eventType", "sharp_turn_right"}},
		{"event listed twice", events(ev("jolt", "video"), ev("jolt", "none")), []string{"events[1].eventType", "twice"}},
		{"media for power on", events(ev("accOn", "video")), []string{"events[0].dataType must be none", "accOn"}},
		{"media for a beep", events(ev("smokingBeep", "snapshot")), []string{"events[0].dataType must be none"}},
		{"no data type", events(ev("jolt", "")), []string{"events[0].dataType is required"}},
		{"bad data type", events(ev("jolt", "audio")), []string{"events[0].dataType must be none, snapshot or video"}},
		{"no vehicle type", map[string]any{"events": []any{}}, []string{"vehicleType is required"}},
		{"bad vehicle type", map[string]any{"vehicleType": "Bus", "events": []any{}}, []string{"vehicleType must be one of"}},
		{"no events", map[string]any{"vehicleType": "Van"}, []string{"events is required"}},
		{"everything off", events(), nil},
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
	org := "/v2/organizations/" + idStr(w.orgID) + "/event-settings"
	w.do("POST", org, w.partnerToken, lane(11, nil)).wantError(http.StatusBadRequest, nameBadRequest, "laneWeavingTimes")
	w.do("PATCH", org, w.partnerToken, map[string]any{"events": []any{ev("laneWeaving", "video", "config", map[string]any{"laneWeavingTimes": 1})}}).
		wantError(http.StatusBadRequest, nameBadRequest, "laneWeavingTimes")
	w.do("PUT", "/v2/devices/event-config", w.partnerToken, map[string]any{"imeis": w.imeis, "config": fatigue(21)}).
		wantError(http.StatusBadRequest, nameBadRequest, "config.events[0].drivingDuration")
}

// eventTypes lists the eventType of each item of an answer's event list.
func eventTypes(r *response, path string) []string {
	var out []string
	for _, it := range r.list(path) {
		out = append(out, it.(map[string]any)["eventType"].(string))
	}
	return out
}

// item returns the event item of eventType in an answer's event list.
func item(r *response, path, eventType string) map[string]any {
	for _, it := range r.list(path) {
		if m := it.(map[string]any); m["eventType"] == eventType {
			return m
		}
	}
	return nil
}

func TestEventConfigPutReplaces(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	imei := w.imeis[0]
	path := "/v2/devices/" + imei + "/event-config"
	r := w.do("GET", path, w.viewer, nil).want(http.StatusOK)
	// Every event is on by default but speedLimit, which waits for a limit.
	if n := len(r.list("data.events")); n != len(store.EventKinds())-1 || item(r, "data.events", "speedLimit") != nil {
		t.Fatalf("a new device has %d enabled events: %s", n, r.raw)
	}
	lw := item(r, "data.events", "laneWeaving")
	if cfg := lw["config"].(map[string]any); cfg["laneWeavingTimes"] != 3.0 || cfg["laneWeavingDurationSeconds"] != 30.0 {
		t.Fatalf("lane weaving defaults %v", lw)
	}
	if it := item(r, "data.events", "accOn"); it["dataType"] != "none" {
		t.Fatalf("accOn %v", it)
	}

	// Audio alerts follow audioAlarms unless an event says otherwise; visual alerts are on.
	w.do("PUT", "/v2/devices/"+imei+"/device-config", w.partnerToken, map[string]any{"audioAlarms": v(false)}).want(http.StatusOK)
	w.do("PUT", path, w.editor, events(ev("smoking", "video"), ev("jolt", "snapshot", "audioAlert", true, "visualAlert", false),
		ev("sharpTurnRight", "video"), ev("laneWeaving", "video", "config", map[string]any{"laneWeavingTimes": 5}))).want(http.StatusOK)
	r = w.do("GET", path, w.viewer, nil).want(http.StatusOK)
	// In catalogue order; the alias sharpTurnRight is answered as sharpRightTurn.
	if got := eventTypes(r, "data.events"); !slices.Equal(got, []string{"laneWeaving", "smoking", "jolt", "sharpRightTurn"}) {
		t.Fatalf("enabled %v", got)
	}
	if it := item(r, "data.events", "smoking"); it["visualAlert"] != true || it["audioAlert"] != false || it["minimumSpeed"] != 5.0 {
		t.Fatalf("smoking %v", it)
	}
	if it := item(r, "data.events", "jolt"); it["visualAlert"] != false || it["audioAlert"] != true || it["dataType"] != "snapshot" {
		t.Fatalf("jolt %v", it)
	}
	if cfg := item(r, "data.events", "laneWeaving")["config"].(map[string]any); cfg["laneWeavingTimes"] != 5.0 || cfg["laneWeavingDurationSeconds"] != 30.0 {
		t.Fatalf("lane weaving %v", cfg)
	}
	if r.str("data.vehicleType") != "Van" {
		t.Fatalf("vehicle %s", r.raw)
	}
	_, e := w.settings(imei)
	if e.Event("acceleration").Enabled || !e.Event("smoking").Enabled || e.Event("smoking").AudioAlert {
		t.Fatal("stored event settings differ from the answer")
	}

	// A second PUT replaces the first.
	w.do("PUT", path, w.editor, events(ev("acceleration", "video"))).want(http.StatusOK)
	r = w.do("GET", path, w.viewer, nil).want(http.StatusOK)
	if got := eventTypes(r, "data.events"); !slices.Equal(got, []string{"acceleration"}) {
		t.Fatalf("after replacing: %v", got)
	}
	if n := len(w.audit("device.events")); n != 2 {
		t.Fatalf("%d audit entries", n)
	}
}

// An event configuration as GET answers it can be written back unchanged,
// on a device and on an organization: a partner's read-modify-write.
func TestEventConfigRoundTrip(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	for _, path := range []string{"/v2/devices/" + w.imeis[0] + "/event-config",
		"/v2/organizations/" + idStr(w.orgID) + "/event-settings"} {
		write := "PUT"
		if strings.HasPrefix(path, "/v2/organizations/") {
			write = "POST"
		}
		before := w.do("GET", path, w.viewer, nil).want(http.StatusOK)
		body := before.body["data"].(map[string]any)
		w.do(write, path, w.editor, body).want(http.StatusOK)
		after := w.do("GET", path, w.viewer, nil).want(http.StatusOK)
		if !reflect.DeepEqual(after.body["data"], body) {
			t.Fatalf("%s written back as read: before %s, after %s", path, before.raw, after.raw)
		}
		// With a limit, speedLimit is on and reads back with it.
		body["events"] = append(body["events"].([]any), ev("speedLimit", "video", "speedLimit", 90))
		w.do(write, path, w.editor, body).want(http.StatusOK)
		r := w.do("GET", path, w.viewer, nil).want(http.StatusOK)
		if it := item(r, "data.events", "speedLimit"); it == nil || it["speedLimit"] != 90.0 {
			t.Fatalf("%s speedLimit with a limit: %s", path, r.raw)
		}
	}
}

func TestOrgEventSettings(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	own, inherits := w.imeis[0], w.imeis[1]
	org := "/v2/organizations/" + idStr(w.orgID) + "/event-settings"
	w.do("PUT", "/v2/devices/"+own+"/event-config", w.partnerToken, events(ev("jolt", "video"), ev("smoking", "video"))).want(http.StatusOK)
	w.cmd.take()

	// POST replaces the organization's settings; without the profile a
	// device with its own settings keeps them.
	r := w.do("POST", org, w.editor, events(ev("acceleration", "video"), ev("deceleration", "snapshot"))).want(http.StatusOK)
	if got := eventTypes(r, "data.events"); !slices.Equal(got, []string{"acceleration", "deceleration"}) {
		t.Fatalf("organization %v", got)
	}
	if _, e := w.settings(inherits); !e.Event("acceleration").Enabled || e.Event("jolt").Enabled {
		t.Fatal("a device without its own settings does not follow the organization")
	}
	if _, e := w.settings(own); !e.Event("jolt").Enabled || e.Event("acceleration").Enabled {
		t.Fatal("profile off: a device's own settings changed")
	}
	if _, _, pushed := w.cmd.take(); len(pushed) != 2 {
		t.Fatalf("pushed %v", pushed)
	}

	// PATCH changes only the events it lists.
	r = w.do("PATCH", org, w.editor, map[string]any{"events": []any{ev("deceleration", "video", "visualAlert", false),
		ev("acceleration", "video", "enabled", false), ev("smoking", "video")}}).want(http.StatusOK)
	if got := eventTypes(r, "data.events"); !slices.Equal(got, []string{"deceleration", "smoking"}) {
		t.Fatalf("after PATCH %v", got)
	}
	if it := item(r, "data.events", "deceleration"); it["visualAlert"] != false || it["dataType"] != "video" {
		t.Fatalf("deceleration %v", it)
	}
	if r.str("data.vehicleType") != "Van" {
		t.Fatal("PATCH without vehicleType changed it")
	}
	if r := w.do("GET", org, w.viewer, nil).want(http.StatusOK); !slices.Equal(eventTypes(r, "data.events"), []string{"deceleration", "smoking"}) {
		t.Fatalf("GET %s", r.raw)
	}

	// With the organization profile, POST replaces every device's event settings.
	w.setProfile(true)
	before, _ := w.settings(own)
	w.do("POST", org, w.editor, events(ev("button", "video"), ev("laneWeaving", "video", "config", map[string]any{"laneWeavingTimes": 4}))).want(http.StatusOK)
	for _, imei := range w.imeis {
		ds, e := w.settings(imei)
		if ds.Events == nil || !e.Event("button").Enabled || e.Event("jolt").Enabled || e.Event("deceleration").Enabled || e.Events.LaneWeavingTimes != 4 {
			t.Fatalf("profile on: %s runs %+v", imei, e.Events)
		}
	}
	if after, _ := w.settings(own); after.Version <= before.Version {
		t.Fatal("the config version did not move")
	}
	if n := len(w.audit("device.events")); n != 3 { // the first PUT, then one per device
		t.Fatalf("%d device audit entries, want 3", n)
	}
	r = w.do("GET", "/v2/devices/"+own+"/event-config", w.viewer, nil).want(http.StatusOK)
	if got := eventTypes(r, "data.events"); !slices.Equal(got, []string{"button", "laneWeaving"}) {
		t.Fatalf("device after replace-all: %v", got)
	}

	// With the profile, PATCH changes the named events on every device and keeps the rest.
	w.do("PUT", "/v2/devices/"+own+"/event-config", w.partnerToken, events(ev("jolt", "video"), ev("button", "video"))).want(http.StatusOK)
	w.do("PATCH", org, w.editor, map[string]any{"events": []any{ev("button", "snapshot", "audioAlert", false)}}).want(http.StatusOK)
	if _, e := w.settings(own); !e.Event("jolt").Enabled || e.Event("button").DataType != "snapshot" || e.Event("button").AudioAlert {
		t.Fatalf("PATCH with profile: %+v", e.Events.Events["button"])
	}
	if _, e := w.settings(inherits); e.Event("jolt").Enabled || e.Event("button").DataType != "snapshot" {
		t.Fatal("PATCH with profile on a device following the organization")
	}
	if n := len(w.audit("organization.eventSettings")); n != 4 {
		t.Fatalf("%d organization audit entries, want 4", n)
	}
	if _, _, pushed := w.cmd.take(); len(pushed) != 7 { // both devices on each organization write, and one PUT
		t.Fatalf("pushed %v", pushed)
	}
	w.do("POST", "/v2/organizations/"+idStr(w.otherOrgID)+"/event-settings", w.partnerToken, events()).wantError(http.StatusNotFound, nameNotFound)
	w.do("POST", org, w.editor, map[string]any{"events": []any{}}).wantError(http.StatusBadRequest, nameBadRequest, "vehicleType")
	if n := len(w.audit("organization.eventSettings")); n != 4 {
		t.Fatalf("refused writes audited: %d organization audit entries", n)
	}
}

func TestBulkEventConfig(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	w.cmd.setOnline(w.imeis[1], true)
	r := w.do("PUT", "/v2/devices/event-config", w.partnerToken, map[string]any{
		"imeis": []string{w.imeis[0], w.imeis[1], w.otherIMEI}, "config": events(ev("tailgating", "video")),
	}).want(http.StatusOK)
	if !slices.Equal(strs(r.list("data.effectedImeis")), w.imeis) || !slices.Equal(strs(r.list("data.success")), w.imeis[1:]) ||
		!slices.Equal(strs(r.list("data.accepted")), w.imeis[:1]) || len(r.list("data.rejected")) != 1 {
		t.Fatalf("answer %s", r.raw)
	}
	for _, imei := range w.imeis {
		if _, e := w.settings(imei); !e.Event("tailgating").Enabled || e.Event("jolt").Enabled || e.Events.VehicleType != "Van" {
			t.Fatalf("%s: %+v", imei, e.Events)
		}
	}
	if _, e := w.settings(w.otherIMEI); !e.Event("jolt").Enabled {
		t.Fatal("another partner's device changed")
	}
	if _, _, pushed := w.cmd.take(); !slices.Equal(pushed, w.imeis) {
		t.Fatalf("pushed %v", pushed)
	}
	w.do("PUT", "/v2/devices/event-config", w.partnerToken, map[string]any{"organizationId": w.orgID,
		"excludeSerialNumbers": []string{w.imeis[0]}, "config": events()}).want(http.StatusOK)
	if _, e := w.settings(w.imeis[1]); e.Event("tailgating").Enabled {
		t.Fatal("by organization: not replaced")
	}
	if _, e := w.settings(w.imeis[0]); !e.Event("tailgating").Enabled {
		t.Fatal("excluded device changed")
	}
}
