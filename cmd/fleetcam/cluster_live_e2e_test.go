package main

import (
	"bufio"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/devicesim"
)

// roundRobin is an HTTP load balancer in front of the nodes: each request
// goes to the next node, as behind a production balancer any node gets
// any request. It counts the live frames each node received.
type roundRobin struct {
	srv    *httptest.Server
	mu     sync.Mutex
	nodes  []*url.URL
	next   int
	frames map[string]int // by node address
}

func newRoundRobin(t *testing.T) *roundRobin {
	lb := &roundRobin{frames: map[string]int{}}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		lb.mu.Lock()
		target := lb.nodes[lb.next%len(lb.nodes)]
		lb.next++
		if strings.HasSuffix(r.In.URL.Path, "/frames") {
			lb.frames[target.Host]++
		}
		lb.mu.Unlock()
		r.SetURL(target)
	}, FlushInterval: -1}
	lb.srv = httptest.NewServer(proxy)
	t.Cleanup(lb.srv.Close)
	return lb
}

func (lb *roundRobin) framesAt(host string) int {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.frames[host]
}

// TestClusterLiveStream: a live stream of a device on node A, asked for
// through node B, is one stream of the cluster (node C's connect-media
// joins it); the device's frames reach it through whichever node the load
// balancer picks, and a viewer on node C watches it. When the viewer
// leaves, the device is told to stop.
func TestClusterLiveStream(t *testing.T) {
	t.Parallel()
	lb := newRoundRobin(t)
	e := startCluster(t, 3, func(c *configs.Config) {
		c.PublicURL = lb.srv.URL
		c.Media.LiveStreamIdleTimeout = time.Second
	})
	for _, m := range e.nodes {
		u, _ := url.Parse(m.c.base)
		lb.nodes = append(lb.nodes, u)
	}
	imei := e.addDevice("35693810002200", "Truck 22")
	stats := devicesim.NewStats()
	dev, _ := e.simulateWith(0, imei, stateDir(t), func(o *devicesim.Options) {
		o.LiveFPS, o.FrameWidth, o.FrameHeight, o.Stats = 10, 160, 96, stats
	})
	eventually(t, "the device connected to node-a", func() bool { return dev.Connected() && e.holder(imei) == "node-a" })

	status, out := e.nodes[1].c.call("POST", "/v2/devices/"+imei+"/connect-media", e.tok, nil)
	watch, _ := dig(out, "data", "url").(string)
	if status != http.StatusOK || !strings.HasPrefix(watch, lb.srv.URL) {
		t.Fatalf("connect-media through node-b: %d %v", status, out)
	}
	status, out = e.nodes[2].c.call("POST", "/v2/devices/"+imei+"/connect-media", e.tok, nil)
	if status != http.StatusOK || dig(out, "data", "address") != strings.Split(watch, "?")[0] {
		t.Fatalf("connect-media through node-c: %d %v; want the stream node-b started, %s", status, out, watch)
	}

	// The viewer watches through node-c, which holds neither the device
	// nor the stream.
	res, err := http.Get(strings.Replace(watch, lb.srv.URL, e.nodes[2].c.base, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("watch through node-c: %d %s", res.StatusCode, body)
	}
	_, params, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	parts := multipart.NewReader(bufio.NewReader(res.Body), params["boundary"])
	start := time.Now()
	for n := 0; n < 12 || time.Since(start) < 3*time.Second; n++ {
		part, err := parts.NextPart()
		if err != nil {
			t.Fatalf("frame %d through node-c (%s): %v", n, time.Since(start), err)
		}
		if frame, _ := io.ReadAll(part); len(frame) < 4 || frame[0] != 0xff || frame[1] != 0xd8 {
			t.Fatalf("frame %d through node-c is not a JPEG image", n)
		}
	}
	for _, m := range e.nodes {
		if host := strings.TrimPrefix(m.c.base, "http://"); lb.framesAt(host) == 0 {
			t.Fatalf("%s received none of the device's frames; the balancer spread them %v", m.id, lb.frames)
		}
	}
	if len(dev.LiveStreams()) != 1 {
		t.Fatalf("the device streams cameras %v while watched, want one", dev.LiveStreams())
	}

	res.Body.Close()
	eventually(t, "the device to stop streaming after the viewer on node-c left", func() bool { return len(dev.LiveStreams()) == 0 })
	status, out = e.nodes[2].c.call("POST", "/v2/devices/"+imei+"/connect-media", e.tok, nil)
	if again, _ := dig(out, "data", "url").(string); status != http.StatusOK || again == watch {
		t.Fatalf("connect-media after the stop: %d %v, want a new stream", status, out)
	}
	if stats.Snapshot().Uploads == 0 {
		t.Fatal("the device counted no frame uploads")
	}
}
