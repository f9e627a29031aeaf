package devicesim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"net/http"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/devicesim/mp4"
)

// Media content types. A video is an H.264 MP4 file, as real dashcams
// upload, written by package mp4 (see there why with our own writer); a
// snapshot is a JPEG.
const (
	ContentTypeJPEG = "image/jpeg"
	ContentTypeMP4  = mp4.ContentType
)

// eventClip is the length of the video an event records.
const eventClip = 10 * time.Second

// maxVideoWidth bounds the width of video frames: the H.264 stream stores
// its samples uncompressed (about 90 KB a 320x180 frame), so videos are
// drawn at most this wide, keeping the snapshot's aspect ratio.
const maxVideoWidth = 320

// frame draws camera cam at time t as a JPEG.
func (d *Device) frame(cam int, t time.Time) ([]byte, error) {
	pos := d.Position(t)
	return Frame(FrameInfo{Time: t, IMEI: d.o.IMEI, CameraID: cam, SpeedKmh: pos.Speed,
		Width: d.o.FrameWidth, Height: d.o.FrameHeight})
}

// render produces the bytes of f: one frame at f.Time for a snapshot, or
// an MP4 of the frames of f.Duration centred on f.Time for a video.
func (d *Device) render(f fileInfo) ([]byte, string, error) {
	if f.FileType == "snapshot" {
		b, err := d.frame(f.CameraID, f.Time)
		return b, ContentTypeJPEG, err
	}
	dur := f.Duration
	if dur <= 0 {
		dur = eventClip
	}
	n := max(1, int(dur.Seconds()*float64(d.o.VideoFPS)))
	step := dur / time.Duration(n)
	from := f.Time.Add(-dur / 2)
	w, h := d.o.FrameWidth, d.o.FrameHeight
	if w > maxVideoWidth {
		w, h = maxVideoWidth, max(2, h*maxVideoWidth/w)
	}
	frames := make([]image.Image, n)
	for i := range frames {
		t := from.Add(time.Duration(i) * step)
		frames[i] = DrawFrame(FrameInfo{Time: t, IMEI: d.o.IMEI, CameraID: f.CameraID, SpeedKmh: d.Position(t).Speed, Width: w, Height: h})
	}
	b, err := mp4.Encode(frames, step)
	if err != nil {
		return nil, "", fmt.Errorf("devicesim: encode video: %w", err)
	}
	return b, ContentTypeMP4, nil
}

// put uploads body to a signed URL with HTTP PUT.
func (d *Device) put(ctx context.Context, url, ctype string, body []byte) error {
	return d.httpSend(ctx, http.MethodPut, url, ctype, body)
}

// httpSend sends body with method and expects a 2xx answer.
func (d *Device) httpSend(ctx context.Context, method, url, ctype string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		d.stats.uploadErrors.Add(1)
		return fmt.Errorf("devicesim: upload url: %w", err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("X-Device-IMEI", d.o.IMEI)
	resp, err := d.http.Do(req)
	if err != nil && ctx.Err() != nil {
		return errStopping // a stopped stream or device, not a failed upload
	}
	if err != nil {
		d.stats.uploadErrors.Add(1)
		return fmt.Errorf("devicesim: %s %s: %w", method, redact(url), err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusGone {
		return fmt.Errorf("devicesim: %s %s: %w", method, redact(url), errGone)
	}
	if resp.StatusCode/100 != 2 {
		d.stats.uploadErrors.Add(1)
		return fmt.Errorf("devicesim: %s %s: status %d", method, redact(url), resp.StatusCode)
	}
	d.stats.uploads.Add(1)
	d.stats.uploadBytes.Add(int64(len(body)))
	d.mu.Lock()
	d.bytesUp += int64(len(body))
	d.mu.Unlock()
	return nil
}

// redact drops the query (the signature) of a signed URL for error messages.
func redact(u string) string {
	for i := 0; i < len(u); i++ {
		if u[i] == '?' {
			return u[:i] + "?…"
		}
	}
	return u
}

// liveStream starts or stops POSTing live frames of one camera.
func (d *Device) liveStream(ctx context.Context, a protocol.LiveStreamArgs) error {
	if a.CameraID == 0 {
		a.CameraID = 1
	}
	if !a.Start {
		d.mu.Lock()
		s := d.live[a.CameraID]
		delete(d.live, a.CameraID)
		d.mu.Unlock()
		if s != nil {
			s.cancel()
		}
		return nil
	}
	if a.URL == "" {
		return errors.New("liveStream: url is required to start")
	}
	if a.Expires > 0 && d.now().Unix() > a.Expires {
		return fmt.Errorf("liveStream: url expired at %d", a.Expires)
	}
	d.mu.Lock()
	if c := d.st.Config; c != nil && (!c.Privacy.LiveStreamEnabled || !c.Device.LiveVideo) {
		d.mu.Unlock()
		return errors.New("liveStream: live video is disabled by the device configuration or privacy")
	}
	if !d.cameraRecordsLocked(a.CameraID) {
		d.mu.Unlock()
		return fmt.Errorf("liveStream: camera %d is blocked by privacy", a.CameraID)
	}
	deadline := time.Now().Add(24 * time.Hour)
	if a.Expires > 0 {
		deadline = time.Unix(a.Expires, 0)
	}
	sctx, cancel := context.WithDeadline(ctx, deadline)
	s := &stream{cancel: cancel}
	if old := d.live[a.CameraID]; old != nil {
		old.cancel()
	}
	d.live[a.CameraID] = s
	d.mu.Unlock()
	go func() {
		d.streamFrames(sctx, a.CameraID, a.URL)
		cancel()
		d.mu.Lock()
		if d.live[a.CameraID] == s {
			delete(d.live, a.CameraID)
		}
		d.mu.Unlock()
	}()
	return nil
}

// stream is one running live stream.
type stream struct{ cancel context.CancelFunc }

// errGone is the 410 answer of a receiver that no longer wants the bytes:
// a live stream the cloud ended, e.g. because nobody watches it.
var errGone = errors.New("status 410: the receiver ended")

// streamFrames POSTs one JPEG per frame interval until ctx ends, the
// receiver answers 410 Gone (the stream ended), or it fails five times in
// a row.
func (d *Device) streamFrames(ctx context.Context, cam int, url string) {
	t := time.NewTicker(time.Second / time.Duration(d.o.LiveFPS))
	defer t.Stop()
	failures := 0
	for {
		jpg, err := d.frame(cam, d.now())
		if err == nil {
			err = d.httpSend(ctx, http.MethodPost, url, ContentTypeJPEG, jpg)
		}
		if ctx.Err() != nil || errors.Is(err, errGone) {
			return
		}
		if err != nil {
			failures++
			if failures >= 5 {
				d.setErr(fmt.Errorf("devicesim: live stream of camera %d stopped: %w", cam, err))
				return
			}
		} else {
			failures = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// stopLiveStreams ends every live stream.
func (d *Device) stopLiveStreams() {
	d.mu.Lock()
	live := d.live
	d.live = map[int]*stream{}
	d.mu.Unlock()
	for _, s := range live {
		s.cancel()
	}
}

// LiveStreams returns the cameras streaming now.
func (d *Device) LiveStreams() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]int, 0, len(d.live))
	for c := range d.live {
		out = append(out, c)
	}
	return out
}
