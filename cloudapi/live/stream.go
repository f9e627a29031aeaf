package live

import (
	"crypto/rand"
	"sync"
	"time"
)

// Stream is one camera's stream: its current frame and its viewers.
type Stream struct {
	id, imei string
	camera   int
	expires  time.Time
	first    chan struct{} // closed at the first frame
	done     chan struct{} // closed when the stream ends

	mu      sync.Mutex
	frame   []byte
	changed chan struct{} // closed and replaced at every frame
	ended   bool
	viewers int    // open viewing connections, here and on other nodes
	idleGen uint64 // moves on at every join or idle wait, voiding older waits
	// remote holds the leases of viewers on other nodes (cluster mode).
	remote map[string]*time.Timer
	// onEnd runs once when the stream ends (cluster mode: it stops
	// answering other nodes and tells them).
	onEnd func()
}

func newStream(id, imei string, camera int, expires time.Time) *Stream {
	return &Stream{id: id, imei: imei, camera: camera, expires: expires, first: make(chan struct{}),
		done: make(chan struct{}), changed: make(chan struct{})}
}

// newID returns a fresh stream id.
func newID() string { return rand.Text() }

// validID reports whether id can be a stream's id (rand.Text: 26
// characters of the base32 alphabet). Ids name NATS subjects in a cluster,
// where a '.', '*' or '>' would reach other subjects.
func validID(id string) bool {
	if len(id) != 26 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// Publish makes frame the stream's current frame and wakes its viewers.
// Viewers share frame: it must not change afterwards.
func (st *Stream) Publish(frame []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.frame == nil {
		close(st.first)
	}
	st.frame = frame
	close(st.changed)
	st.changed = make(chan struct{})
}

// Current returns the current frame (nil before the first) and a channel
// closed when the next one arrives.
func (st *Stream) Current() ([]byte, <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.frame, st.changed
}

// Done is closed when the stream ends.
func (st *Stream) Done() <-chan struct{} { return st.done }

// finish ends st; it reports whether it was running.
func (st *Stream) finish() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return false
	}
	st.ended = true
	close(st.done)
	for _, lease := range st.remote {
		lease.Stop()
	}
	if st.onEnd != nil {
		go st.onEnd()
	}
	return true
}

func (st *Stream) isEnded() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ended
}

// join counts a viewer in; it cancels any wait for the stream to go idle.
func (st *Stream) join() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.viewers++
	st.idleGen++
}

// leave counts a viewer out.
func (st *Stream) leave() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.viewers--
}

// idle calls stop after grace unless the stream has viewers, or one joins
// before then.
func (st *Stream) idle(grace time.Duration, stop func()) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended || st.viewers > 0 {
		return
	}
	st.idleGen++
	gen := st.idleGen
	time.AfterFunc(grace, func() {
		st.mu.Lock()
		unwatched := st.idleGen == gen && st.viewers == 0
		st.mu.Unlock()
		if unwatched {
			stop()
		}
	})
}
