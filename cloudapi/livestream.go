package cloudapi

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/cloudapi/live"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Live video: POST /devices/{imei}/connect-media asks the device to stream
// a camera. The device POSTs JPEG frames, one per request, to a signed
// frames URL; viewers GET the stream's address with its mediaToken and
// receive the frames as MJPEG (multipart/x-mixed-replace), which browsers
// play in an <img> element. The streams themselves (their lifetime, idle
// timeout and, in a cluster, their relay between nodes) are the live
// package's Hub; a device whose stream ended gets 410 Gone for its next
// frame and stops.

// liveStreamTTL is how long a stream and its media token last.
const liveStreamTTL = 30 * time.Minute

// newLiveHub returns the live streams of this node, which tell devices to
// start and stop with s's commands.
func (s *Server) newLiveHub() *live.Hub {
	cfg := live.Config{TTL: liveStreamTTL, ConnectTimeout: s.cfg.Media.LiveStreamConnectTimeout,
		IdleTimeout: s.cfg.Media.LiveStreamIdleTimeout, Now: s.now}
	return live.New(cfg, liveDevices{s}, s.relay)
}

// liveDevices starts and stops devices' live streams (live.Device).
type liveDevices struct{ s *Server }

// Start sends the device the liveStream command with the stream's signed
// frames URL.
func (d liveDevices) Start(ctx context.Context, imei string, camera int, id string) error {
	frames, exp := d.s.signedURL(livePath(imei, id)+"/frames", liveStreamTTL)
	args := protocol.LiveStreamArgs{CameraID: camera, Start: true, URL: frames, Expires: exp.Unix()}
	_, err := d.s.commander.Send(ctx, imei, protocol.CmdLiveStream, args)
	return commandFailed("start a live stream", err)
}

// Stop tells the device to stop streaming camera.
func (d liveDevices) Stop(imei string, camera int) {
	if d.s.commander == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.s.cfg.MQTT.CommandTimeout)
	defer cancel()
	d.s.commander.Send(ctx, imei, protocol.CmdLiveStream, protocol.LiveStreamArgs{CameraID: camera})
}

func livePath(imei, id string) string { return "/v2/media/live/" + imei + "/" + id }

// mediaToken signs a viewer's access to stream id of imei until exp.
func (s *Server) mediaToken(imei, id string, exp time.Time) string {
	return strconv.FormatInt(exp.Unix(), 10) + "." + s.mediaSignature(livePath(imei, id), exp.Unix())
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
	var ttl time.Duration
	err := s.view(c, func(tx *store.Tx) error {
		var err error
		if dev, err = s.device(c, tx); err != nil {
			return err
		}
		if ttl, err = liveVideoTimeout(tx, dev); err != nil {
			return err
		}
		return s.liveVideoLocked(tx, dev.IMEI)
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
	opened, err := open(c.Request.Context(), dev.IMEI, camera, ttl)
	if err != nil {
		return err
	}
	// A settings write that committed while the stream was opening found
	// no stream to end: the settings are read once more now it runs.
	if err := s.view(c, func(tx *store.Tx) error { return s.liveVideoLocked(tx, dev.IMEI) }); err != nil {
		s.endForbiddenLive(dev.IMEI)
		return err
	}
	tok := s.mediaToken(dev.IMEI, opened.ID, opened.Expires)
	addr := s.publicURL() + livePath(dev.IMEI, opened.ID)
	return ok(c, connectMediaResponse{Address: addr, MediaToken: tok, URL: addr + "?mediaToken=" + tok, CameraID: camera,
		ExpiresAt: isoTime(opened.Expires)})
}

// liveVideoLocked says why the settings of device imei make live streaming
// impossible (423 naming the setting), or returns nil when they allow it:
// the privacy settings' liveStreamEnabled, privacy mode without its
// liveVideo, and the device configuration's liveVideo.
func (s *Server) liveVideoLocked(tx *store.Tx, imei string) error {
	eff, err := tx.EffectiveSettings(imei)
	if err != nil {
		return err
	}
	switch {
	case !eff.Privacy.LiveStreamEnabled:
		return locked("the privacy settings of device %s disable live streaming (privacy.liveStreamEnabled is false)", imei)
	case eff.InPrivacyMode() && !eff.PrivacyModeConfig.LiveVideo:
		return locked("device %s is in privacy mode, which keeps live video off (privacy-config liveVideo)", imei)
	case !eff.Device.LiveVideo:
		return locked("live video is disabled in the device configuration of %s (liveVideo is false)", imei)
	}
	return nil
}

// liveVideoTimeout is how long a live stream of dev lasts: its
// organization's liveVideoTimeoutSeconds, else liveStreamTTL.
func liveVideoTimeout(tx *store.Tx, dev *store.Device) (time.Duration, error) {
	o, err := tx.Organization(dev.OrganizationID)
	if err != nil {
		return 0, err
	}
	if o.LiveVideoTimeoutSeconds > 0 {
		return time.Duration(o.LiveVideoTimeoutSeconds) * time.Second, nil
	}
	return liveStreamTTL, nil
}

// openLive starts (or joins) the live stream of a camera of a device this
// node holds, lasting ttl, and waits for its first frame: when the device
// sends none within media.liveStreamConnectTimeout the answer is 404 and
// the caller retries.
func (s *Server) openLive(ctx context.Context, imei string, camera int, ttl time.Duration) (live.Opened, error) {
	opened, err := s.live.Open(ctx, imei, camera, ttl)
	switch {
	case errors.Is(err, live.ErrEnded):
		return opened, notFound("live stream of device " + imei + " (it ended); try again")
	case errors.Is(err, live.ErrNoFrame):
		return opened, apiErr(http.StatusNotFound, nameNotFound, "device %s did not start streaming camera %d within %s; try again",
			imei, camera, s.cfg.Media.LiveStreamConnectTimeout)
	}
	return opened, err
}

// errStreamGone is the answer to a frame of a stream that ended: the
// device stops sending at once.
var errStreamGone = apiErr(http.StatusGone, nameNotFound, "the live stream ended; stop streaming")

// liveFrame handles POST /v2/media/live/{imei}/{stream}/frames: one JPEG
// frame from the device. A stream that ended answers 410 Gone.
func (s *Server) liveFrame(c *gin.Context) error {
	if err := s.checkSignature(c); err != nil {
		return err
	}
	id, imei := c.Param("stream"), c.Param("imei")
	if !s.live.Receives(id, imei) {
		return errStreamGone
	}
	frame, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxFrameBytes))
	switch {
	case err != nil:
		return apiErr(http.StatusRequestEntityTooLarge, nameTooLarge, "a frame may be at most %d bytes", maxFrameBytes)
	case len(frame) < 4 || frame[0] != 0xff || frame[1] != 0xd8:
		return badRequest("a frame must be one JPEG image")
	}
	switch err := s.live.Frame(c.Request.Context(), id, imei, frame); {
	case errors.Is(err, live.ErrEnded):
		return errStreamGone
	case err != nil:
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
	st, leave, err := s.live.Watch(c.Request.Context(), c.Param("stream"), c.Param("imei"))
	switch {
	case errors.Is(err, live.ErrEnded):
		return notFound("live stream (it ended); call connect-media again")
	case err != nil:
		return err
	}
	defer leave()
	serveMJPEG(c, st)
	return nil
}

// serveMJPEG writes the frames of st as MJPEG until it ends or the viewer
// leaves.
func serveMJPEG(c *gin.Context, st *live.Stream) {
	const boundary = "fleetcamframe"
	w := c.Writer
	w.Header().Set("Content-Type", "multipart/x-mixed-replace; boundary="+boundary)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	for {
		frame, changed := st.Current()
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
		case <-st.Done():
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
