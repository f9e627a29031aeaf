package cloudapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

func TestLiveStreamMJPEG(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	r := e.do("POST", devPath(e.dev.IMEI, "/connect-media?cameraId=2"), e.partnerToken, nil).want(200)
	addr, tok, watch := r.str("data.address"), r.str("data.mediaToken"), r.str("data.url")
	if !strings.HasPrefix(addr, e.srv.URL+"/v2/media/live/"+e.dev.IMEI+"/") || tok == "" || watch != addr+"?mediaToken="+tok {
		t.Fatalf("connect-media %s", r.raw)
	}
	var args protocol.LiveStreamArgs
	json.Unmarshal(e.cmd.commands(protocol.CmdLiveStream)[0].args, &args)
	if args.CameraID != 2 || !args.Start {
		t.Fatalf("liveStream args %+v", args)
	}
	// Two viewers watch at once; each gets a stream of JPEG frames.
	errs := make(chan error, 2)
	for v := 0; v < 2; v++ {
		go func() { errs <- watchFrames(e.srv.Client(), watch, 3) }()
	}
	for v := 0; v < 2; v++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A second caller joins the running stream instead of starting another.
	again := e.do("POST", devPath(e.dev.IMEI, "/connect-media?cameraId=2"), e.partnerToken, nil).want(200)
	if again.str("data.address") != addr || len(e.cmd.commands(protocol.CmdLiveStream)) != 1 {
		t.Fatalf("second connect %s", again.raw)
	}
	// The token is needed and bound to the stream.
	if status, _, _ := e.fetch(addr); status != 403 {
		t.Fatalf("without token: %d", status)
	}
	if status, _, _ := e.fetch(addr + "x?mediaToken=" + url.QueryEscape(tok)); status != 403 {
		t.Fatalf("token of another stream: %d", status)
	}
	// Past its lifetime the token no longer opens the stream.
	e.clock.Advance(liveStreamTTL + time.Second)
	if status, _, _ := e.fetch(watch); status != 403 {
		t.Fatalf("expired token: %d", status)
	}
}

// TestLiveStreamLastsTheOrganizationsTimeout: a stream lasts the
// organization's liveVideoTimeoutSeconds, which the device's answer shows.
func TestLiveStreamLastsTheOrganizationsTimeout(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	r := e.do("GET", "/v2/devices/"+e.dev.IMEI, e.partnerToken, nil).want(http.StatusOK)
	if r.num("data.liveVideoTimeoutSeconds") != liveStreamTTL.Seconds() {
		t.Fatalf("default live video timeout: %s", r.raw)
	}
	if r.get("data.lat") != nil || r.get("data.positionTime") != nil {
		t.Fatalf("a position before the first GPS sample: %s", r.raw)
	}
	// The last GPS sample is the device's position, speed in meters per second.
	at := e.clock.Now().Add(-time.Minute).Truncate(time.Second)
	e.recordGPS(e.dev.IMEI, at, 3)
	r = e.do("GET", "/v2/devices/"+e.dev.IMEI, e.partnerToken, nil).want(http.StatusOK)
	if r.num("data.lat") != 52.002 || r.num("data.lon") != 4 || math.Abs(r.num("data.speed")-40/3.6) > 1e-9 ||
		r.str("data.positionTime") != isoTime(at.Add(20*time.Second)) {
		t.Fatalf("last position: %s", r.raw)
	}
	e.do("PATCH", orgPath(e.org.ID, ""), e.partnerToken, map[string]any{"liveVideoTimeoutSeconds": 60}).want(http.StatusOK)
	if r := e.do("GET", "/v2/devices/"+e.dev.IMEI, e.partnerToken, nil).want(http.StatusOK); r.num("data.liveVideoTimeoutSeconds") != 60 {
		t.Fatalf("live video timeout: %s", r.raw)
	}
	r = e.do("POST", devPath(e.dev.IMEI, "/connect-media"), e.partnerToken, nil).want(http.StatusOK)
	if want := isoTime(e.clock.Now().Add(time.Minute)); r.str("data.expiresAt") != want {
		t.Fatalf("expiresAt %s, want %s", r.str("data.expiresAt"), want)
	}
	// Past it, the media token no longer opens the stream.
	e.clock.Advance(time.Minute + time.Second)
	if status, _, _ := e.fetch(r.str("data.url")); status != http.StatusForbidden {
		t.Fatalf("after the timeout: %d", status)
	}
}

func TestLiveStreamFirstConnectionTimeout(t *testing.T) {
	e := newMediaEnv(t)
	e.cmd.set(e.dev.IMEI, func(d *fakeDevice) { d.silentStream = true })
	start := time.Now()
	e.do("POST", devPath(e.dev.IMEI, "/connect-media"), e.partnerToken, nil).wantError(404, nameNotFound, "did not start streaming", "try again")
	if waited := time.Since(start); waited < e.cfg.Media.LiveStreamConnectTimeout {
		t.Fatalf("answered after %s, before the connect timeout", waited)
	}
	// The device was told to stop, and a retry starts a new stream.
	cmds := e.cmd.waitCommands(protocol.CmdLiveStream, 2)
	var stop protocol.LiveStreamArgs
	if len(cmds) < 2 || json.Unmarshal(cmds[1].args, &stop) != nil || stop.Start {
		t.Fatalf("no stop command: %v", cmds)
	}
	e.cmd.set(e.dev.IMEI, func(d *fakeDevice) { d.silentStream = false })
	e.do("POST", devPath(e.dev.IMEI, "/connect-media"), e.partnerToken, nil).want(200)
}

func TestLiveStreamRefusals(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	e.cmd.set(e.dev2.IMEI, func(d *fakeDevice) { d.online = false })
	e.do("POST", devPath(e.dev2.IMEI, "/connect-media"), e.partnerToken, nil).wantError(417, nameExpectationFailed)
	e.do("POST", devPath(e.dev.IMEI, "/connect-media?cameraId=9"), e.partnerToken, nil).wantError(400, nameBadRequest, "cameraId")
	err := e.db.Update(t.Context(), store.Actor{}, func(tx *store.Tx) error {
		ds, _ := tx.DeviceSettings(e.dev.IMEI)
		p := store.DefaultPrivacyConfig()
		p.LiveStreamEnabled = false
		ds.Privacy = &p
		return tx.PutDeviceSettings(ds, "test.privacy")
	})
	if err != nil {
		t.Fatal(err)
	}
	e.do("POST", devPath(e.dev.IMEI, "/connect-media"), e.partnerToken, nil).wantError(423, nameLocked, "liveStreamEnabled")
	// Scoped tokens need the live streaming feature.
	events := e.scopedToken(Scope{IMEI: e.dev2.IMEI, Features: []string{FeatureDeviceEvent}})
	e.do("POST", devPath(e.dev2.IMEI, "/connect-media"), events, nil).wantError(403, nameForbidden, FeatureDeviceLiveStreaming)
	live := e.scopedToken(Scope{IMEI: e.dev2.IMEI, Features: []string{FeatureDeviceLiveStreaming}})
	e.do("POST", devPath(e.dev2.IMEI, "/connect-media"), live, nil).wantError(417, nameExpectationFailed)
}

func TestRecordingRanges(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	base := evT0.Unix()
	e.cmd.set(e.dev.IMEI, func(d *fakeDevice) {
		d.recordings[1] = [][2]int64{{base, base + 600}, {base + 3600, base + 4200}}
		d.recordings[2] = [][2]int64{{base + 100, base + 200}}
	})
	r := e.do("GET", devPath(e.dev.IMEI, "/recording-ranges"), e.partnerToken, nil).want(200)
	if len(r.list("data")) != 2 || len(r.list("data.0.intervals")) != 2 || r.str("data.0.intervals.1.start") != isoTime(evT0.Add(time.Hour)) {
		t.Fatalf("ranges %s", r.raw)
	}
	q := window(evT0.Add(5*time.Minute), evT0.Add(65*time.Minute))
	r = e.do("GET", devPath(e.dev.IMEI, "/recording-ranges")+q, e.partnerToken, nil).want(200)
	if r.str("data.0.intervals.0.start") != isoTime(evT0.Add(5*time.Minute)) || r.str("data.0.intervals.1.end") != isoTime(evT0.Add(65*time.Minute)) ||
		len(r.list("data.1.intervals")) != 0 {
		t.Fatalf("clipped ranges %s", r.raw)
	}
	timeline := e.scopedToken(Scope{IMEI: e.dev.IMEI, Features: []string{FeatureDeviceRecordingTimeline}})
	e.do("GET", devPath(e.dev.IMEI, "/recording-ranges"), timeline, nil).want(200)
	e.cmd.set(e.dev.IMEI, func(d *fakeDevice) { d.online = false })
	e.do("GET", devPath(e.dev.IMEI, "/recording-ranges"), e.partnerToken, nil).wantError(417, nameExpectationFailed)
}

func TestADASCalibrationImages(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	path := devPath(e.dev.IMEI, "/adas-calibration-images")
	r := e.do("GET", path+"?max=3", e.partnerToken, nil).want(200)
	if r.str("data.state") != "requested" || len(r.list("data.images")) != 0 {
		t.Fatalf("max %s", r.raw)
	}
	asked := e.cmd.commands(protocol.CmdAdasImages)
	var args protocol.AdasImagesArgs
	json.Unmarshal(asked[0].args, &args)
	if len(asked) != 3 || len(args.URLs) != 1 || args.URLs[1] == "" || args.CalibrationType != "manual" {
		t.Fatalf("%d adasImages commands, args %+v", len(asked), args)
	}
	r = e.do("GET", path, e.partnerToken, nil).want(200)
	if r.str("data.state") != "available" || len(r.list("data.images")) != 3 {
		t.Fatalf("list %s", r.raw)
	}
	status, body, _ := e.fetch(r.str("data.images.0"))
	if _, err := jpeg.Decode(bytes.NewReader(body)); status != 200 || err != nil {
		t.Fatalf("image: %d %v", status, err)
	}
	auto := e.do("GET", path+"?calibrationType=auto", e.partnerToken, nil).want(200)
	if auto.str("data.state") != "available" || len(auto.list("data.images")) != 1 || !strings.Contains(auto.str("data.images.0"), "/auto-") {
		t.Fatalf("auto %s", auto.raw)
	}
	e.do("GET", path+"?max=3&calibrationType=auto", e.partnerToken, nil).wantError(400, nameBadRequest, "max and calibrationType")
	e.do("GET", path+"?max=10", e.partnerToken, nil).wantError(400, nameBadRequest, "max")
	e.do("GET", path+"?calibrationType=manual", e.partnerToken, nil).wantError(400, nameBadRequest, "calibrationType")
	del := e.do("DELETE", devPath(e.dev.IMEI, "/adas-delete-calibration-images"), e.partnerToken, nil).want(200)
	if del.num("data.deleted") != 4 || len(e.cmd.commands(protocol.CmdAdasDeleteImages)) != 1 {
		t.Fatalf("delete %s", del.raw)
	}
	e.sweep()
	if n := len(blobFiles(t, e.cfg.DataDir)); n != 0 {
		t.Fatalf("%d blobs after deleting the images", n)
	}
	e.do("GET", devPath(e.dev.IMEI, "/adas-delete-calibration-images"), e.partnerToken, nil).want(200)
	e.cmd.set(e.dev.IMEI, func(d *fakeDevice) { d.online = false })
	e.do("GET", path+"?max", e.partnerToken, nil).wantError(417, nameExpectationFailed)
	e.do("DELETE", devPath(e.dev.IMEI, "/adas-delete-calibration-images"), e.partnerToken, nil).wantError(417, nameExpectationFailed)
}

// watchFrames reads n frames of an MJPEG stream and checks each is a JPEG.
func watchFrames(client *http.Client, url string, n int) error {
	res, err := client.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	mt, params, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if res.StatusCode != 200 || mt != "multipart/x-mixed-replace" {
		return fmt.Errorf("watch: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	parts := multipart.NewReader(bufio.NewReader(res.Body), params["boundary"])
	for i := 0; i < n; i++ {
		p, err := parts.NextPart()
		if err != nil {
			return fmt.Errorf("part %d: %w", i, err)
		}
		frame, _ := io.ReadAll(p)
		if _, err := jpeg.Decode(bytes.NewReader(frame)); err != nil || p.Header.Get("Content-Type") != "image/jpeg" {
			return fmt.Errorf("part %d is not a JPEG: %v", i, err)
		}
	}
	return nil
}

func TestLiveStreamStopsWhenNobodyWatches(t *testing.T) {
	t.Parallel()
	const idle = 300 * time.Millisecond // ample for the viewer to connect on a loaded machine
	e := newMediaEnv(t, func(c *configs.Config, _ *Deps) { c.Media.LiveStreamIdleTimeout = idle })
	liveCommands := func(want int) []protocol.LiveStreamArgs {
		t.Helper()
		cmds := e.cmd.waitCommands(protocol.CmdLiveStream, want)
		out := make([]protocol.LiveStreamArgs, len(cmds))
		for i, c := range cmds {
			json.Unmarshal(c.args, &out[i])
		}
		if len(out) != want {
			t.Fatalf("%d liveStream commands, want %d: %+v", len(out), want, out)
		}
		return out
	}
	// Nobody opens the stream connect-media started: it stops, and the
	// device's next frame is answered 410.
	e.do("POST", devPath(e.dev.IMEI, "/connect-media"), e.partnerToken, nil).want(200)
	args := liveCommands(2)
	if !args[0].Start || args[1].Start {
		t.Fatalf("want start then stop: %+v", args)
	}
	res, err := e.srv.Client().Post(args[0].URL, "image/jpeg", bytes.NewReader(testJPEG("late frame")))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusGone {
		t.Fatalf("frame of the stopped stream: %d, want 410", res.StatusCode)
	}
	// A watched stream goes on well past the idle timeout; it stops once
	// its viewer leaves.
	watch := e.do("POST", devPath(e.dev.IMEI, "/connect-media"), e.partnerToken, nil).want(200).str("data.url")
	res, err = e.srv.Client().Get(watch)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("watch: status %d", res.StatusCode)
	}
	_, params, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	parts := multipart.NewReader(bufio.NewReader(res.Body), params["boundary"])
	start := time.Now()
	for n := 0; n < 10 || time.Since(start) < 3*idle; n++ {
		if _, err := parts.NextPart(); err != nil {
			t.Fatalf("frame %d while watching (%s): %v", n, time.Since(start), err)
		}
	}
	if args := liveCommands(3); !args[2].Start {
		t.Fatalf("the watched stream was stopped: %+v", args)
	}
	res.Body.Close()
	if args := liveCommands(4); args[3].Start || args[3].CameraID != 1 {
		t.Fatalf("no stop command after the viewer left: %+v", args)
	}
}
