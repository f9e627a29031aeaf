package cloudapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

var evT0 = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)

func evTime(d time.Duration) int64 { return evT0.Add(d).UnixMilli() }

func window(start, end time.Time) string {
	return "?start=" + url.QueryEscape(isoTime(start)) + "&end=" + url.QueryEscape(isoTime(end))
}

func TestDeviceEventsWindowAndPaging(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	for day := 0; day < 40; day++ {
		e.report(e.dev, protocol.Event{ID: fmt.Sprint("d", day), Type: "deceleration", Time: evTime(time.Duration(day) * 24 * time.Hour),
			Lat: 32, Lon: 34.8, Speed: 61, Accuracy: 4})
	}
	path := devPath(e.dev.IMEI, "/events")
	start := evT0.Add(24 * time.Hour)
	tests := []struct {
		name   string
		query  string
		status int
		count  int
		msg    []string
	}{
		{"exactly 31 days", window(start, start.Add(31*24*time.Hour)), 200, 32, nil},
		{"31 days and a millisecond", window(start, start.Add(31*24*time.Hour+time.Millisecond)), 400, 0, []string{"end", "31 days"}},
		{"end before start", window(start, start.Add(-time.Hour)), 400, 0, []string{"end", "before start"}},
		{"start missing", "?end=" + url.QueryEscape(isoTime(start)), 400, 0, []string{"start", "required"}},
		{"start not ISO 8601", "?start=yesterday&end=" + url.QueryEscape(isoTime(start)), 400, 0, []string{"start", "ISO 8601"}},
		{"limit out of range", window(start, start.Add(time.Hour)) + "&limit=0", 400, 0, []string{"limit"}},
		{"times without a zone", "?start=2026-02-02T00:00:00&end=2026-02-03T00:00:00Z", 400, 0, []string{"start has no time zone", "2026-03-01T12:00:00Z"}},
		{"times with an offset", "?start=2026-02-02T02:00:00%2B02:00&end=2026-02-03T00:00:00Z", 200, 2, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", path+tc.query, e.partnerToken, nil)
			if tc.status != 200 {
				r.wantError(tc.status, nameBadRequest, tc.msg...)
				return
			}
			r.want(200)
			if got := int(r.num("metadata.count")); got != tc.count {
				t.Fatalf("count %d, want %d", got, tc.count)
			}
		})
	}
	r := e.do("GET", path+window(start, start.Add(31*24*time.Hour))+"&limit=5&offset=10", e.partnerToken, nil).want(200)
	if r.num("metadata.count") != 32 || r.num("metadata.limit") != 5 || r.num("metadata.offset") != 10 || len(r.list("data")) != 5 {
		t.Fatalf("page %s", r.raw)
	}
	if got := r.str("data.0.time"); got != isoTime(evT0.Add(11*24*time.Hour)) {
		t.Fatalf("first of page at %s", got)
	}
	ev := r.get("data.0").(map[string]any)
	for _, k := range []string{"id", "eventType", "time", "lat", "lon", "speed", "accuracy", "status", "severity", "metadata", "files", "eventComments"} {
		if _, ok := ev[k]; !ok {
			t.Errorf("event lacks %s: %v", k, ev)
		}
	}
	if ev["status"] != "new" || ev["severity"].(float64) != 2 || ev["eventType"] != "deceleration" {
		t.Fatalf("event %v", ev)
	}
}

func TestOrganizationEvents(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	for i, typ := range []string{"cellPhoneUseBeep", "cellPhoneUseBeep", "cellPhoneUse", "accOn"} {
		for _, d := range []*store.Device{e.dev, e.dev2, e.foreign} {
			e.report(d, protocol.Event{ID: fmt.Sprint(i), Type: typ, Time: evTime(time.Duration(i) * time.Minute), Speed: 40, Accuracy: 3.5})
		}
	}
	path := orgEventsPath(e.org.ID)
	body := func(types ...string) map[string]any {
		b := map[string]any{"start": isoTime(evT0), "end": isoTime(evT0.Add(time.Hour)), "limit": 50, "offset": 0}
		if types != nil {
			b["eventTypes"] = types
		}
		return b
	}
	tests := []struct {
		name  string
		token string
		body  map[string]any
		count int
		types map[string]bool
	}{
		{"all types include beeps", e.partnerToken, body(), 8, map[string]bool{"cellPhoneUseBeep": true, "cellPhoneUse": true, "accOn": true}},
		{"named types leave beeps out", e.partnerToken, body("cellPhoneUse", "accOn"), 4, map[string]bool{"cellPhoneUse": true, "accOn": true}},
		{"beeps when named", e.partnerToken, body("cellPhoneUseBeep"), 4, map[string]bool{"cellPhoneUseBeep": true}},
		{"the other partner sees only its device", e.foreignToken, body(), 4, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", path, tc.token, tc.body).want(200)
			if got := int(r.num("metadata.count")); got != tc.count || len(r.list("data")) != tc.count {
				t.Fatalf("count %d, data %d, want %d", got, len(r.list("data")), tc.count)
			}
			for _, it := range r.list("data") {
				ev := it.(map[string]any)
				if tc.types != nil && !tc.types[ev["eventType"].(string)] {
					t.Fatalf("unexpected type %v", ev["eventType"])
				}
				if tc.token == e.foreignToken && ev["imei"] != e.foreign.IMEI {
					t.Fatalf("foreign partner saw %v", ev["imei"])
				}
				if ev["deviceName"] == "" || ev["accuracy"].(float64) != 3.5 {
					t.Fatalf("org event without device name or accuracy: %v", ev)
				}
			}
		})
	}
	r := e.do("POST", path, e.partnerToken, body("cellPhoneUse")).want(200)
	if r.str("data.0.deviceName") != "Truck 1" || r.str("data.0.imei") != e.dev.IMEI {
		t.Fatalf("first event %s", r.raw)
	}
	e.do("POST", path, e.partnerToken, body("teleport")).wantError(400, nameBadRequest, "eventTypes[0]")
	e.do("POST", path, e.partnerToken, map[string]any{"start": isoTime(evT0), "end": isoTime(evT0.Add(32 * 24 * time.Hour))}).
		wantError(400, nameBadRequest, "31 days")
	e.do("POST", path, e.partnerToken, map[string]any{"start": isoTime(evT0), "end": isoTime(evT0), "colour": "red"}).
		wantError(400, nameBadRequest, "colour")
	// The reference contract's query form.
	q := e.do("POST", path+window(evT0, evT0.Add(time.Hour))+"&limit=2", e.partnerToken, nil).want(200)
	if q.num("metadata.count") != 8 || len(q.list("data")) != 2 {
		t.Fatalf("query form %s", q.raw)
	}
	e.do("POST", path, e.otherToken, body()).wantError(404, nameNotFound)
}

func orgEventsPath(id int64) string { return fmt.Sprintf("/v2/organizations/%d/events", id) }

func TestEventDetailReviewAndDelete(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	id := e.report(e.dev, protocol.Event{ID: "a", Type: "qrCode", QRCode: "DRIVER-9", Time: evTime(0)})
	id2 := e.report(e.dev2, protocol.Event{ID: "b", Type: "sdCardFormatted", Time: evTime(time.Second),
		SDCard: &protocol.SDCard{UUID: "1234-ABCD", Manufacturer: "Kingston"}})
	path := devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", id))
	r := e.do("GET", path, e.partnerToken, nil).want(200)
	if r.str("data.metadata") != "DRIVER-9" || r.str("data.eventType") != "qrCode" {
		t.Fatalf("qr event %s", r.raw)
	}
	sd := e.do("GET", devPath(e.dev2.IMEI, fmt.Sprintf("/events/%d", id2)), e.partnerToken, nil).want(200)
	if sd.str("data.sdCard.uuid") != "1234-ABCD" || sd.str("data.sdCard.manufacturer") != "Kingston" {
		t.Fatalf("sd card event %s", sd.raw)
	}
	// An event of another device under this device's path is not found.
	e.do("GET", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", id2)), e.partnerToken, nil).wantError(404, nameNotFound)
	e.do("GET", path, e.foreignToken, nil).wantError(404, nameNotFound)

	review := map[string]any{"eventIds": []int64{id, id2}, "eventReviewState": map[string]any{"status": "resolved", "severity": 1, "comment": "checked"}}
	rv := e.do("PATCH", "/v2/devices/event-review-state", e.partnerToken, review).want(200)
	if len(rv.list("data")) != 2 {
		t.Fatalf("review %s", rv.raw)
	}
	r = e.do("GET", path, e.partnerToken, nil).want(200)
	if r.str("data.status") != "resolved" || r.num("data.severity") != 1 {
		t.Fatalf("after review %s", r.raw)
	}
	c := r.get("data.eventComments.0").(map[string]any)
	if c["comment"] != "checked" || c["createdByAudienceName"] != "partner" || c["createdById"].(float64) == 0 || c["createdAt"] == "" ||
		c["createdBy"].(map[string]any)["email"] != "partner@example.com" || c["id"].(float64) == 0 {
		t.Fatalf("comment %v", c)
	}
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"eventIds": []int64{}, "eventReviewState": map[string]any{"status": "new"}}, "eventIds"},
		{map[string]any{"eventIds": []int64{id}, "eventReviewState": map[string]any{"status": "open"}}, "eventReviewState.status"},
		{map[string]any{"eventIds": []int64{id}, "eventReviewState": map[string]any{"severity": 4}}, "eventReviewState.severity"},
		{map[string]any{"eventIds": []int64{id}, "eventReviewState": map[string]any{"comment": strings.Repeat("x", 256)}}, "eventReviewState.comment"},
		{map[string]any{"eventIds": []int64{id}}, "eventReviewState"},
	} {
		e.do("PATCH", "/v2/devices/event-review-state", e.partnerToken, bad.body).wantError(400, nameBadRequest, bad.field)
	}
	// The foreign partner cannot review the first partner's events.
	e.do("PATCH", "/v2/devices/event-review-state", e.foreignToken, review).wantError(404, nameNotFound, fmt.Sprint(id))
	viewer := e.orgUser(e.org.ID, "viewer@example.com", store.AccessViewer)
	e.do("PATCH", "/v2/devices/event-review-state", viewer, review).wantError(403, nameForbidden)
	e.do("DELETE", path, viewer, nil).wantError(403, nameForbidden)

	d := e.do("DELETE", path, e.partnerToken, nil).want(200)
	if d.id("data.eventId") != id || d.str("data.time") != isoTime(evT0) {
		t.Fatalf("delete %s", d.raw)
	}
	e.do("GET", path, e.partnerToken, nil).wantError(404, nameNotFound)
	e.do("DELETE", path, e.partnerToken, nil).wantError(404, nameNotFound)
}

// orgUser adds an organization user with the access level and returns its token.
func (m *mediaEnv) orgUser(orgID int64, email, level string) string {
	m.t.Helper()
	m.addOrgUser(orgID, email, "Secret123", level)
	return m.login(email, "Secret123")
}

// scopedToken mints a scoped token of the organization's first partner, with
// media access for its features.
func (m *mediaEnv) scopedToken(scope Scope) string {
	m.t.Helper()
	scope.OrganizationID, scope.PartnerID, scope.MediaFeatures = m.org.ID, m.partnerID, scope.Features
	tok, _, err := m.api.issue(Principal{Kind: kindScoped, OrganizationID: m.org.ID, PartnerID: m.partnerID, Scope: &scope}, time.Hour)
	if err != nil {
		m.t.Fatal(err)
	}
	return tok
}

func TestEventsWithScopedTokens(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	e.report(e.dev, protocol.Event{ID: "1", Type: "button", Time: evTime(0)})
	e.report(e.dev2, protocol.Event{ID: "1", Type: "button", Time: evTime(0)})
	list := devPath(e.dev.IMEI, "/events") + window(evT0, evT0.Add(time.Hour))
	events := e.scopedToken(Scope{IMEI: e.dev.IMEI, Features: []string{FeatureDeviceEvent}})
	e.do("GET", list, events, nil).want(200)
	e.do("GET", devPath(e.dev2.IMEI, "/events")+window(evT0, evT0.Add(time.Hour)), events, nil).wantError(404, nameNotFound)
	r := e.do("POST", orgEventsPath(e.org.ID), events, map[string]any{"start": isoTime(evT0), "end": isoTime(evT0.Add(time.Hour))}).want(200)
	if r.num("metadata.count") != 1 || r.str("data.0.imei") != e.dev.IMEI {
		t.Fatalf("scoped organization query %s", r.raw)
	}
	live := e.scopedToken(Scope{IMEI: e.dev.IMEI, Features: []string{FeatureDeviceLiveStreaming}})
	e.do("GET", list, live, nil).wantError(403, nameForbidden, FeatureDeviceEvent)
	e.do("PATCH", "/v2/devices/event-review-state", events, map[string]any{"eventIds": []int{1},
		"eventReviewState": map[string]any{"status": "resolved"}}).wantError(403, nameForbidden)
}

func TestDeviceEventRulesThroughTheHook(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	// A redelivery is stored once.
	ev := protocol.Event{ID: "dup", Type: "accident", Time: evTime(0), Files: []protocol.File{{CameraID: 1, FileID: "f1", FileType: "video"}}}
	first, second := e.report(e.dev, ev), e.report(e.dev, ev)
	if first == 0 || first != second {
		t.Fatalf("redelivery: %d then %d", first, second)
	}
	r := e.do("GET", devPath(e.dev.IMEI, "/events")+window(evT0, evT0.Add(time.Hour)), e.partnerToken, nil).want(200)
	if r.num("metadata.count") != 1 || len(e.messages(store.MessageEvent)) != 1 {
		t.Fatalf("redelivery stored twice: %s", r.raw)
	}
	// A bad event is refused with ErrInvalid, which the broker answers as an invalid payload.
	err := e.db.Update(t.Context(), store.Actor{}, func(tx *store.Tx) error {
		return broker.IngestEvent(tx, e.dev, protocol.Event{ID: "x", Type: "teleport", Time: evTime(0)})
	})
	if err == nil || !strings.Contains(err.Error(), "teleport") {
		t.Fatalf("unknown type: %v", err)
	}
	// accOn is text only, beeps carry no media and are not sent to webhooks.
	files := []protocol.File{{CameraID: 1, FileID: "f2", FileType: "video"}}
	on := e.report(e.dev, protocol.Event{ID: "on", Type: "accOn", Time: evTime(time.Second), Files: files})
	beep := e.report(e.dev, protocol.Event{ID: "beep", Type: "smokingBeep", Time: evTime(2 * time.Second), Speed: 30, Files: files})
	for _, id := range []int64{on, beep} {
		r := e.do("GET", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", id)), e.partnerToken, nil).want(200)
		if len(r.list("data.files")) != 0 {
			t.Fatalf("event %d kept files: %s", id, r.raw)
		}
	}
	if n := len(e.messages(store.MessageEvent)); n != 2 {
		t.Fatalf("%d event messages, want accident and accOn", n)
	}
}

func TestEventsTenancy(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	id := e.report(e.dev, protocol.Event{ID: "1", Type: "button", Time: evTime(0)})
	for _, req := range []struct{ method, path string }{
		{"GET", devPath(e.dev.IMEI, "/events") + window(evT0, evT0.Add(time.Hour))},
		{"GET", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", id))},
		{"DELETE", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", id))},
		{"GET", devPath(e.dev.IMEI, "/event-file-link?fileId=1&fileType=video&cameraId=1")},
		{"GET", devPath(e.dev.IMEI, "/geofences")},
		{"PUT", devPath(e.dev.IMEI, "/geofences")},
		{"POST", devPath(e.dev.IMEI, "/virtual-event")},
		{"GET", devPath(e.dev.IMEI, "/recording-ranges")},
		{"POST", devPath(e.dev.IMEI, "/connect-media")},
		{"GET", devPath(e.dev.IMEI, "/adas-calibration-images")},
		{"DELETE", devPath(e.dev.IMEI, "/adas-delete-calibration-images")},
	} {
		var body any
		switch req.path[len(req.path)-4:] {
		case "nces":
			body = []any{}
		case "vent":
			body = map[string]any{"time": isoTime(evT0), "mediaType": "none"}
		}
		r := e.do(req.method, req.path, e.foreignToken, body)
		if r.status != http.StatusNotFound {
			t.Errorf("%s %s as another partner: %d %s", req.method, req.path, r.status, r.raw)
		}
	}
}
