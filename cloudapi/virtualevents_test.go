package cloudapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

func (m *mediaEnv) virtual(token string, body map[string]any) *response {
	m.t.Helper()
	return m.do("POST", devPath(m.dev.IMEI, "/virtual-event"), token, body)
}

// recordAround gives the simulated device a recording of both cameras around at.
func (m *mediaEnv) recordAround(at time.Time) {
	m.cmd.set(m.dev.IMEI, func(d *fakeDevice) {
		for _, cam := range []int{1, 2} {
			d.recordings[cam] = append(d.recordings[cam], [2]int64{at.Add(-time.Hour).Unix(), at.Add(time.Hour).Unix()})
		}
	})
}

func TestVirtualEventRecordingRules(t *testing.T) {
	t.Parallel()
	at := evT0.Add(10 * time.Minute)
	all := func(cam int) map[string]any {
		return map[string]any{"time": isoTime(at), "mediaType": "video", "durationSeconds": 20, "quality": "high",
			"cameraId": cam, "metadata": "loading dock", "visualAlert": true, "audioAlert": false}
	}
	t.Run("only time and mediaType never report a missing recording", func(t *testing.T) {
		e := newMediaEnv(t)
		r := e.virtual(e.partnerToken, map[string]any{"time": isoTime(at), "mediaType": "video"}).want(200)
		if r.strID("data.eventId") == 0 || len(r.list("data.files")) != 0 {
			t.Fatalf("virtual event %s", r.raw)
		}
		if n := len(e.messages(store.MessageEvent)); n != 1 {
			t.Fatalf("%d event messages", n)
		}
		if n := len(e.cmd.commands(protocol.CmdClip)); n != 2 {
			t.Fatalf("%d clip requests, want one per camera", n)
		}
	})
	t.Run("all parameters and no recording is NoRecordingAvailableError", func(t *testing.T) {
		e := newMediaEnv(t)
		e.virtual(e.partnerToken, all(1)).wantError(404, NameNoRecordingAvailable, "camera 1")
		r := e.do("GET", devPath(e.dev.IMEI, "/events")+window(evT0, evT0.Add(time.Hour)), e.partnerToken, nil).want(200)
		if r.num("metadata.count") != 0 || len(e.messages(store.MessageEvent)) != 0 {
			t.Fatalf("an event was created: %s", r.raw)
		}
	})
	t.Run("all parameters with a recording", func(t *testing.T) {
		e := newMediaEnv(t)
		e.recordAround(at)
		r := e.virtual(e.partnerToken, all(2)).want(200)
		fileID := fmt.Sprint(at.Unix())
		if f := r.get("data.files.0").(map[string]any); f["fileId"] != fileID || f["cameraId"].(float64) != 2 {
			t.Fatalf("files %s", r.raw)
		}
		var clip protocol.ClipArgs
		json.Unmarshal(e.cmd.commands(protocol.CmdClip)[0].args, &clip)
		if clip.DurationSeconds != 20 || clip.Quality != "high" || clip.CameraID != 2 || clip.Time != at.Unix() || clip.MediaType != "video" {
			t.Fatalf("clip args %+v", clip)
		}
		ev := e.do("GET", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", r.strID("data.eventId"))), e.partnerToken, nil).want(200)
		if ev.str("data.eventType") != "virtualEvent" || ev.str("data.metadata") != "loading dock" || ev.str("data.time") != isoTime(at) {
			t.Fatalf("event %s", ev.raw)
		}
		link := e.do("GET", fileLinkPath(e.dev.IMEI, fileID, "video", 2), e.partnerToken, nil).want(200).str("data.url")
		if status, body, _ := e.fetch(link); status != 200 || !strings.Contains(string(body), "video:") {
			t.Fatalf("download %d %q", status, body)
		}
		if ev := e.messages(store.MessageEvent)[0].Event; ev == nil || ev.Type != store.EventVirtual {
			t.Fatalf("event message fact %+v", ev)
		}
	})
	t.Run("mediaType none sends a webhook and needs no device", func(t *testing.T) {
		e := newMediaEnv(t)
		e.cmd.set(e.dev.IMEI, func(d *fakeDevice) { d.online = false })
		e.virtual(e.partnerToken, map[string]any{"time": isoTime(at), "mediaType": "none", "metadata": "note"}).want(200)
		msgs := e.messages(store.MessageEvent)
		if len(msgs) != 1 || msgs[0].Event == nil || len(msgs[0].Event.Files) != 0 {
			t.Fatalf("messages %v", msgs)
		}
		if n := len(e.cmd.sent); n != 0 {
			t.Fatalf("%d commands for mediaType none", n)
		}
	})
	t.Run("media needs the device online", func(t *testing.T) {
		e := newMediaEnv(t)
		e.cmd.set(e.dev.IMEI, func(d *fakeDevice) { d.online = false })
		e.virtual(e.partnerToken, map[string]any{"time": isoTime(at)}).wantError(417, nameExpectationFailed, "online")
	})
}

func TestVirtualEventsShareTheFileOfTheirSecond(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	at := evT0.Add(time.Hour)
	e.recordAround(at)
	body := func(t time.Time) map[string]any {
		return map[string]any{"time": isoTime(t), "mediaType": "video", "cameraId": 1, "durationSeconds": 10}
	}
	first := e.virtual(e.partnerToken, body(at)).want(200)
	second := e.virtual(e.partnerToken, body(at.Add(400*time.Millisecond))).want(200)
	apart := e.virtual(e.partnerToken, body(at.Add(time.Second))).want(200)
	f1, f2, f3 := first.str("data.files.0.fileId"), second.str("data.files.0.fileId"), apart.str("data.files.0.fileId")
	if f1 != f2 || f1 == f3 {
		t.Fatalf("file ids %s %s %s: same second must share, a second apart must not", f1, f2, f3)
	}
	download := func(fileID string) string {
		link := e.do("GET", fileLinkPath(e.dev.IMEI, fileID, "video", 1), e.partnerToken, nil).want(200).str("data.url")
		status, body, _ := e.fetch(link)
		if status != 200 {
			t.Fatalf("download %s: %d", fileID, status)
		}
		return string(body)
	}
	// Each request asks the device, and the file of a second holds the clip
	// of its last request: both events show the second one's upload.
	clips := e.cmd.commands(protocol.CmdClip)
	if len(clips) != 3 {
		t.Fatalf("%d clip requests, want 3", len(clips))
	}
	if got := download(f1); !strings.HasSuffix(got, "#2") {
		t.Fatalf("shared file %q, want the last request's upload", got)
	}
	// An earlier request's clip arriving late is refused, and the upload of
	// the last one is written once.
	url := func(i int) string {
		var a protocol.ClipArgs
		if err := json.Unmarshal(clips[i].args, &a); err != nil {
			t.Fatal(err)
		}
		return a.URL
	}
	e.put(url(0), mediaBytes(e.dev.IMEI, 1, "video", f1, 9)).wantError(http.StatusConflict, nameConflict, "later request")
	e.put(url(1), mediaBytes(e.dev.IMEI, 1, "video", f1, 9)).wantError(http.StatusConflict, nameConflict, "written once")
	// The clip number is signed with the path.
	forged := strings.Replace(url(1), "clip=", "clip=9", 1)
	e.put(forged, mediaBytes(e.dev.IMEI, 1, "video", f1, 9)).wantError(http.StatusForbidden, nameForbidden, "signature")
	if got := download(f1); !strings.HasSuffix(got, "#2") {
		t.Fatalf("shared file after refused uploads %q", got)
	}
	if got := download(f3); !strings.HasSuffix(got, "#3") {
		t.Fatalf("separate file %q", got)
	}
	// Deleting one of the same-second events leaves the file for the other.
	e.do("DELETE", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", first.strID("data.eventId"))), e.partnerToken, nil).want(200)
	e.sweep()
	if got := download(f1); !strings.HasSuffix(got, "#2") {
		t.Fatalf("after deleting one event: %q", got)
	}
	e.do("DELETE", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", second.strID("data.eventId"))), e.partnerToken, nil).want(200)
	e.sweep()
	e.do("GET", fileLinkPath(e.dev.IMEI, f1, "video", 1), e.partnerToken, nil).wantError(404, nameNotFound)
	download(f3)
}

func TestVirtualEventValidation(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	now := isoTime(evT0)
	tests := []struct {
		name  string
		body  any
		field string
	}{
		{"unknown parameter", map[string]any{"time": now, "speed": 5}, "speed"},
		{"time missing", map[string]any{"mediaType": "none"}, "time"},
		{"time not ISO 8601", map[string]any{"time": "noon"}, "time"},
		{"time in the future", map[string]any{"time": isoTime(e.clock.Now().Add(time.Hour))}, "future"},
		{"mediaType", map[string]any{"time": now, "mediaType": "audio"}, "mediaType"},
		{"durationSeconds too long", map[string]any{"time": now, "durationSeconds": 86401}, "durationSeconds"},
		{"durationSeconds fractional", map[string]any{"time": now, "durationSeconds": 1.5}, "durationSeconds"},
		{"durationSeconds as text", map[string]any{"time": now, "durationSeconds": "10"}, "durationSeconds"},
		{"quality", map[string]any{"time": now, "quality": "ultra"}, "quality"},
		{"cameraId", map[string]any{"time": now, "cameraId": 3}, "cameraId"},
		{"cameraId fractional", map[string]any{"time": now, "cameraId": 1.5}, "cameraId"},
		{"metadata not text", map[string]any{"time": now, "metadata": 7}, "metadata"},
		{"visualAlert not boolean", map[string]any{"time": now, "visualAlert": "yes"}, "visualAlert"},
		{"not an object", "[]", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("POST", devPath(e.dev.IMEI, "/virtual-event"), e.partnerToken, tc.body).wantError(400, nameBadRequest, tc.field)
		})
	}
	if n := len(e.cmd.sent); n != 0 {
		t.Fatalf("%d commands for invalid requests", n)
	}
}

func TestVirtualEventRefusedByPrivacy(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	at := isoTime(evT0)
	setPrivacy := func(fn func(p *store.PrivacyConfig)) {
		err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
			ds, _ := tx.DeviceSettings(e.dev.IMEI)
			p := store.DefaultPrivacyConfig()
			fn(&p)
			ds.Privacy = &p
			return tx.PutDeviceSettings(ds, "test.privacy")
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setPrivacy(func(p *store.PrivacyConfig) { p.AllEventsEnabled = false })
	for _, mt := range []string{"none", "video"} {
		e.virtual(e.partnerToken, map[string]any{"time": at, "mediaType": mt}).wantError(423, nameLocked, "allEventsEnabled")
	}
	setPrivacy(func(p *store.PrivacyConfig) { p.Cameras = map[int]bool{2: false} })
	e.virtual(e.partnerToken, map[string]any{"time": at, "cameraId": 2}).wantError(423, nameLocked, "camera 2")
	// Without a camera, the blocked one is left out.
	e.recordAround(evT0)
	r := e.virtual(e.partnerToken, map[string]any{"time": at}).want(200)
	if files := r.list("data.files"); len(files) != 1 || files[0].(map[string]any)["cameraId"].(float64) != 1 {
		t.Fatalf("files %s", r.raw)
	}
	if n := len(e.messages(store.MessageEvent)); n != 1 {
		t.Fatalf("%d event messages", n)
	}
	// Privacy mode keeps virtual events off unless its configuration allows them.
	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		ds, _ := tx.DeviceSettings(e.dev2.IMEI)
		ds.PrivacyMode, ds.PrivacyModeConfig = store.PrivacyModeOn, &store.PrivacyModeConfig{}
		return tx.PutDeviceSettings(ds, "test.privacyMode")
	})
	if err != nil {
		t.Fatal(err)
	}
	e.do("POST", devPath(e.dev2.IMEI, "/virtual-event"), e.partnerToken, map[string]any{"time": at, "mediaType": "none"}).
		wantError(423, nameLocked, "privacy mode")
}

// TestVirtualEventPositionNearItsTime: a virtual event is placed where the
// device's GPS was within ten minutes of its time (before it, else after
// it), and nowhere when the device has no GPS sample that near, however
// recent its latest one is.
func TestVirtualEventPositionNearItsTime(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	now := e.clock.Now().Truncate(time.Second)
	e.recordGPS(e.dev.IMEI, now.Add(-time.Minute), 1)               // lat 52
	e.recordGPS(e.dev.IMEI, now.Add(-2*time.Hour+5*time.Minute), 1) // five minutes after the event below
	position := func(at time.Time) (lat, lon float64) {
		t.Helper()
		id := e.virtual(e.partnerToken, map[string]any{"time": isoTime(at), "mediaType": "none"}).want(200).strID("data.eventId")
		ev := e.do("GET", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", id)), e.partnerToken, nil).want(200)
		return ev.num("data.lat"), ev.num("data.lon")
	}
	if lat, lon := position(now.Add(-72 * time.Hour)); lat != 0 || lon != 0 {
		t.Fatalf("an event three days back has the device's current position %v,%v", lat, lon)
	}
	if lat, lon := position(now); lat != 52 || lon != 4 {
		t.Fatalf("an event now is at %v,%v, want the sample of a minute before", lat, lon)
	}
	if lat, _ := position(now.Add(-2 * time.Hour)); lat != 52 {
		t.Fatalf("an event five minutes before a sample is at lat %v, want the sample's", lat)
	}
}
