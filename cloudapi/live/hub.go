// Package live is fleetcam's live video service. A device streams a
// camera by POSTing JPEG frames, one per request, to a stream; viewers
// watch the stream's frames as they arrive. A Hub holds the streams of a
// node: it starts a stream when a caller asks for a camera's video (Open),
// hands each frame to the stream's viewers, and tells the device to stop
// when the stream has lasted its lifetime or nobody has watched it for the
// idle timeout (counted from Open's answer, or from the last viewer
// leaving). In a cluster it relays frames and viewers between the node
// that holds a stream and the others (relay.go). The HTTP side (signed
// URLs, MJPEG, the API's errors) is cloudapi's.
package live

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"
)

// Device tells devices to start and stop streaming; cloudapi implements
// it with the broker's commands.
type Device interface {
	// Start asks the device to stream camera to the stream id and returns
	// once it accepted; its error is what Open returns.
	Start(ctx context.Context, imei string, camera int, id string) error
	// Stop tells the device to stop streaming camera. The Hub calls it on
	// a goroutine of its own.
	Stop(imei string, camera int)
}

// Config is how long streams last and wait.
type Config struct {
	// TTL is a stream's lifetime.
	TTL time.Duration
	// ConnectTimeout bounds Open's wait for a new stream's first frame.
	ConnectTimeout time.Duration
	// IdleTimeout ends a stream nobody has watched for that long.
	IdleTimeout time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Errors of a Hub.
var (
	// ErrEnded is the answer about a stream that ended, or that no node
	// has: its device stops sending and its viewers open it again.
	ErrEnded = errors.New("live: the stream ended")
	// ErrNoFrame is Open's answer when the device sent no frame within the
	// connect timeout; the stream is stopped and a new Open starts another.
	ErrNoFrame = errors.New("live: the device sent no frame in time")
)

// Hub holds the live streams of this node.
type Hub struct {
	cfg   Config
	dev   Device
	relay Relay // nil on a node alone

	mu       sync.Mutex
	streams  map[string]*Stream // by id
	byCamera map[string]*Stream // by imei/camera
	// stopping holds, by imei/camera, a stop on its way to the device,
	// closed once sent. A new stream of the camera is started after it:
	// the device's next frame of an ended stream is answered 410 and it
	// stops sending at once, so a new stream may be asked for before the
	// old one's stop is sent, and a stop that reached the device after the
	// new start would end the new stream.
	stopping map[string]chan struct{}
}

// New returns the Hub of a node; relay is nil on a node alone.
func New(cfg Config, dev Device, relay Relay) *Hub {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Hub{cfg: cfg, dev: dev, relay: relay, streams: map[string]*Stream{}, byCamera: map[string]*Stream{},
		stopping: map[string]chan struct{}{}}
}

// Opened names a stream whose frames are arriving.
type Opened struct {
	ID      string    `json:"id"`
	Expires time.Time `json:"expires"`
}

func cameraKey(imei string, camera int) string { return imei + "/" + strconv.Itoa(camera) }

// Open starts (or joins) the live stream of a camera of a device this node
// holds, and waits for its first frame: ErrNoFrame when the device sends
// none within the connect timeout, ErrEnded when the stream ends first. A
// new stream lasts ttl (0: the configured TTL); a joined one keeps its own.
func (h *Hub) Open(ctx context.Context, imei string, camera int, ttl time.Duration) (Opened, error) {
	st, fresh := h.Begin(imei, camera, ttl)
	if fresh {
		if h.relay != nil {
			if err := h.serveRemote(st); err != nil {
				h.End(st)
				return Opened{}, err
			}
		}
		if err := h.stopSent(ctx, imei, camera); err != nil {
			h.End(st)
			return Opened{}, err
		}
		if err := h.dev.Start(ctx, imei, camera, st.id); err != nil {
			h.End(st)
			return Opened{}, err
		}
		time.AfterFunc(st.expires.Sub(h.cfg.Now()), func() { h.stop(st) })
	}
	// From the answer (or a caller gone before it), the caller has the
	// idle timeout to start watching.
	defer h.stopWhenUnwatched(st)
	timer := time.NewTimer(h.cfg.ConnectTimeout)
	defer timer.Stop()
	select {
	case <-st.first:
		return Opened{ID: st.id, Expires: st.expires}, nil
	case <-st.done:
		return Opened{}, ErrEnded
	case <-timer.C:
		h.stop(st)
		return Opened{}, ErrNoFrame
	case <-ctx.Done():
		return Opened{}, ctx.Err()
	}
}

// Begin returns the running stream of the camera, or a new one (fresh)
// that lasts ttl (0: the configured TTL). It does not tell the device: Open
// does.
func (h *Hub) Begin(imei string, camera int, ttl time.Duration) (st *Stream, fresh bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.byCamera[cameraKey(imei, camera)]; st != nil && !st.isEnded() {
		return st, false
	}
	if ttl <= 0 {
		ttl = h.cfg.TTL
	}
	st = newStream(newID(), imei, camera, h.cfg.Now().Add(ttl))
	h.streams[st.id] = st
	h.byCamera[cameraKey(imei, camera)] = st
	return st, true
}

func (h *Hub) get(id string) *Stream {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streams[id]
}

// End stops a stream without telling the device; it reports whether it
// was running.
func (h *Hub) End(st *Stream) bool {
	h.mu.Lock()
	h.unlistLocked(st)
	h.mu.Unlock()
	return st.finish()
}

// unlistLocked removes st from the hub's streams; h.mu is held.
func (h *Hub) unlistLocked(st *Stream) {
	if h.streams[st.id] == st {
		delete(h.streams, st.id)
	}
	if h.byCamera[cameraKey(st.imei, st.camera)] == st {
		delete(h.byCamera, cameraKey(st.imei, st.camera))
	}
}

// stop ends a stream and tells the device to stop sending, after any stop
// of the camera sent before it.
func (h *Hub) stop(st *Stream) {
	key := cameraKey(st.imei, st.camera)
	sent := make(chan struct{})
	h.mu.Lock()
	h.unlistLocked(st)
	before := h.stopping[key]
	h.stopping[key] = sent
	h.mu.Unlock()
	running := st.finish()
	go func() {
		if before != nil {
			<-before
		}
		if running {
			h.dev.Stop(st.imei, st.camera)
		}
		h.mu.Lock()
		if h.stopping[key] == sent {
			delete(h.stopping, key)
		}
		h.mu.Unlock()
		close(sent)
	}()
}

// stopSent waits until no stop of the camera is on its way to the device.
func (h *Hub) stopSent(ctx context.Context, imei string, camera int) error {
	h.mu.Lock()
	sent := h.stopping[cameraKey(imei, camera)]
	h.mu.Unlock()
	if sent == nil {
		return nil
	}
	select {
	case <-sent:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopWhenUnwatched stops st once nobody has watched it for the idle timeout.
func (h *Hub) stopWhenUnwatched(st *Stream) {
	st.idle(h.cfg.IdleTimeout, func() { h.stop(st) })
}

// EndDevice stops every stream of imei without telling the device: a
// device that leaves its organization streams to nobody of it any more.
func (h *Hub) EndDevice(imei string) {
	for _, st := range h.deviceStreams(imei) {
		h.End(st)
	}
}

// StopDevice stops every stream of imei on this node and tells the device
// to stop each: its settings no longer allow live video. Viewers' streams
// end and the device's next frame of each is refused.
func (h *Hub) StopDevice(imei string) {
	for _, st := range h.deviceStreams(imei) {
		h.stop(st)
	}
}

// Streaming reports whether imei has a stream running on this node.
func (h *Hub) Streaming(imei string) bool { return len(h.deviceStreams(imei)) > 0 }

// deviceStreams lists the streams of imei on this node.
func (h *Hub) deviceStreams(imei string) []*Stream {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Stream
	for _, st := range h.streams {
		if st.imei == imei {
			out = append(out, st)
		}
	}
	return out
}

// State reports whether the camera has a stream running on this node and
// whether its first frame arrived (viewers can watch).
func (h *Hub) State(imei string, camera int) (running, ready bool) {
	h.mu.Lock()
	st := h.byCamera[cameraKey(imei, camera)]
	h.mu.Unlock()
	if st == nil {
		return false, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return !st.ended, !st.ended && st.frame != nil
}

// Receives reports whether a frame for stream id of imei may be taken: on
// a node alone, whether the stream runs here; in a cluster, whether id can
// be a stream's at all, since it may be another node's (Frame asks it).
func (h *Hub) Receives(id, imei string) bool {
	if !validID(id) {
		return false
	}
	if h.relay != nil {
		return true
	}
	st := h.get(id)
	return st != nil && st.imei == imei && !st.isEnded()
}

// Frame makes frame the current one of stream id, here or, in a cluster,
// at the stream's node; ErrEnded once the stream ended.
func (h *Hub) Frame(ctx context.Context, id, imei string, frame []byte) error {
	if !validID(id) {
		return ErrEnded
	}
	st := h.get(id)
	switch {
	case st != nil:
		return h.take(st, imei, frame)
	case h.relay != nil:
		return h.frameToHome(ctx, id, imei, frame)
	}
	return ErrEnded
}

// take makes frame the current one of st, a stream of this node, and
// hands it to its viewers on other nodes.
func (h *Hub) take(st *Stream, imei string, frame []byte) error {
	if st.imei != imei || st.isEnded() {
		return ErrEnded
	}
	st.Publish(frame)
	if st.hasRemoteViewers() {
		h.relay.Publish(subject(st.id, "view"), frame)
	}
	return nil
}

// Watch counts a viewer of stream id in. It returns the stream to watch
// (a mirror of it when it is another node's) and leave, which the viewer
// calls when done; ErrEnded when the stream ended or no node has it.
func (h *Hub) Watch(ctx context.Context, id, imei string) (st *Stream, leave func(), err error) {
	if !validID(id) {
		return nil, nil, ErrEnded
	}
	st = h.get(id)
	if st == nil && h.relay != nil {
		return h.watchRemote(ctx, id, imei)
	}
	if st == nil || st.isEnded() {
		return nil, nil, ErrEnded
	}
	st.join()
	return st, func() { st.leave(); h.stopWhenUnwatched(st) }, nil
}
