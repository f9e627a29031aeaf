package devicesim

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// work handles what the broker sends, in arrival order, for the whole life
// of Run. Slow work (uploads, streams) runs in its own goroutines.
// Messages can arrive while the connection is still being set up (a
// persistent session's queue, the configuration pushed on connect), so
// each waits until the device has its connection to answer on.
func (d *Device) work(ctx context.Context) {
	for {
		m, ok := d.inbox.pop(ctx)
		if !ok || !d.awaitLink(ctx) {
			return
		}
		d.handle(ctx, m)
	}
}

// awaitLink waits until the device is connected; false when ctx ended.
func (d *Device) awaitLink(ctx context.Context) bool {
	d.mu.Lock()
	up := d.up
	d.mu.Unlock()
	select {
	case <-up:
		return true
	case <-ctx.Done():
		return false
	}
}

// handle dispatches one inbound message by topic.
func (d *Device) handle(ctx context.Context, m inbound) {
	d.stats.received.Add(1)
	d.mu.Lock()
	d.bytesDown += int64(len(m.Payload))
	d.mu.Unlock()
	imei, suffix, ok := protocol.SplitTopic(m.Topic)
	if !ok || imei != d.o.IMEI {
		d.log.Warn("message on a foreign topic", "topic", m.Topic)
		return
	}
	var err error
	switch suffix {
	case protocol.TopicToken:
		err = d.onToken(m.Payload)
	case protocol.TopicConfig:
		err = d.onConfig(ctx, m.Payload)
	case protocol.TopicCommand:
		err = d.onCommand(ctx, m)
	default:
		err = fmt.Errorf("devicesim: no handler for topic %s", suffix)
	}
	if err != nil {
		d.setErr(err)
		d.log.Debug("handle", "topic", suffix, "err", err)
	}
}

// onToken stores a granted token; it is the password from the next connection on.
func (d *Device) onToken(raw []byte) error {
	var g protocol.TokenGrant
	if err := json.Unmarshal(raw, &g); err != nil {
		return fmt.Errorf("devicesim: token grant is not valid JSON: %w", err)
	}
	if g.Token == "" {
		return fmt.Errorf("devicesim: token grant has an empty token")
	}
	if d.legacy {
		return fmt.Errorf("devicesim: legacy firmware %s ignores token grants", d.o.Firmware)
	}
	d.mu.Lock()
	d.st.Token, d.st.TokenIssuedAt = g.Token, g.IssuedAt
	d.persistLocked()
	d.mu.Unlock()
	d.stats.grants.Add(1)
	signal(d.granted)
	return nil
}

// onConfig applies a desired configuration that is not older than the
// applied one and acknowledges the version it received with what it applied.
func (d *Device) onConfig(ctx context.Context, raw []byte) error {
	var c protocol.DesiredConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("devicesim: desired config is not valid JSON: %w", err)
	}
	if err := c.Control.Validate(); err != nil {
		// Not applied and not acknowledged: the cloud keeps sending it.
		return fmt.Errorf("devicesim: desired config %d refused: %w", c.Version, err)
	}
	d.mu.Lock()
	hotspotBefore := d.st.HotspotOn
	if d.st.Config == nil || c.Version >= d.st.Config.Version {
		d.applyLocked(&c)
	}
	reported, err := json.Marshal(d.st.Config)
	hotspotChanged := hotspotBefore != d.st.HotspotOn
	d.mu.Unlock()
	d.applyRecording()
	if err != nil {
		return fmt.Errorf("devicesim: encode reported config: %w", err)
	}
	if err := d.publishNow(ctx, protocol.TopicConfigAck, protocol.ConfigAck{Version: c.Version, Reported: reported}); err != nil {
		return err // the broker sends the configuration again on the next connection
	}
	d.stats.configAcks.Add(1)
	if hotspotChanged {
		return d.publishStatus(ctx)
	}
	return nil
}

// applyLocked makes c the device's configuration; the caller holds d.mu.
func (d *Device) applyLocked(c *protocol.DesiredConfig) {
	c = cloneConfig(c)
	if c.Privacy.Mode != "" {
		d.privacyMode = c.Privacy.Mode
	}
	c.Privacy.Mode = d.privacyMode
	d.st.HotspotOn = c.Device.HotspotOn
	if c.Device.HotspotPassword != "" {
		d.st.HotspotPassword = c.Device.HotspotPassword
	}
	c.Device.HotspotPassword = d.st.HotspotPassword
	fences := map[int64]bool{}
	for _, g := range c.Geofences {
		if inside, ok := d.fences[g.ID]; ok {
			fences[g.ID] = inside
		}
	}
	d.fences = fences
	d.st.Config = c
	d.persistLocked()
}

// cameraRecords reports whether camera cam records under the applied
// configuration and privacy mode.
func (d *Device) cameraRecords(cam int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cameraRecordsLocked(cam)
}

// cameraRecordsLocked is cameraRecords; the caller holds d.mu. Recording
// stops with privacy.recordingEnabled false or the camera's
// privacy.cameraRecording false (privacy.cameras blocks only a camera's
// event media); while privacy mode is on, a camera records only when the
// mode's configuration keeps its lens on (cabinLensVideo for the in-cabin
// camera, roadAndAuxLensVideo for the others; none without a modeConfig).
func (d *Device) cameraRecordsLocked(cam int) bool {
	c := d.st.Config
	if c != nil {
		if !c.Privacy.RecordingEnabled {
			return false
		}
		if on, ok := c.Privacy.CameraRecording[cam]; ok && !on {
			return false
		}
	}
	if d.privacyMode != "on" {
		return true
	}
	var keep protocol.PrivacyModeConfig
	if c != nil && c.Privacy.ModeConfig != nil {
		keep = *c.Privacy.ModeConfig
	}
	if cam == 2 {
		return keep.CabinLensVideo
	}
	return keep.RoadAndAuxLensVideo
}

// cameraMedia reports whether the applied privacy.cameras lets camera
// cam's media out with events.
func (d *Device) cameraMedia(cam int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.st.Config; c != nil {
		if on, ok := c.Privacy.Cameras[cam]; ok && !on {
			return false
		}
	}
	return true
}

// sendsGPS reports whether the applied configuration lets the device send
// GPS: privacy.gpsEnabled, and while privacy mode is on, the mode's
// gpsTracking.
func (d *Device) sendsGPS() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.st.Config
	if c != nil && !c.Privacy.GPSEnabled {
		return false
	}
	if d.privacyMode != "on" {
		return true
	}
	return c != nil && c.Privacy.ModeConfig != nil && c.Privacy.ModeConfig.GPSTracking
}

// applyRecording starts or stops each camera's recording to match the configuration.
func (d *Device) applyRecording() { d.applyRecordingAt(d.now()) }

// applyRecordingAt starts or stops each camera's recording at t.
func (d *Device) applyRecordingAt(t time.Time) {
	for _, cam := range d.rec.cameras() {
		if d.cameraRecords(cam) {
			d.rec.start(cam, t)
		} else {
			d.rec.stop(cam, t)
		}
	}
}
