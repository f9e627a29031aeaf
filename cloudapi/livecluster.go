package cloudapi

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/live"
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
// subjects.

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
