package cloudapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Live streams in a cluster (docs/cluster.md). A stream lives on the node
// that holds its device when connect-media is called, its home: a camera
// has one stream in the cluster whichever nodes the callers use, and the
// device is told to start and stop it by one node. Connect-media through
// another node asks the device's node to open the stream; the frames the
// device POSTs to another node (behind a load balancer any node gets
// them) and viewers who connect to another node reach the home over NATS:
//
//	fleetcam.device.<imei>.live          request to the device's node: open or join a camera's stream
//	fleetcam.api.live.<id>.home.frame    request: a frame for the stream; answered ok or gone
//	fleetcam.api.live.<id>.home.join     request: a viewer on another node; answered with the current frame
//	fleetcam.api.live.<id>.home.renew    request: that viewer still watches (its lease)
//	fleetcam.api.live.<id>.home.leave    that viewer left
//	fleetcam.api.live.<id>.view          the home's frames, for the viewers on other nodes
//	fleetcam.api.live.<id>.end           the home ended the stream
//
// A viewer on another node holds a lease of liveLease, renewed every
// liveRenew: a viewer whose node dies stops counting when its lease runs
// out, and the stream then goes idle as it would have.

// Relay carries what the API's nodes tell each other; nil on a fleetcam
// alone. Errors: ErrDeviceOffline when no node holds the device,
// ErrDeviceUnreachable when the other nodes cannot be reached, ErrNobody
// when nothing answers a subject.
type Relay interface {
	// HandleHeld makes fn answer verb for the devices this node holds.
	HandleHeld(verb string, fn func(ctx context.Context, imei string, data []byte) ([]byte, error))
	// AskHolder has the node holding imei (this one included) answer verb.
	AskHolder(ctx context.Context, imei, verb string, data []byte) ([]byte, error)
	// Request sends data on subject and returns the first answer.
	Request(ctx context.Context, subject string, data []byte) ([]byte, error)
	// Publish sends data on subject to whoever listens.
	Publish(subject string, data []byte) error
	// Subscribe calls fn with each message on subject (wildcards allowed)
	// until stop; fn's answer, if not nil, answers a request.
	Subscribe(subject string, fn func(subject string, data []byte) []byte) (stop func(), err error)
}

// ErrNobody is what a Relay returns when no node answers a subject.
var ErrNobody = errors.New("cloudapi: no node answers")

const (
	// liveVerb is the device subject of opening a stream.
	liveVerb = "live"
	// liveLease is how long a viewer on another node counts without
	// renewing; liveRenew how often it renews.
	liveLease = 6 * time.Second
	liveRenew = 2 * time.Second
	// liveAskTimeout bounds a request to a stream's home.
	liveAskTimeout = 5 * time.Second
)

// Answers of a stream's home.
var (
	liveOK   = []byte("ok")
	liveGone = []byte("gone")
)

func liveSubject(id, verb string) string { return "live." + id + "." + verb }

// liveOpenRequest asks the device's node to open a camera's stream.
type liveOpenRequest struct {
	Camera int `json:"camera"`
}

// liveOpenAnswer is the device's node's answer: the stream, or why not.
type liveOpenAnswer struct {
	Stream *liveOpened `json:"stream,omitempty"`
	Error  *APIError   `json:"error,omitempty"`
}

// openLiveOnHolder opens the stream on the node that holds the device.
func (s *Server) openLiveOnHolder(ctx context.Context, imei string, camera int) (liveOpened, error) {
	req, _ := json.Marshal(liveOpenRequest{Camera: camera})
	raw, err := s.relay.AskHolder(ctx, imei, liveVerb, req)
	if err != nil {
		return liveOpened{}, fmt.Errorf("live stream of %s: %w", imei, err)
	}
	var a liveOpenAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return liveOpened{}, fmt.Errorf("live stream of %s: the device's node answered: %w", imei, err)
	}
	if a.Error != nil {
		return liveOpened{}, a.Error
	}
	if a.Stream == nil {
		return liveOpened{}, fmt.Errorf("live stream of %s: the device's node answered no stream", imei)
	}
	return *a.Stream, nil
}

// answerLiveOpen opens a stream for another node's connect-media.
func (s *Server) answerLiveOpen(ctx context.Context, imei string, data []byte) ([]byte, error) {
	var req liveOpenRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("malformed request to open a live stream: %w", err)
	}
	opened, err := s.openLive(ctx, imei, req.Camera)
	if err != nil {
		ae := statusOf(err)
		if ae.Status >= 500 {
			s.log.Error("open a live stream for another node", "imei", imei, "err", err)
		}
		return json.Marshal(liveOpenAnswer{Error: ae})
	}
	return json.Marshal(liveOpenAnswer{Stream: &opened})
}

// serveRemote makes st, a stream of this node, answer the other nodes,
// until it ends.
func (s *Server) serveRemote(st *liveStream) error {
	stop, err := s.relay.Subscribe(liveSubject(st.id, "home.*"), func(subject string, data []byte) []byte {
		verb := subject[strings.LastIndexByte(subject, '.')+1:]
		imei, rest, _ := bytes.Cut(data, []byte{0})
		if string(imei) != st.imei {
			return liveGone
		}
		switch verb {
		case "frame":
			if s.takeFrame(st, st.imei, rest) != nil {
				return liveGone
			}
			return liveOK
		case "join", "renew":
			if !st.holdRemote(string(rest), func() { s.stopWhenUnwatched(st) }) {
				return liveGone
			}
			if verb == "renew" {
				return liveOK
			}
			frame, _ := st.current()
			return append(append([]byte{}, liveOK...), frame...)
		case "leave":
			if st.dropRemote(string(rest)) {
				s.stopWhenUnwatched(st)
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
		s.relay.Publish(liveSubject(st.id, "end"), nil)
	}
	st.mu.Unlock()
	return nil
}

// holdRemote counts a viewer of another node in, or renews its lease;
// when the lease runs out the viewer is counted out and expired runs. It
// reports false for a stream that ended.
func (st *liveStream) holdRemote(viewer string, expired func()) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return false
	}
	if lease := st.remote[viewer]; lease != nil {
		lease.Reset(liveLease)
		return true
	}
	if st.remote == nil {
		st.remote = map[string]*time.Timer{}
	}
	st.viewers++
	st.idleGen++
	st.remote[viewer] = time.AfterFunc(liveLease, func() {
		if st.dropRemote(viewer) {
			expired()
		}
	})
	return true
}

// dropRemote counts a viewer of another node out; it reports whether it
// was counted.
func (st *liveStream) dropRemote(viewer string) bool {
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

func (st *liveStream) hasRemoteViewers() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.remote) > 0
}

// frameToHome hands a frame that reached this node to its stream's home.
func (s *Server) frameToHome(ctx context.Context, id, imei string, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, liveAskTimeout)
	defer cancel()
	ans, err := s.relay.Request(ctx, liveSubject(id, "home.frame"), append([]byte(imei+"\x00"), frame...))
	switch {
	case errors.Is(err, ErrNobody), err == nil && !bytes.Equal(ans, liveOK):
		return errStreamGone
	case err != nil:
		return fmt.Errorf("live frame: %w", err)
	}
	return nil
}

// watchRemote joins the stream of another node: it returns a mirror of the
// stream, fed with its frames until it ends, and leave, which the viewer
// calls when done.
func (s *Server) watchRemote(ctx context.Context, id, imei string) (mirror *liveStream, leave func(), err error) {
	mirror = &liveStream{id: id, imei: imei, first: make(chan struct{}), done: make(chan struct{}), changed: make(chan struct{})}
	viewer := rand.Text()
	var stops []func()
	unsubscribe := func() {
		for _, stop := range stops {
			stop()
		}
	}
	for verb, fn := range map[string]func([]byte){
		"view": func(frame []byte) { mirror.publish(bytes.Clone(frame)) },
		"end":  func([]byte) { mirror.finish() },
	} {
		stop, err := s.relay.Subscribe(liveSubject(id, verb), func(_ string, data []byte) []byte { fn(data); return nil })
		if err != nil {
			unsubscribe()
			return nil, nil, fmt.Errorf("watch a live stream: %w", err)
		}
		stops = append(stops, stop)
	}
	ask := func(verb string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, liveAskTimeout)
		defer cancel()
		ans, err := s.relay.Request(ctx, liveSubject(id, "home."+verb), []byte(imei+"\x00"+viewer))
		if err == nil && !bytes.HasPrefix(ans, liveOK) {
			err = ErrNobody // the stream ended
		}
		return ans, err
	}
	ans, err := ask("join")
	if err != nil {
		unsubscribe()
		if errors.Is(err, ErrNobody) {
			return nil, nil, notFound("live stream (it ended); call connect-media again")
		}
		return nil, nil, fmt.Errorf("watch a live stream: %w", err)
	}
	if frame := ans[len(liveOK):]; len(frame) > 0 {
		mirror.publish(bytes.Clone(frame))
	}
	stopRenew := make(chan struct{})
	go func() {
		tick := time.NewTicker(liveRenew)
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
		s.relay.Publish(liveSubject(id, "home.leave"), []byte(imei+"\x00"+viewer))
	}, nil
}
