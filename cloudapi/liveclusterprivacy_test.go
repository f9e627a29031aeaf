package cloudapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/live/livetest"
	"github.com/fleetcam/fleetcam/configs"
)

// loopRelay is the Relay of API nodes in one process (livetest.Relay),
// where the first node that handles a verb holds every device.
type loopRelay struct {
	*livetest.Relay
	mu   sync.Mutex
	held map[string]func(ctx context.Context, imei string, data []byte) ([]byte, error)
}

func newLoopRelay() *loopRelay {
	return &loopRelay{Relay: livetest.NewRelay(ErrNobody), held: map[string]func(context.Context, string, []byte) ([]byte, error){}}
}

func (r *loopRelay) HandleHeld(verb string, fn func(ctx context.Context, imei string, data []byte) ([]byte, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[verb] == nil {
		r.held[verb] = fn
	}
}

func (r *loopRelay) AskHolder(ctx context.Context, imei, verb string, data []byte) ([]byte, error) {
	r.mu.Lock()
	fn := r.held[verb]
	r.mu.Unlock()
	if fn == nil {
		return nil, ErrNobody
	}
	return fn(ctx, imei, data)
}

// TestSettingsWriteOnAnotherNodeEndsTheStream: in a cluster, a settings
// write through a node that does not hold the stream ends it on its home:
// the viewer's response ends, the device is told to stop and its next
// frame is answered 410.
func TestSettingsWriteOnAnotherNodeEndsTheStream(t *testing.T) {
	t.Parallel()
	body, _ := json.Marshal(map[string]any{"privacy": map[string]any{"liveStreamEnabled": false}})
	writeOnAnotherNode(t, func(home *mediaEnv) *http.Request {
		req, _ := http.NewRequest("PUT", devPath(home.dev.IMEI, "/device-config"), bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		return req
	})
}

// TestRemovalOnAnotherNodeEndsTheStream: a device removed from the
// inventory through another node than its stream's streams no more.
func TestRemovalOnAnotherNodeEndsTheStream(t *testing.T) {
	t.Parallel()
	writeOnAnotherNode(t, func(home *mediaEnv) *http.Request {
		req, _ := http.NewRequest("DELETE", orgPath(home.org.ID, "/devices/"+home.dev.IMEI), nil)
		return req
	})
}

// writeOnAnotherNode starts a live stream on one node (home) and sends the
// request write makes (its path only) through another node sharing the
// store and the relay: the stream ends, its viewer's answer with it, the
// device is told to stop and its next frame is refused.
func writeOnAnotherNode(t *testing.T, write func(home *mediaEnv) *http.Request) {
	relay := newLoopRelay()
	home := newMediaEnv(t, func(_ *configs.Config, d *Deps) { d.Relay = relay })
	other, err := New(Deps{Config: home.cfg, Store: home.db, Key: home.key, Now: home.clock.Now, Commander: home.cmd,
		Relay: relay, Logger: home.api.log})
	if err != nil {
		t.Fatal(err)
	}
	otherSrv := httptest.NewServer(other.Handler())
	t.Cleanup(otherSrv.Close)

	watch := home.do("POST", devPath(home.dev.IMEI, "/connect-media"), home.partnerToken, nil).want(http.StatusOK).str("data.url")
	res, err := home.srv.Client().Get(watch)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		buf := make([]byte, 4096)
		for {
			if _, err := res.Body.Read(buf); err != nil {
				return
			}
		}
	}()
	defer res.Body.Close()

	req := write(home)
	req.URL, err = req.URL.Parse(otherSrv.URL + req.URL.Path)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+home.partnerToken)
	answer, err := otherSrv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer.Body.Close()
	if answer.StatusCode != http.StatusOK {
		t.Fatalf("%s %s through the other node: %d", req.Method, req.URL.Path, answer.StatusCode)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the viewer still watches after a write through the other node")
	}
	wantStreamStopped(t, home)
}
