package cloudapi

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Live video: POST /devices/{imei}/connect-media asks the device to stream
// a camera. The device POSTs JPEG frames, one per request, to a signed
// frames URL; viewers GET the stream's address with its mediaToken and
// receive the frames as MJPEG (multipart/x-mixed-replace), which browsers
// play in an <img> element. A stream lasts liveStreamTTL, or ends sooner
// when nobody has watched it for media.liveStreamIdleTimeout (counted from
// connect-media's answer, or from the last viewer leaving): the device is
// told to stop, and a device whose stream ended gets 410 Gone for its next
// frame and stops.

// liveStreamTTL is how long a stream and its media token last.
const liveStreamTTL = 30 * time.Minute

// liveHub holds the live streams of this process.
type liveHub struct {
	mu       sync.Mutex
	streams  map[string]*liveStream // by id
	byCamera map[string]*liveStream // by imei/camera
}

func newLiveHub() *liveHub {
	return &liveHub{streams: map[string]*liveStream{}, byCamera: map[string]*liveStream{}}
}

// liveStream is one camera's stream.
type liveStream struct {
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

// validStreamID reports whether id can be a stream's id (rand.Text: 26
// characters of the base32 alphabet). Ids name NATS subjects in a cluster,
// where a '.', '*' or '>' would reach other subjects.
func validStreamID(id string) bool {
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

func cameraKey(imei string, camera int) string { return imei + "/" + strconv.Itoa(camera) }

// open returns the running stream of the camera, or a new one.
func (h *liveHub) open(imei string, camera int, expires time.Time) (st *liveStream, fresh bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.byCamera[cameraKey(imei, camera)]; st != nil && !st.isEnded() {
		return st, false
	}
	st = &liveStream{id: rand.Text(), imei: imei, camera: camera, expires: expires, first: make(chan struct{}),
		done: make(chan struct{}), changed: make(chan struct{})}
	h.streams[st.id] = st
	h.byCamera[cameraKey(imei, camera)] = st
	return st, true
}

func (h *liveHub) get(id string) *liveStream {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streams[id]
}

// end stops a stream; it reports whether it was running.
func (h *liveHub) end(st *liveStream) bool {
	h.mu.Lock()
	if h.streams[st.id] == st {
		delete(h.streams, st.id)
	}
	if h.byCamera[cameraKey(st.imei, st.camera)] == st {
		delete(h.byCamera, cameraKey(st.imei, st.camera))
	}
	h.mu.Unlock()
	return st.finish()
}

// finish ends st; it reports whether it was running.
func (st *liveStream) finish() bool {
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

// endDevice stops every stream of imei: a device that leaves its
// organization streams to nobody of it any more.
func (h *liveHub) endDevice(imei string) {
	h.mu.Lock()
	var doomed []*liveStream
	for _, st := range h.streams {
		if st.imei == imei {
			doomed = append(doomed, st)
		}
	}
	h.mu.Unlock()
	for _, st := range doomed {
		h.end(st)
	}
}

// state reports whether the camera has a stream running and whether its
// first frame arrived (viewers can watch).
func (h *liveHub) state(imei string, camera int) (running, ready bool) {
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

func (st *liveStream) isEnded() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ended
}

// publish makes frame the stream's current frame and wakes its viewers.
func (st *liveStream) publish(frame []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.frame == nil {
		close(st.first)
	}
	st.frame = frame
	close(st.changed)
	st.changed = make(chan struct{})
}

func (st *liveStream) current() ([]byte, chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.frame, st.changed
}

// join counts a viewer in; it cancels any wait for the stream to go idle.
func (st *liveStream) join() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.viewers++
	st.idleGen++
}

// leave counts a viewer out.
func (st *liveStream) leave() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.viewers--
}

// idle calls stop after grace unless the stream has viewers, or one joins
// before then.
func (st *liveStream) idle(grace time.Duration, stop func()) {
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

// stopWhenUnwatched ends st once nobody has watched it for the idle timeout.
func (s *Server) stopWhenUnwatched(st *liveStream) {
	st.idle(s.cfg.Media.LiveStreamIdleTimeout, func() { s.stopLiveStream(st) })
}

func livePath(imei, id string) string { return "/v2/media/live/" + imei + "/" + id }

// mediaToken signs a viewer's access to a stream until exp.
func (s *Server) mediaToken(st *liveStream) string {
	exp := st.expires.Unix()
	return strconv.FormatInt(exp, 10) + "." + s.mediaSignature(livePath(st.imei, st.id), exp)
}

// connectMediaResponse is the answer of connect-media.
type connectMediaResponse struct {
	// Address is the stream's URL; it needs the mediaToken.
	Address    string `json:"address"`
	MediaToken string `json:"mediaToken"`
	// URL is the address with the token, ready for an <img> element.
	URL       string `json:"url"`
	CameraID  int    `json:"cameraId"`
	ExpiresAt string `json:"expiresAt"`
}

// connectMedia handles POST /devices/{imei}/connect-media: starts (or
// joins) the live stream of a camera (query cameraId, default 1). When the
// device sends no frame within media.liveStreamConnectTimeout the answer is
// 404 and the caller retries.
func (s *Server) connectMedia(c *gin.Context) error {
	camera := 1
	if v := c.Query("cameraId"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || !store.ValidCameraID(n) {
			return badField("cameraId", store.RuleCameraID)
		}
		camera = n
	}
	var dev *store.Device
	err := s.view(c, func(tx *store.Tx) error {
		var err error
		if dev, err = s.device(c, tx); err != nil {
			return err
		}
		eff, err := tx.EffectiveSettings(dev.IMEI)
		if err != nil {
			return err
		}
		switch {
		case !eff.Privacy.LiveStreamEnabled:
			return locked("the privacy settings of device %s disable live streaming (privacy.liveStreamEnabled is false)", dev.IMEI)
		case !eff.Device.LiveVideo:
			return locked("live video is disabled in the device configuration of %s (liveVideo is false)", dev.IMEI)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if s.commander == nil || !s.commander.Online(dev.IMEI) {
		return fmt.Errorf("live stream of %s: %w", dev.IMEI, ErrDeviceOffline)
	}
	open := s.openLive
	if s.relay != nil {
		open = s.openLiveOnHolder
	}
	opened, err := open(c.Request.Context(), dev.IMEI, camera)
	if err != nil {
		return err
	}
	st := &liveStream{id: opened.ID, imei: dev.IMEI, expires: opened.Expires}
	tok := s.mediaToken(st)
	addr := s.publicURL() + livePath(dev.IMEI, st.id)
	return ok(c, connectMediaResponse{Address: addr, MediaToken: tok, URL: addr + "?mediaToken=" + tok, CameraID: camera,
		ExpiresAt: isoTime(st.expires)})
}

// liveOpened names a stream whose frames are arriving.
type liveOpened struct {
	ID      string    `json:"id"`
	Expires time.Time `json:"expires"`
}

// openLive starts (or joins) the live stream of a camera of a device this
// node holds, and waits for its first frame: when the device sends none
// within media.liveStreamConnectTimeout the answer is 404 and the caller
// retries.
func (s *Server) openLive(ctx context.Context, imei string, camera int) (liveOpened, error) {
	st, fresh := s.live.open(imei, camera, s.now().Add(liveStreamTTL))
	if fresh {
		if s.relay != nil {
			if err := s.serveRemote(st); err != nil {
				s.live.end(st)
				return liveOpened{}, err
			}
		}
		frames, exp := s.signedURL(livePath(imei, st.id)+"/frames", liveStreamTTL)
		args := protocol.LiveStreamArgs{CameraID: camera, Start: true, URL: frames, Expires: exp.Unix()}
		if _, err := s.commander.Send(ctx, imei, protocol.CmdLiveStream, args); err != nil {
			s.live.end(st)
			return liveOpened{}, commandFailed("start a live stream", err)
		}
		time.AfterFunc(liveStreamTTL, func() { s.stopLiveStream(st) })
	}
	// From the answer (or a caller gone before it), the caller has the
	// idle timeout to start watching.
	defer s.stopWhenUnwatched(st)
	timer := time.NewTimer(s.cfg.Media.LiveStreamConnectTimeout)
	defer timer.Stop()
	select {
	case <-st.first:
		return liveOpened{ID: st.id, Expires: st.expires}, nil
	case <-st.done:
		return liveOpened{}, notFound("live stream of device " + imei + " (it ended); try again")
	case <-timer.C:
		s.stopLiveStream(st)
		return liveOpened{}, apiErr(http.StatusNotFound, nameNotFound, "device %s did not start streaming camera %d within %s; try again",
			imei, camera, s.cfg.Media.LiveStreamConnectTimeout)
	case <-ctx.Done():
		return liveOpened{}, ctx.Err()
	}
}

// errStreamGone is the answer to a frame of a stream that ended: the
// device stops sending at once.
var errStreamGone = apiErr(http.StatusGone, nameNotFound, "the live stream ended; stop streaming")

// takeFrame makes frame the current one of st, a stream of this node, and
// hands it to its viewers on other nodes.
func (s *Server) takeFrame(st *liveStream, imei string, frame []byte) error {
	if st.imei != imei || st.isEnded() {
		return errStreamGone
	}
	st.publish(frame)
	if st.hasRemoteViewers() {
		s.relay.Publish(liveSubject(st.id, "view"), frame)
	}
	return nil
}

// stopLiveStream ends a stream and tells the device to stop sending.
func (s *Server) stopLiveStream(st *liveStream) {
	if !s.live.end(st) || s.commander == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.MQTT.CommandTimeout)
		defer cancel()
		s.commander.Send(ctx, st.imei, protocol.CmdLiveStream, protocol.LiveStreamArgs{CameraID: st.camera})
	}()
}

// liveFrame handles POST /v2/media/live/{imei}/{stream}/frames: one JPEG
// frame from the device. A stream that ended answers 410 Gone.
func (s *Server) liveFrame(c *gin.Context) error {
	if err := s.checkSignature(c); err != nil {
		return err
	}
	if !validStreamID(c.Param("stream")) {
		return errStreamGone
	}
	st := s.live.get(c.Param("stream"))
	if s.relay == nil && (st == nil || st.imei != c.Param("imei") || st.isEnded()) {
		return errStreamGone
	}
	frame, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxFrameBytes))
	switch {
	case err != nil:
		return apiErr(http.StatusRequestEntityTooLarge, nameTooLarge, "a frame may be at most %d bytes", maxFrameBytes)
	case len(frame) < 4 || frame[0] != 0xff || frame[1] != 0xd8:
		return badRequest("a frame must be one JPEG image")
	}
	if st == nil && s.relay != nil {
		// The stream lives on another node (or nowhere any more).
		if err := s.frameToHome(c.Request.Context(), c.Param("stream"), c.Param("imei"), frame); err != nil {
			return err
		}
		return noContent(c)
	}
	if err := s.takeFrame(st, c.Param("imei"), frame); err != nil {
		return err
	}
	return noContent(c)
}

// watchLive handles GET /v2/media/live/{imei}/{stream}: the stream as
// MJPEG, authorized by its mediaToken (query mediaToken or bearer).
func (s *Server) watchLive(c *gin.Context) error {
	tok := c.Query("mediaToken")
	if tok == "" {
		tok, _ = strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	}
	expText, sig, _ := strings.Cut(tok, ".")
	exp, err := strconv.ParseInt(expText, 10, 64)
	path := livePath(c.Param("imei"), c.Param("stream"))
	if err != nil || !hmac.Equal([]byte(sig), []byte(s.mediaSignature(path, exp))) {
		return forbidden("the mediaToken is not valid for this stream; call connect-media again")
	}
	if s.now().Unix() > exp {
		return forbidden("the mediaToken expired; call connect-media again")
	}
	if !validStreamID(c.Param("stream")) {
		return notFound("live stream (it ended); call connect-media again")
	}
	st := s.live.get(c.Param("stream"))
	if st == nil && s.relay != nil {
		// The stream lives on another node: watch a mirror of it.
		mirror, leave, err := s.watchRemote(c.Request.Context(), c.Param("stream"), c.Param("imei"))
		if err != nil {
			return err
		}
		defer leave()
		serveMJPEG(c, mirror)
		return nil
	}
	if st == nil || st.isEnded() {
		return notFound("live stream (it ended); call connect-media again")
	}
	st.join()
	defer func() { st.leave(); s.stopWhenUnwatched(st) }()
	serveMJPEG(c, st)
	return nil
}

// serveMJPEG writes the frames of st as MJPEG until it ends or the viewer
// leaves.
func serveMJPEG(c *gin.Context, st *liveStream) {
	const boundary = "fleetcamframe"
	w := c.Writer
	w.Header().Set("Content-Type", "multipart/x-mixed-replace; boundary="+boundary)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	for {
		frame, changed := st.current()
		if frame != nil {
			_, err := fmt.Fprintf(w, "--%s\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n", boundary, len(frame))
			if err == nil {
				_, err = w.Write(frame) // shared by every viewer: never appended to
			}
			if err == nil {
				_, err = io.WriteString(w, "\r\n")
			}
			if err != nil {
				return
			}
			w.Flush()
		}
		select {
		case <-changed:
		case <-st.done:
			return
		case <-c.Request.Context().Done():
			return
		}
	}
}

// recordingInterval is one interval of recordings in the API form.
type recordingInterval struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

type cameraRecordings struct {
	CameraID  int                 `json:"cameraId"`
	Intervals []recordingInterval `json:"intervals"`
}

// recordingRanges handles GET /devices/{imei}/recording-ranges: per camera,
// the intervals the device's SD card holds since it left its previous
// organization (if it had one), clipped to start and end when given.
func (s *Server) recordingRanges(c *gin.Context) error {
	var from, to time.Time
	if c.Query("start") != "" || c.Query("end") != "" {
		var err error
		if from, err = parseAPITime("start", c.Query("start")); err != nil {
			return err
		}
		if to, err = parseAPITime("end", c.Query("end")); err != nil {
			return err
		}
		if err = checkOrder(from, to); err != nil {
			return err
		}
	}
	var dev *store.Device
	if err := s.view(c, func(tx *store.Tx) error { var err error; dev, err = s.device(c, tx); return err }); err != nil {
		return err
	}
	if s.commander == nil || !s.commander.Online(dev.IMEI) {
		return fmt.Errorf("recording ranges of %s: %w", dev.IMEI, ErrDeviceOffline)
	}
	raw, err := s.commander.Send(c.Request.Context(), dev.IMEI, protocol.CmdRecordingRanges, nil)
	if err != nil {
		return commandFailed("list its recordings", err)
	}
	var rr protocol.RecordingRanges
	if err := json.Unmarshal(raw, &rr); err != nil {
		return fmt.Errorf("recording ranges of %s: the device answered %w", dev.IMEI, err)
	}
	out := []cameraRecordings{}
	for _, cam := range rr.Cameras {
		cr := cameraRecordings{CameraID: cam.CameraID, Intervals: []recordingInterval{}}
		for _, r := range cam.Ranges {
			start, end := time.Unix(r[0], 0).UTC(), time.Unix(r[1], 0).UTC()
			// What the card holds from before the device left its previous
			// organization is that organization's.
			if !end.After(dev.PreviousOwnerUntil) {
				continue
			}
			start = later(start, dev.PreviousOwnerUntil)
			if !from.IsZero() {
				if end.Before(from) || start.After(to) {
					continue
				}
				start, end = later(start, from), earlier(end, to)
			}
			cr.Intervals = append(cr.Intervals, recordingInterval{Start: isoTime(start), End: isoTime(end)})
		}
		out = append(out, cr)
	}
	return ok(c, out)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
