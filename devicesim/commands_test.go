package devicesim

import (
	"bytes"
	"context"
	"encoding/json"
	"image/jpeg"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/devicesim/mp4"
)

// mediaServer records every upload it receives.
type mediaServer struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []upload
	changed chan struct{}
}

type upload struct {
	Method, Path, ContentType string
	Body                      []byte
}

func newMediaServer(t *testing.T) *mediaServer {
	m := &mediaServer{changed: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.reqs = append(m.reqs, upload{r.Method, r.URL.Path, r.Header.Get("Content-Type"), body})
		close(m.changed)
		m.changed = make(chan struct{})
		m.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/gone") {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(m.Close)
	return m
}

// count returns how many requests went to path.
func (m *mediaServer) count(path string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.reqs {
		if r.Path == path {
			n++
		}
	}
	return n
}

// await returns the n-th request to path, waiting up to 2 minutes.
func (m *mediaServer) await(t *testing.T, path string, n int) upload {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		m.mu.Lock()
		seen := 0
		for _, r := range m.reqs {
			if r.Path == path {
				seen++
				if seen == n {
					m.mu.Unlock()
					return r
				}
			}
		}
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no request %d to %s", n, path)
		}
	}
}

// decodeJPEG checks b is a JPEG of w×h.
func decodeJPEG(t *testing.T, b []byte, w, h int) {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a JPEG: %v", err)
	}
	if s := img.Bounds().Size(); s.X != w || s.Y != h {
		t.Fatalf("JPEG is %v, want %dx%d", s, w, h)
	}
}

func mediaReady(t *testing.T, c *fakeCloud, imei, fileID string) protocol.MediaReady {
	t.Helper()
	m := c.msg(t, imei, protocol.TopicMedia, func(m cloudMsg) bool {
		var r protocol.MediaReady
		return json.Unmarshal(m.Payload, &r) == nil && r.FileID == fileID
	})
	var r protocol.MediaReady
	_ = json.Unmarshal(m.Payload, &r)
	return r
}

func result[T any](t *testing.T, r protocol.Reply) T {
	t.Helper()
	var v T
	if !r.OK {
		t.Fatalf("reply %+v is not ok", r)
	}
	if err := json.Unmarshal(r.Result, &v); err != nil {
		t.Fatalf("reply result %s: %v", r.Result, err)
	}
	return v
}

func TestCommandsMQTT5(t *testing.T) {
	cloud := newFakeCloud(t)
	media := newMediaServer(t)
	imei := mustIMEI(t, 10)
	d := startDevice(t, testOptions(cloud, imei))
	cloud.msg(t, imei, protocol.TopicStatus, nil)
	ctx := context.Background()
	cmd := func(name string, args any) protocol.Reply {
		r, _ := cloud.command(t, imei, true, name, args)
		return r
	}

	t.Run("privacyMode", func(t *testing.T) {
		if got := result[protocol.PrivacyModeArgs](t, cmd(protocol.CmdPrivacyMode, protocol.PrivacyModeArgs{Mode: "on"})); got.Mode != "on" {
			t.Fatalf("result %+v", got)
		}
		if d.PrivacyMode() != "on" || d.cameraRecords(1) {
			t.Fatalf("privacy %q, camera 1 recording %t", d.PrivacyMode(), d.cameraRecords(1))
		}
		result[protocol.PrivacyModeArgs](t, cmd(protocol.CmdPrivacyMode, protocol.PrivacyModeArgs{Mode: "off"}))
		if !d.cameraRecords(1) {
			t.Fatal("recording did not resume")
		}
		if r := cmd(protocol.CmdPrivacyMode, protocol.PrivacyModeArgs{Mode: "maybe"}); r.OK || !strings.Contains(r.Error, "mode") {
			t.Fatalf("bad mode reply %+v", r)
		}
	})

	t.Run("hotspot", func(t *testing.T) {
		got := result[protocol.HotspotState](t, cmd(protocol.CmdHotspot, protocol.HotspotArgs{On: true, Password: "Xy3Xy3Xy3Xy3Xy3Xy3Xy"}))
		if on, pw := d.Hotspot(); !got.On || !on || pw != "Xy3Xy3Xy3Xy3Xy3Xy3Xy" {
			t.Fatalf("hotspot %t %q", on, pw)
		}
		cloud.msg(t, imei, protocol.TopicStatus, func(m cloudMsg) bool {
			var s protocol.Status
			return json.Unmarshal(m.Payload, &s) == nil && s.Hotspot != nil && s.Hotspot.On
		})
	})

	t.Run("clip", func(t *testing.T) {
		at := time.Now().Add(-10 * time.Minute).Unix()
		cr := result[protocol.ClipResult](t, cmd(protocol.CmdClip, protocol.ClipArgs{Time: at, CameraID: 1, MediaType: "snapshot",
			FileID: "clip-1", URL: media.URL + "/clip-1?sig=x", Expires: time.Now().Add(time.Minute).Unix()}))
		if !cr.Available {
			t.Fatal("recorded second reported unavailable")
		}
		up := media.await(t, "/clip-1", 1)
		if up.Method != http.MethodPut || up.ContentType != ContentTypeJPEG {
			t.Fatalf("clip upload %s %s", up.Method, up.ContentType)
		}
		decodeJPEG(t, up.Body, 160, 96)
		if r := mediaReady(t, cloud, imei, "clip-1"); r.CameraID != 1 || r.FileType != "snapshot" {
			t.Fatalf("media ready %+v", r)
		}
		// The card holds the last hour only.
		old := result[protocol.ClipResult](t, cmd(protocol.CmdClip, protocol.ClipArgs{Time: time.Now().Add(-2 * time.Hour).Unix(), MediaType: "video"}))
		if old.Available {
			t.Fatal("a clip from before the recordings is available")
		}
	})

	t.Run("uploadMedia", func(t *testing.T) {
		ev, err := d.Emit(ctx, EventSpec{Type: "deceleration"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Files) != 2 || ev.Files[0].FileType != "video" || len(ev.Samples) != 5 {
			t.Fatalf("event files %+v samples %d", ev.Files, len(ev.Samples))
		}
		f := ev.Files[1]
		r := cmd(protocol.CmdUploadMedia, protocol.UploadArgs{FileID: f.FileID, CameraID: f.CameraID, FileType: "video", URL: media.URL + "/v1"})
		if !r.OK {
			t.Fatalf("upload reply %+v", r)
		}
		up := media.await(t, "/v1", 1)
		if up.Method != http.MethodPut || up.ContentType != ContentTypeMP4 {
			t.Fatalf("video upload %s %s", up.Method, up.ContentType)
		}
		// 10 s at 2 fps, of the snapshot's size.
		info, err := mp4.Probe(up.Body)
		if want := (mp4.Info{Width: 160, Height: 96, Frames: 20, Duration: 10 * time.Second}); err != nil || info != want {
			t.Fatalf("video %+v %v, want %+v", info, err, want)
		}
		if got := mediaReady(t, cloud, imei, f.FileID); got.CameraID != 2 || got.FileType != "video" {
			t.Fatalf("media ready %+v", got)
		}
		for _, bad := range []protocol.UploadArgs{
			{FileID: "no-such-file", FileType: "video", URL: media.URL + "/x"},
			{FileID: f.FileID, FileType: "video"},
			{FileID: f.FileID, FileType: "audio", URL: media.URL + "/x"},
			{FileID: f.FileID, FileType: "video", URL: media.URL + "/x", Expires: time.Now().Add(-time.Minute).Unix()},
		} {
			if r := cmd(protocol.CmdUploadMedia, bad); r.OK || r.Error == "" {
				t.Fatalf("upload %+v answered %+v", bad, r)
			}
		}
	})

	t.Run("liveStream", func(t *testing.T) {
		if r := cmd(protocol.CmdLiveStream, protocol.LiveStreamArgs{CameraID: 2, Start: true, URL: media.URL + "/live"}); !r.OK {
			t.Fatalf("start %+v", r)
		}
		for n := 1; n <= 2; n++ {
			up := media.await(t, "/live", n)
			if up.Method != http.MethodPost || up.ContentType != ContentTypeJPEG {
				t.Fatalf("frame %d: %s %s", n, up.Method, up.ContentType)
			}
			decodeJPEG(t, up.Body, 160, 96)
		}
		if r := cmd(protocol.CmdLiveStream, protocol.LiveStreamArgs{CameraID: 2, Start: false}); !r.OK {
			t.Fatalf("stop %+v", r)
		}
		if len(d.LiveStreams()) != 0 {
			t.Fatalf("still streaming %v", d.LiveStreams())
		}
		// A stream the cloud ended answers 410: the device stops at once,
		// without counting an upload error.
		errorsBefore := d.stats.Snapshot().UploadErrors
		if r := cmd(protocol.CmdLiveStream, protocol.LiveStreamArgs{CameraID: 1, Start: true, URL: media.URL + "/gone-live"}); !r.OK {
			t.Fatalf("start %+v", r)
		}
		media.await(t, "/gone-live", 1)
		waitUntil(t, "the device to stop streaming after 410",
			func() bool { return len(d.LiveStreams()) == 0 })
		if n := media.count("/gone-live"); n != 1 {
			t.Fatalf("%d frames sent after 410, want 1", n)
		}
		if got := d.stats.Snapshot().UploadErrors; got != errorsBefore {
			t.Fatalf("upload errors %d after a 410, want %d", got, errorsBefore)
		}
	})

	t.Run("adasImages", func(t *testing.T) {
		res := result[protocol.AdasImagesResult](t, cmd(protocol.CmdAdasImages, protocol.AdasImagesArgs{CalibrationType: "auto",
			URLs: map[int]string{1: media.URL + "/adas-1", 2: media.URL + "/adas-2"}}))
		if len(res.Files) != 2 || res.Files[0].CameraID != 1 || res.Files[1].CameraID != 2 {
			t.Fatalf("adas files %+v", res.Files)
		}
		decodeJPEG(t, media.await(t, "/adas-1", 1).Body, 160, 96)
		decodeJPEG(t, media.await(t, "/adas-2", 1).Body, 160, 96)
		if r := cmd(protocol.CmdAdasImages, protocol.AdasImagesArgs{CalibrationType: "sideways"}); r.OK {
			t.Fatal("bad calibration type accepted")
		}
		if r := cmd(protocol.CmdAdasDeleteImages, nil); !r.OK {
			t.Fatalf("delete %+v", r)
		}
		if res := result[protocol.AdasImagesResult](t, cmd(protocol.CmdAdasImages, protocol.AdasImagesArgs{CalibrationType: "auto"})); len(res.Files) != 0 {
			t.Fatalf("images left after delete: %+v", res.Files)
		}
	})

	t.Run("formatStorage", func(t *testing.T) {
		before := d.SDCard()
		sd := result[protocol.SDCard](t, cmd(protocol.CmdFormatStorage, nil))
		if sd.UUID == "" || sd.UUID == before.UUID || sd.Manufacturer == "" || d.SDCard().UUID != sd.UUID {
			t.Fatalf("formatted card %+v, before %+v", sd, before)
		}
		cloud.msg(t, imei, protocol.TopicEvent, func(m cloudMsg) bool {
			var ev protocol.Event
			return json.Unmarshal(m.Payload, &ev) == nil && ev.Type == "sdCardFormatted" && ev.SDCard != nil &&
				ev.SDCard.UUID == sd.UUID && ev.SDCard.Manufacturer == sd.Manufacturer
		})
	})

	t.Run("recordingRanges", func(t *testing.T) {
		rr := result[protocol.RecordingRanges](t, cmd(protocol.CmdRecordingRanges, nil))
		if len(rr.Cameras) != 2 || rr.Cameras[0].CameraID != 1 || rr.Cameras[1].CameraID != 2 {
			t.Fatalf("ranges %+v", rr)
		}
		// Formatted just before: one range per camera, starting at the format.
		for _, c := range rr.Cameras {
			if len(c.Ranges) != 1 || time.Now().Unix()-c.Ranges[0][0] > 60 || c.Ranges[0][1] < c.Ranges[0][0] {
				t.Fatalf("camera %d ranges %v", c.CameraID, c.Ranges)
			}
		}
	})

	t.Run("driverCheckout", func(t *testing.T) {
		if _, err := d.CheckIn(ctx, "12345", ""); err != nil {
			t.Fatal(err)
		}
		if r := cmd(protocol.CmdDriverCheckout, nil); !r.OK {
			t.Fatalf("checkout %+v", r)
		}
		cloud.msg(t, imei, protocol.TopicEvent, func(m cloudMsg) bool {
			var ev protocol.Event
			return json.Unmarshal(m.Payload, &ev) == nil && ev.Type == "driverCheckOut"
		})
		if _, in := d.Driver(); in {
			t.Fatal("driver still checked in")
		}
	})

	t.Run("unknown", func(t *testing.T) {
		if r := cmd("selfDestruct", nil); r.OK || !strings.Contains(r.Error, "selfDestruct") {
			t.Fatalf("unknown command answered %+v", r)
		}
	})

	t.Run("reboot", func(t *testing.T) {
		if r := cmd(protocol.CmdReboot, nil); !r.OK {
			t.Fatalf("reboot %+v", r)
		}
		if c := cloud.connect(t, imei, 2); c.Kind != "token" || !c.Accepted {
			t.Fatalf("after reboot %+v", c)
		}
		rr := d.RecordingRanges()
		waitUntil(t, "recording resumes", func() bool { rr = d.RecordingRanges(); return len(rr.Cameras[0].Ranges) == 2 })
	})
}

func TestCommandsMQTT311(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 11)
	o := testOptions(cloud, imei)
	o.MQTTVersion = 4
	d := startDevice(t, o)
	cloud.msg(t, imei, protocol.TopicStatus, nil)

	r, m := cloud.command(t, imei, false, protocol.CmdRecordingRanges, nil)
	if m.Version != 4 {
		t.Fatalf("reply came over protocol %d", m.Version)
	}
	if rr := result[protocol.RecordingRanges](t, r); len(rr.Cameras) != 2 || len(rr.Cameras[0].Ranges) != 1 {
		t.Fatalf("ranges %+v", rr)
	}
	if got := result[protocol.PrivacyModeArgs](t, func() protocol.Reply {
		r, _ := cloud.command(t, imei, false, protocol.CmdPrivacyMode, protocol.PrivacyModeArgs{Mode: "on"})
		return r
	}()); got.Mode != "on" || d.PrivacyMode() != "on" {
		t.Fatalf("privacy %+v", got)
	}
	// Privacy on: nothing is recorded from now on, so a clip of a future second is unavailable.
	r, _ = cloud.command(t, imei, false, protocol.CmdClip, protocol.ClipArgs{Time: time.Now().Add(time.Hour).Unix()})
	if got := result[protocol.ClipResult](t, r); got.Available {
		t.Fatal("clip of an unrecorded time available")
	}
	if r, _ := cloud.command(t, imei, false, protocol.CmdClip, nil); r.OK || !strings.Contains(r.Error, "args") {
		t.Fatalf("clip without args answered %+v", r)
	}
}
