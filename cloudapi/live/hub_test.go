package live

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/live/livetest"
)

// fakeDevice plays the devices of a Hub: a started camera sends frame
// (none when silent) to its stream through the hub, as a device's frames
// reach the node that holds it or any other.
type fakeDevice struct {
	mu      sync.Mutex
	hub     *Hub // where the frames go
	silent  bool
	refuse  error
	started []string
	stopped chan string
	// hold, when set, keeps each Stop from returning until it is closed:
	// a stop still on its way to the device.
	hold chan struct{}
}

func newFakeDevice() *fakeDevice { return &fakeDevice{stopped: make(chan string, 16)} }

func (d *fakeDevice) Start(ctx context.Context, imei string, camera int, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refuse != nil {
		return d.refuse
	}
	d.started = append(d.started, id)
	if !d.silent {
		go d.hub.Frame(context.Background(), id, imei, []byte("frame 1"))
	}
	return nil
}

func (d *fakeDevice) Stop(imei string, camera int) {
	d.stopped <- imei
	if d.hold != nil {
		<-d.hold
	}
}

func (d *fakeDevice) starts() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.started)
}

// waitStop waits for the device to be told to stop.
func (d *fakeDevice) waitStop(t *testing.T) {
	t.Helper()
	select {
	case <-d.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the device was not told to stop")
	}
}

func (d *fakeDevice) noStop(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case imei := <-d.stopped:
		t.Fatalf("device %s told to stop", imei)
	case <-time.After(within):
	}
}

// testConfig has timeouts generous enough for a loaded machine where a
// test waits for something to happen, and short where it waits for
// something to time out.
func testConfig() Config {
	return Config{TTL: time.Hour, ConnectTimeout: 10 * time.Second, IdleTimeout: 500 * time.Millisecond}
}

func newTestHub(cfg Config, relay Relay) (*Hub, *fakeDevice) {
	dev := newFakeDevice()
	h := New(cfg, dev, relay)
	dev.hub = h
	return h, dev
}

// nextFrame waits for a frame of st other than last.
func nextFrame(t *testing.T, st *Stream, last []byte) []byte {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		frame, changed := st.Current()
		if frame != nil && !bytes.Equal(frame, last) {
			return frame
		}
		select {
		case <-changed:
		case <-st.Done():
			t.Fatal("the stream ended")
		case <-deadline:
			t.Fatal("no frame")
		}
	}
}

func TestOpenWatchAndIdle(t *testing.T) {
	t.Parallel()
	h, dev := newTestHub(testConfig(), nil)
	opened, err := h.Open(t.Context(), "imei1", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if running, ready := h.State("imei1", 2); !running || !ready {
		t.Fatalf("state after the first frame: running %v, ready %v", running, ready)
	}
	// A second caller joins the running stream.
	again, err := h.Open(t.Context(), "imei1", 2, 0)
	if err != nil || again.ID != opened.ID || len(dev.started) != 1 {
		t.Fatalf("second open: %+v %v, %d starts", again, err, len(dev.started))
	}
	st, leave, err := h.Watch(t.Context(), opened.ID, "imei1")
	if err != nil {
		t.Fatal(err)
	}
	if !h.Receives(opened.ID, "imei1") || h.Receives(opened.ID, "imei2") {
		t.Fatal("Receives does not follow the stream's device")
	}
	if err := h.Frame(t.Context(), opened.ID, "imei1", []byte("frame 2")); err != nil {
		t.Fatal(err)
	}
	if f := nextFrame(t, st, []byte("frame 1")); string(f) != "frame 2" {
		t.Fatalf("frame %q", f)
	}
	// Watched, the stream outlives the idle timeout; unwatched, it stops.
	dev.noStop(t, 2*h.cfg.IdleTimeout)
	leave()
	dev.waitStop(t)
	if running, _ := h.State("imei1", 2); running {
		t.Fatal("the stream still runs")
	}
	if h.Receives(opened.ID, "imei1") || !errors.Is(h.Frame(t.Context(), opened.ID, "imei1", []byte("late")), ErrEnded) {
		t.Fatal("a frame of the stopped stream is taken")
	}
	if _, _, err := h.Watch(t.Context(), opened.ID, "imei1"); !errors.Is(err, ErrEnded) {
		t.Fatalf("watching the stopped stream: %v", err)
	}
}

// TestNewStreamStartsAfterTheOldStop: a camera's stream asked for while
// the stop of its last one is still on its way to the device starts once
// that stop is sent: a stop that reached the device after the new start
// would end the new stream.
func TestNewStreamStartsAfterTheOldStop(t *testing.T) {
	t.Parallel()
	h, dev := newTestHub(testConfig(), nil)
	dev.hold = make(chan struct{})
	if _, err := h.Open(t.Context(), "imei1", 1, 0); err != nil {
		t.Fatal(err)
	}
	dev.waitStop(t) // nobody watched it; its stop is held on the way
	opened := make(chan error, 1)
	go func() {
		_, err := h.Open(t.Context(), "imei1", 1, 0)
		opened <- err
	}()
	select {
	case err := <-opened:
		t.Fatalf("a new stream opened (%v) while the old one's stop was on its way; %d starts", err, dev.starts())
	case <-time.After(2 * h.cfg.IdleTimeout):
	}
	if n := dev.starts(); n != 1 {
		t.Fatalf("%d starts while the old stream's stop was on its way, want 1", n)
	}
	close(dev.hold)
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	if n := dev.starts(); n != 2 {
		t.Fatalf("%d starts, want 2", n)
	}
}

// TestStreamLifetime: a stream lasts the ttl Open gives it, even watched;
// a caller who joins it gets its expiry, not a new one.
func TestStreamLifetime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cfg := testConfig()
	cfg.Now = func() time.Time { return now }
	h, dev := newTestHub(cfg, nil)
	const ttl = 300 * time.Millisecond
	opened, err := h.Open(t.Context(), "imei1", 1, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if !opened.Expires.Equal(now.Add(ttl)) {
		t.Fatalf("expires %s, want %s", opened.Expires, now.Add(ttl))
	}
	if again, err := h.Open(t.Context(), "imei1", 1, time.Hour); err != nil || !again.Expires.Equal(opened.Expires) {
		t.Fatalf("joined: %+v %v", again, err)
	}
	_, leave, err := h.Watch(t.Context(), opened.ID, "imei1")
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	dev.waitStop(t)
	if running, _ := h.State("imei1", 1); running {
		t.Fatal("the stream runs past its lifetime")
	}
	// Without a ttl of its own, a stream lasts the configured TTL.
	if opened, err := h.Open(t.Context(), "imei2", 1, 0); err != nil || !opened.Expires.Equal(now.Add(cfg.TTL)) {
		t.Fatalf("default lifetime: %+v %v", opened, err)
	}
}

func TestOpenRefusals(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.ConnectTimeout = 100 * time.Millisecond
	h, dev := newTestHub(cfg, nil)
	// The device refuses: Open says why, and nothing runs.
	dev.refuse = errors.New("no camera 2")
	if _, err := h.Open(t.Context(), "imei1", 2, 0); err != dev.refuse {
		t.Fatalf("refused start: %v", err)
	}
	if running, _ := h.State("imei1", 2); running {
		t.Fatal("a refused stream runs")
	}
	// The device sends nothing: ErrNoFrame, and it is told to stop.
	dev.refuse, dev.silent = nil, true
	if _, err := h.Open(t.Context(), "imei1", 2, 0); !errors.Is(err, ErrNoFrame) {
		t.Fatalf("silent device: %v", err)
	}
	dev.waitStop(t)
	// A device removed from its organization streams to nobody.
	h, _ = newTestHub(testConfig(), nil)
	opened, err := h.Open(t.Context(), "imei1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.EndDevice("imei1")
	if _, _, err := h.Watch(t.Context(), opened.ID, "imei1"); !errors.Is(err, ErrEnded) {
		t.Fatalf("watching a removed device's stream: %v", err)
	}
}

// TestRemoteViewersAndFrames: a stream opened on its home node takes
// frames that reach another node and feeds a viewer there; that viewer
// counts for the idle timeout until it leaves, and its response ends when
// the home ends the stream.
func TestRemoteViewersAndFrames(t *testing.T) {
	t.Parallel()
	relay := livetest.NewRelay(ErrNobody)
	home, dev := newTestHub(testConfig(), relay)
	other, _ := newTestHub(testConfig(), relay)
	dev.hub = other // the device's frames reach the other node
	opened, err := home.Open(t.Context(), "imei1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !other.Receives(opened.ID, "imei1") {
		t.Fatal("the other node refuses a frame of a stream it may not hold")
	}
	if err := other.Frame(t.Context(), opened.ID, "imei2", []byte("x")); !errors.Is(err, ErrEnded) {
		t.Fatalf("a frame of another device: %v", err)
	}
	mirror, leave, err := other.Watch(t.Context(), opened.ID, "imei1")
	if err != nil {
		t.Fatal(err)
	}
	if f := nextFrame(t, mirror, nil); string(f) != "frame 1" {
		t.Fatalf("the viewer's first frame: %q", f)
	}
	if err := other.Frame(t.Context(), opened.ID, "imei1", []byte("frame 2")); err != nil {
		t.Fatal(err)
	}
	if f := nextFrame(t, mirror, []byte("frame 1")); string(f) != "frame 2" {
		t.Fatalf("the viewer's second frame: %q", f)
	}
	dev.noStop(t, 2*home.cfg.IdleTimeout)
	leave()
	dev.waitStop(t)
	if err := other.Frame(t.Context(), opened.ID, "imei1", []byte("late")); !errors.Is(err, ErrEnded) {
		t.Fatalf("a frame after the end: %v", err)
	}
	if _, _, err := other.Watch(t.Context(), opened.ID, "imei1"); !errors.Is(err, ErrEnded) {
		t.Fatalf("watching after the end: %v", err)
	}
	// A stream that ends at its home ends its viewers elsewhere.
	opened, err = home.Open(t.Context(), "imei1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	mirror, leave, err = other.Watch(t.Context(), opened.ID, "imei1")
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	home.EndDevice("imei1")
	select {
	case <-mirror.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the mirror outlived its stream")
	}
}
