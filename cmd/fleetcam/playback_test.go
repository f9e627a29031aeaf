//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/devicesim"
)

// chromiumPackage is the Debian package the playback test needs (make
// test-deps-chromium installs it).
const chromiumPackage = "chromium"

// playbackPage plays the video at the src query parameter and POSTs what
// the <video> element reports to /result: its error, or its size and
// duration once a frame is decoded and a seek into the middle (a range
// request) has landed.
const playbackPage = `<!doctype html>
<html><body>
<video id="v" muted preload="auto"></video>
<script>
const v = document.getElementById("v");
let sent = false;
function report(stage) {
  if (sent) return;
  sent = true;
  fetch("/result", {method: "POST", body: JSON.stringify({stage: stage, error: v.error ? v.error.code + " " + v.error.message : "",
    readyState: v.readyState, duration: v.duration, width: v.videoWidth, height: v.videoHeight, time: v.currentTime})});
}
v.addEventListener("error", () => report("error"));
v.addEventListener("loadeddata", () => { v.currentTime = v.duration / 2; });
v.addEventListener("seeked", () => report("seeked"));
v.src = new URLSearchParams(location.search).get("src");
</script>
</body></html>`

// playback is what the page reports.
type playback struct {
	Stage, Error   string
	ReadyState     int
	Duration, Time float64
	Width, Height  int
}

// TestEventVideoPlaysInChromium plays an event video a simulated dashcam
// uploaded, through its event-file-link, in headless Chromium's <video>.
func TestEventVideoPlaysInChromium(t *testing.T) {
	t.Parallel()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("headless Chromium is needed to check playback: install the Debian package %s (make test-deps-chromium): %v", chromiumPackage, err)
	}
	e := startEnv(t, withDevice("35693810000500", "Truck 5"))
	dev := e.connect(nil)
	e.waitOnline()
	ev, err := dev.Emit(context.Background(), devicesim.EventSpec{Type: "deceleration"})
	if err != nil || len(ev.Files) == 0 {
		t.Fatalf("event %+v: %v", ev, err)
	}
	f := ev.Files[0]
	link := fileLink(t, e.c, e.tok, e.imei, f.FileID, "video", f.CameraID)

	results := make(chan playback, 1)
	var requested atomic.Bool // whether Chromium has asked for the page
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/result" {
			var p playback
			body, _ := io.ReadAll(r.Body)
			if err := json.Unmarshal(body, &p); err != nil {
				p.Error = "bad report " + string(body)
			}
			select {
			case results <- p:
			default:
			}
			return
		}
		requested.Store(true)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, playbackPage)
	}))
	defer page.Close()

	// A browser that dies while starting up, before it has asked for the
	// page, has not seen the video: that start is tried once more. Once the
	// page is requested, whatever the browser does counts.
	pageURL := page.URL + "/?src=" + url.QueryEscape(link)
	got, err := playIn(chromium, pageURL, t.TempDir(), results)
	if err != nil && !requested.Load() {
		t.Logf("chromium failed before it asked for the page; starting it again: %v", err)
		got, err = playIn(chromium, pageURL, t.TempDir(), results)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got.Stage != "seeked" || got.Error != "" || got.ReadyState < 2 || got.Duration < 9 || got.Width != 320 || got.Height != 180 ||
		got.Time < 4 {
		t.Fatalf("chromium did not play the video: %+v", got)
	}
}

// playIn opens pageURL in a new headless Chromium, with its profile and its
// temporary files in dir, and returns what the page reports. Chromium runs
// with as few processes as it can (no zygote, the GPU thread in the browser
// process, no extensions), and its whole process group is killed when it
// returns.
func playIn(chromium, pageURL, dir string, results <-chan playback) (playback, error) {
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return playback{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--no-zygote", "--disable-gpu", "--in-process-gpu",
		"--disable-dev-shm-usage", "--disable-extensions", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--mute-audio",
		"--autoplay-policy=no-user-gesture-required", "--user-data-dir="+filepath.Join(dir, "profile"), pageURL)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // its helper processes too
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		return playback{}, fmt.Errorf("start chromium: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { cancel(); <-exited }()

	select {
	case got := <-results:
		return got, nil
	case err := <-exited:
		exited <- err
		return playback{}, fmt.Errorf("chromium exited before the page reported (%v): %s", err, tail(stderr.String(), 2000))
	case <-time.After(patience):
		return playback{}, fmt.Errorf("the page reported nothing within %v: %s", patience, tail(stderr.String(), 2000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
