package cloudapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/live"
	"github.com/fleetcam/fleetcam/store"
)

// Live streams in a cluster (docs/cluster.md). A stream lives on the node
// that holds its device when connect-media is called, its home: a camera
// has one stream in the cluster whichever nodes the callers use, and the
// device is told to start and stop it by one node. Connect-media through
// another node asks the device's node to open the stream:
//
//	fleetcam.device.<imei>.live          request to the device's node: open or join a camera's stream
//
// and answers with the stream, or with the error the device's node
// answered; frames and viewers reach the home through the live package's
// subjects. A settings write tells every node which devices' settings
// changed, so that the home of a stream those settings now forbid ends it:
//
//	fleetcam.api.live.settings           publish: IMEIs, one a line, whose settings changed

// Relay carries what the API's nodes tell each other; nil on a fleetcam
// alone. Errors: ErrDeviceOffline when no node holds the device,
// ErrDeviceUnreachable when the other nodes cannot be reached, ErrNobody
// when nothing answers a subject.
type Relay interface {
	live.Relay
	// HandleHeld makes fn answer verb for the devices this node holds.
	HandleHeld(verb string, fn func(ctx context.Context, imei string, data []byte) ([]byte, error))
	// AskHolder has the node holding imei (this one included) answer verb.
	AskHolder(ctx context.Context, imei, verb string, data []byte) ([]byte, error)
}

// ErrNobody is what a Relay returns when no node answers a subject.
var ErrNobody = live.ErrNobody

// liveVerb is the device subject of opening a stream.
const liveVerb = "live"

// liveOpenRequest asks the device's node to open a camera's stream.
type liveOpenRequest struct {
	Camera int `json:"camera"`
	// TTL is how long a new stream lasts (0: liveStreamTTL).
	TTL time.Duration `json:"ttl,omitempty"`
}

// liveOpenAnswer is the device's node's answer: the stream, or why not.
type liveOpenAnswer struct {
	Stream *live.Opened `json:"stream,omitempty"`
	Error  *APIError    `json:"error,omitempty"`
}

// openLiveOnHolder opens the stream on the node that holds the device.
func (s *Server) openLiveOnHolder(ctx context.Context, imei string, camera int, ttl time.Duration) (live.Opened, error) {
	req, _ := json.Marshal(liveOpenRequest{Camera: camera, TTL: ttl})
	raw, err := s.relay.AskHolder(ctx, imei, liveVerb, req)
	if err != nil {
		return live.Opened{}, fmt.Errorf("live stream of %s: %w", imei, err)
	}
	var a liveOpenAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return live.Opened{}, fmt.Errorf("live stream of %s: the device's node answered: %w", imei, err)
	}
	if a.Error != nil {
		return live.Opened{}, a.Error
	}
	if a.Stream == nil {
		return live.Opened{}, fmt.Errorf("live stream of %s: the device's node answered no stream", imei)
	}
	return *a.Stream, nil
}

// answerLiveOpen opens a stream for another node's connect-media.
func (s *Server) answerLiveOpen(ctx context.Context, imei string, data []byte) ([]byte, error) {
	var req liveOpenRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("malformed request to open a live stream: %w", err)
	}
	opened, err := s.openLive(ctx, imei, req.Camera, req.TTL)
	if err != nil {
		ae := statusOf(err)
		if ae.Status >= 500 {
			s.log.Error("open a live stream for another node", "imei", imei, "err", err)
		}
		return json.Marshal(liveOpenAnswer{Error: ae})
	}
	return json.Marshal(liveOpenAnswer{Stream: &opened})
}

// liveSettingsSubject carries the IMEIs whose settings changed
// (endForbiddenLive); liveSettingsChunk bounds the IMEIs of one message.
const (
	liveSettingsSubject = "live.settings"
	liveSettingsChunk   = 1000
)

// endForbiddenLive ends the running live streams of those of imeis whose
// settings, as committed now, make live streaming impossible
// (liveVideoLocked): their viewers' responses end, the device is told to
// stop and its next frame is answered 410. Every settings write calls it
// once committed (pushConfig). In a cluster a stream lives on its home
// node, which may be another: every node is told the IMEIs and checks the
// streams it holds.
func (s *Server) endForbiddenLive(imeis ...string) {
	s.endForbiddenLiveHere(imeis)
	if s.relay == nil {
		return
	}
	for start := 0; start < len(imeis); start += liveSettingsChunk {
		chunk := imeis[start:min(start+liveSettingsChunk, len(imeis))]
		if err := s.relay.Publish(liveSettingsSubject, []byte(strings.Join(chunk, "\n"))); err != nil {
			s.log.Warn("tell the other nodes of changed settings; their live streams of these devices go on", "devices", len(chunk), "err", err)
		}
	}
}

// subscribeLiveSettings makes this node end its streams the changed
// settings of another node's write forbid.
func (s *Server) subscribeLiveSettings() error {
	_, err := s.relay.Subscribe(liveSettingsSubject, func(_ string, data []byte) []byte {
		if len(data) > 0 {
			go s.endForbiddenLiveHere(strings.Split(string(data), "\n"))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cloudapi: subscribe to changed settings: %w", err)
	}
	return nil
}

// endForbiddenLiveHere ends this node's streams of those of imeis whose
// settings forbid live video; only a device with a stream here costs a
// read. A device no longer in the inventory streams no more either.
func (s *Server) endForbiddenLiveHere(imeis []string) {
	var running []string
	for _, imei := range imeis {
		if s.live.Streaming(imei) {
			running = append(running, imei)
		}
	}
	if len(running) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var doomed []string
	err := s.store.View(ctx, func(tx *store.Tx) error {
		for _, imei := range running {
			switch err := s.liveVideoLocked(tx, imei); {
			case err == nil:
			case errors.Is(err, store.ErrNotFound), statusOf(err).Status == http.StatusLocked:
				doomed = append(doomed, imei)
			default:
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.log.Error("read the settings of devices streaming live", "devices", len(running), "err", err)
		return
	}
	for _, imei := range doomed {
		s.live.StopDevice(imei)
	}
}
