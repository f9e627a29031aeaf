package live

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Live streams in a cluster (docs/cluster.md). A stream lives on the node
// that holds its device when it is opened, its home: cloudapi asks that
// node to open it, so a camera has one stream in the cluster and one node
// tells the device to start and stop it. The frames the device POSTs to
// another node (behind a load balancer any node gets them) and viewers who
// connect to another node reach the home over NATS:
//
//	fleetcam.api.live.<id>.home.frame    request: a frame for the stream; answered ok or gone
//	fleetcam.api.live.<id>.home.join     request: a viewer on another node; answered with the current frame
//	fleetcam.api.live.<id>.home.renew    request: that viewer still watches (its lease)
//	fleetcam.api.live.<id>.home.leave    that viewer left
//	fleetcam.api.live.<id>.view          the home's frames, for the viewers on other nodes
//	fleetcam.api.live.<id>.end           the home ended the stream
//
// A viewer on another node holds a lease of leaseTime, renewed every
// renewEvery: a viewer whose node dies stops counting when its lease runs
// out, and the stream then goes idle as it would have.

// Relay carries what the nodes tell each other; the subjects it is given
// are below the API's (fleetcam.api.). Errors: ErrNobody when nothing
// answers a subject.
type Relay interface {
	// Request sends data on subject and returns the first answer.
	Request(ctx context.Context, subject string, data []byte) ([]byte, error)
	// Publish sends data on subject to whoever listens.
	Publish(subject string, data []byte) error
	// Subscribe calls fn with each message on subject (wildcards allowed)
	// until stop; fn's answer, if not nil, answers a request.
	Subscribe(subject string, fn func(subject string, data []byte) []byte) (stop func(), err error)
}

// ErrNobody is what a Relay returns when no node answers a subject.
var ErrNobody = errors.New("live: no node answers")

const (
	// leaseTime is how long a viewer on another node counts without
	// renewing; renewEvery how often it renews.
	leaseTime  = 6 * time.Second
	renewEvery = 2 * time.Second
	// askTimeout bounds a request to a stream's home.
	askTimeout = 5 * time.Second
)

// Answers of a stream's home.
var (
	answerOK   = []byte("ok")
	answerGone = []byte("gone")
)

func subject(id, verb string) string { return "live." + id + "." + verb }

// serveRemote makes st, a stream of this node, answer the other nodes,
// until it ends.
func (h *Hub) serveRemote(st *Stream) error {
	stop, err := h.relay.Subscribe(subject(st.id, "home.*"), func(subject string, data []byte) []byte {
		verb := subject[strings.LastIndexByte(subject, '.')+1:]
		imei, rest, _ := bytes.Cut(data, []byte{0})
		if string(imei) != st.imei {
			return answerGone
		}
		switch verb {
		case "frame":
			if h.take(st, st.imei, rest) != nil {
				return answerGone
			}
			return answerOK
		case "join", "renew":
			if !st.holdRemote(string(rest), func() { h.stopWhenUnwatched(st) }) {
				return answerGone
			}
			if verb == "renew" {
				return answerOK
			}
			frame, _ := st.Current()
			return append(append([]byte{}, answerOK...), frame...)
		case "leave":
			if st.dropRemote(string(rest)) {
				h.stopWhenUnwatched(st)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("live stream: %w", err)
	}
	st.mu.Lock()
	st.onEnd = func() {
		stop()
		h.relay.Publish(subject(st.id, "end"), nil)
	}
	st.mu.Unlock()
	return nil
}

// holdRemote counts a viewer of another node in, or renews its lease;
// when the lease runs out the viewer is counted out and expired runs. It
// reports false for a stream that ended.
func (st *Stream) holdRemote(viewer string, expired func()) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return false
	}
	if lease := st.remote[viewer]; lease != nil {
		lease.Reset(leaseTime)
		return true
	}
	if st.remote == nil {
		st.remote = map[string]*time.Timer{}
	}
	st.viewers++
	st.idleGen++
	st.remote[viewer] = time.AfterFunc(leaseTime, func() {
		if st.dropRemote(viewer) {
			expired()
		}
	})
	return true
}

// dropRemote counts a viewer of another node out; it reports whether it
// was counted.
func (st *Stream) dropRemote(viewer string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	lease := st.remote[viewer]
	if lease == nil {
		return false
	}
	lease.Stop()
	delete(st.remote, viewer)
	st.viewers--
	return true
}

func (st *Stream) hasRemoteViewers() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.remote) > 0
}

// frameToHome hands a frame that reached this node to its stream's home.
func (h *Hub) frameToHome(ctx context.Context, id, imei string, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	ans, err := h.relay.Request(ctx, subject(id, "home.frame"), append([]byte(imei+"\x00"), frame...))
	switch {
	case errors.Is(err, ErrNobody), err == nil && !bytes.Equal(ans, answerOK):
		return ErrEnded
	case err != nil:
		return fmt.Errorf("live frame: %w", err)
	}
	return nil
}

// watchRemote joins the stream of another node: it returns a mirror of the
// stream, fed with its frames until it ends, and leave, which the viewer
// calls when done.
func (h *Hub) watchRemote(ctx context.Context, id, imei string) (mirror *Stream, leave func(), err error) {
	mirror = newStream(id, imei, 0, time.Time{})
	viewer := rand.Text()
	var stops []func()
	unsubscribe := func() {
		for _, stop := range stops {
			stop()
		}
	}
	for verb, fn := range map[string]func([]byte){
		"view": func(frame []byte) { mirror.Publish(bytes.Clone(frame)) },
		"end":  func([]byte) { mirror.finish() },
	} {
		stop, err := h.relay.Subscribe(subject(id, verb), func(_ string, data []byte) []byte { fn(data); return nil })
		if err != nil {
			unsubscribe()
			return nil, nil, fmt.Errorf("watch a live stream: %w", err)
		}
		stops = append(stops, stop)
	}
	ask := func(verb string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, askTimeout)
		defer cancel()
		ans, err := h.relay.Request(ctx, subject(id, "home."+verb), []byte(imei+"\x00"+viewer))
		if err == nil && !bytes.HasPrefix(ans, answerOK) {
			err = ErrNobody // the stream ended
		}
		return ans, err
	}
	ans, err := ask("join")
	if err != nil {
		unsubscribe()
		if errors.Is(err, ErrNobody) {
			return nil, nil, ErrEnded
		}
		return nil, nil, fmt.Errorf("watch a live stream: %w", err)
	}
	if frame := ans[len(answerOK):]; len(frame) > 0 {
		mirror.Publish(bytes.Clone(frame))
	}
	stopRenew := make(chan struct{})
	go func() {
		tick := time.NewTicker(renewEvery)
		defer tick.Stop()
		for {
			select {
			case <-stopRenew:
				return
			case <-mirror.done:
				return
			case <-tick.C:
				// A lost renewal (NATS away) is retried; a stream that
				// ended, or whose node is gone, ends the mirror.
				if _, err := ask("renew"); errors.Is(err, ErrNobody) {
					mirror.finish()
					return
				}
			}
		}
	}()
	return mirror, func() {
		close(stopRenew)
		unsubscribe()
		h.relay.Publish(subject(id, "home.leave"), []byte(imei+"\x00"+viewer))
	}, nil
}
