package main

import (
	"bufio"
	"mime"
	"mime/multipart"
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/devicesim"
)

// TestLiveStreamStopsWhenTheViewerLeaves runs a simulated dashcam on the
// real broker: connect-media starts its live stream, a viewer watches it
// past the idle timeout, and within seconds of the viewer leaving the
// device stops uploading frames.
func TestLiveStreamStopsWhenTheViewerLeaves(t *testing.T) {
	t.Parallel()
	const idle = time.Second // ample for the viewer to connect on a loaded machine
	e := startEnv(t, withDevice("35693810000400", "Truck 4"),
		withConfig(func(c *configs.Config) { c.Media.LiveStreamIdleTimeout = idle }))
	stats := devicesim.NewStats()
	dev := e.connect(func(o *devicesim.Options) {
		o.LiveFPS, o.FrameWidth, o.FrameHeight, o.Stats = 10, 160, 96, stats
	})
	e.waitOnline()

	status, out := e.c.call("POST", "/v2/devices/"+e.imei+"/connect-media", e.tok, nil)
	watch, _ := dig(out, "data", "url").(string)
	if status != http.StatusOK || watch == "" {
		t.Fatalf("connect-media: %d %v", status, out)
	}
	res, err := http.Get(watch)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("watch: status %d", res.StatusCode)
	}
	_, params, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	parts := multipart.NewReader(bufio.NewReader(res.Body), params["boundary"])
	start := time.Now()
	for n := 0; n < 5 || time.Since(start) < 2*idle; n++ {
		if _, err := parts.NextPart(); err != nil {
			t.Fatalf("frame %d while watching (%s): %v", n, time.Since(start), err)
		}
	}
	if len(dev.LiveStreams()) != 1 {
		t.Fatalf("the device streams cameras %v while watched, want [1]", dev.LiveStreams())
	}
	uploads := stats.Snapshot().Uploads
	res.Body.Close()
	left := time.Now()

	// The device stops once the stream has been idle for its timeout; how
	// soon depends on how busy the machine is, so it is logged.
	eventually(t, "the device to stop streaming after the viewer left", func() bool { return len(dev.LiveStreams()) == 0 })
	t.Logf("the device stopped %s after the viewer left (idle timeout %s), having uploaded %d more frames",
		time.Since(left).Round(time.Millisecond), idle, stats.Snapshot().Uploads-uploads)
	status, out = e.c.call("POST", "/v2/devices/"+e.imei+"/connect-media", e.tok, nil)
	if again, _ := dig(out, "data", "url").(string); status != http.StatusOK || again == watch {
		t.Fatalf("connect-media after the stop: %d %v, want a new stream", status, out)
	}
}
