package cloudapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// testCommander is an in-test Commander that plays the dashcams: it records
// every command and answers like a device would, uploading media to the
// signed URLs the commands carry over real HTTP.
type testCommander struct {
	t      testing.TB
	client *http.Client

	mu      sync.Mutex
	devices map[string]*fakeDevice
	sent    []sentCommand
	pushed  []string
	clips   int
	wg      sync.WaitGroup
	// sentSignal is signalled whenever a command is recorded.
	sentSignal chan struct{}
}

// fakeDevice is one simulated dashcam.
type fakeDevice struct {
	online bool
	// recordings per camera: [start, end] unix seconds.
	recordings map[int][][2]int64
	// holdUploads accepts upload requests without uploading.
	holdUploads bool
	// refuseUploads answers upload requests with ok false.
	refuseUploads bool
	// silentStream accepts a live stream but never sends a frame.
	silentStream bool
	stopStream   chan struct{}
}

type sentCommand struct {
	imei, name string
	args       json.RawMessage
}

func newTestCommander(t testing.TB) *testCommander {
	c := &testCommander{t: t, client: &http.Client{Timeout: 10 * time.Second}, devices: map[string]*fakeDevice{},
		sentSignal: make(chan struct{}, 1)}
	t.Cleanup(func() {
		c.mu.Lock()
		for _, d := range c.devices {
			if d.stopStream != nil {
				close(d.stopStream)
				d.stopStream = nil
			}
		}
		c.mu.Unlock()
		c.wg.Wait()
	})
	return c
}

// device returns the simulated device of imei, creating it online.
func (c *testCommander) device(imei string) *fakeDevice {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.devices[imei]
	if d == nil {
		d = &fakeDevice{online: true, recordings: map[int][][2]int64{}}
		c.devices[imei] = d
	}
	return d
}

func (c *testCommander) set(imei string, fn func(d *fakeDevice)) {
	d := c.device(imei)
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(d)
}

// signalSent wakes a waitCommands; c.mu is held.
func (c *testCommander) signalSent() {
	select {
	case c.sentSignal <- struct{}{}:
	default:
	}
}

// waitCommands waits up to five seconds until n commands of name were sent
// and returns them.
func (c *testCommander) waitCommands(name string, n int) []sentCommand {
	c.t.Helper()
	timeout := time.NewTimer(2 * time.Minute)
	defer timeout.Stop()
	for {
		if cmds := c.commands(name); len(cmds) >= n {
			return cmds
		}
		select {
		case <-c.sentSignal:
		case <-timeout.C:
			c.t.Fatalf("timed out waiting for %d %s commands: %v", n, name, c.commands(name))
		}
	}
}

// commands returns the commands of name sent so far.
func (c *testCommander) commands(name string) []sentCommand {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []sentCommand
	for _, s := range c.sent {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

func (c *testCommander) Online(imei string) bool {
	d := c.device(imei)
	c.mu.Lock()
	defer c.mu.Unlock()
	return d.online
}

// Disconnect takes the device offline, as the broker ends its connection.
func (c *testCommander) Disconnect(imei string) {
	d := c.device(imei)
	c.mu.Lock()
	defer c.mu.Unlock()
	d.online = false
}

// Enqueue records the command once the caller's transaction commits.
func (c *testCommander) Enqueue(tx *store.Tx, imei, name string, args any) error {
	raw, _ := json.Marshal(args)
	tx.OnCommit(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.sent = append(c.sent, sentCommand{imei: imei, name: name, args: raw})
		c.signalSent()
	})
	return nil
}

func (c *testCommander) PushConfig(imei string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pushed = append(c.pushed, imei)
}

// Send answers a command as the device would.
func (c *testCommander) Send(ctx context.Context, imei, name string, args any) (json.RawMessage, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	d := c.device(imei)
	c.mu.Lock()
	c.sent = append(c.sent, sentCommand{imei: imei, name: name, args: raw})
	c.signalSent()
	online, hold, refuse, silent := d.online, d.holdUploads, d.refuseUploads, d.silentStream
	c.mu.Unlock()
	if !online {
		return nil, fmt.Errorf("test device %s: %w", imei, ErrDeviceOffline)
	}
	switch name {
	case protocol.CmdUploadMedia:
		var a protocol.UploadArgs
		json.Unmarshal(raw, &a)
		if refuse {
			return nil, fmt.Errorf("file %s is no longer on the SD card", a.FileID)
		}
		if !hold {
			c.upload(a.URL, mediaBytes(imei, a.CameraID, a.FileType, a.FileID, 0), a.FileType)
		}
		return nil, nil
	case protocol.CmdClip:
		var a protocol.ClipArgs
		json.Unmarshal(raw, &a)
		if !c.recorded(d, a.CameraID, a.Time) {
			return json.Marshal(protocol.ClipResult{Available: false})
		}
		c.mu.Lock()
		c.clips++
		n := c.clips
		c.mu.Unlock()
		c.upload(a.URL, mediaBytes(imei, a.CameraID, a.MediaType, a.FileID, n), a.MediaType)
		return json.Marshal(protocol.ClipResult{Available: true})
	case protocol.CmdRecordingRanges:
		c.mu.Lock()
		defer c.mu.Unlock()
		var rr protocol.RecordingRanges
		for _, cam := range []int{1, 2} {
			rr.Cameras = append(rr.Cameras, protocol.CameraRanges{CameraID: cam, Ranges: d.recordings[cam]})
		}
		return json.Marshal(rr)
	case protocol.CmdLiveStream:
		var a protocol.LiveStreamArgs
		json.Unmarshal(raw, &a)
		c.mu.Lock()
		defer c.mu.Unlock()
		if d.stopStream != nil {
			close(d.stopStream)
			d.stopStream = nil
		}
		if a.Start && !silent {
			d.stopStream = make(chan struct{})
			c.wg.Add(1)
			go c.stream(a.URL, d.stopStream)
		}
		return nil, nil
	case protocol.CmdAdasImages:
		var a protocol.AdasImagesArgs
		json.Unmarshal(raw, &a)
		var res protocol.AdasImagesResult
		for i, u := range a.URLs {
			c.upload(u, testJPEG(fmt.Sprintf("adas %s %d", a.CalibrationType, i)), store.FileSnapshot)
			res.Files = append(res.Files, protocol.File{CameraID: 1, FileID: fmt.Sprint(i), FileType: "adas"})
		}
		return json.Marshal(res)
	case protocol.CmdAdasDeleteImages:
		return nil, nil
	}
	return nil, fmt.Errorf("test device: unknown command %s", name)
}

func (c *testCommander) recorded(d *fakeDevice, camera int, at int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range d.recordings[camera] {
		if at >= r[0] && at <= r[1] {
			return true
		}
	}
	return false
}

// upload PUTs body to a signed upload URL and fails the test unless it is stored.
func (c *testCommander) upload(url string, body []byte, fileType string) {
	req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", defaultContentType(fileType))
	res, err := c.client.Do(req)
	if err != nil {
		c.t.Errorf("device upload: %v", err)
		return
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		c.t.Errorf("device upload to %s: status %d", url, res.StatusCode)
	}
}

// stream POSTs frames to url until stopped or told the stream ended.
func (c *testCommander) stream(url string, stop chan struct{}) {
	defer c.wg.Done()
	for i := 0; ; i++ {
		res, err := c.client.Post(url, "image/jpeg", bytes.NewReader(testJPEG(fmt.Sprint("frame ", i))))
		if err != nil {
			return
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// mediaBytes is what a test device uploads for a file: a JPEG for
// snapshots, the start of an MP4 with a marked byte string for videos. n tells clip requests apart.
func mediaBytes(imei string, camera int, fileType, fileID string, n int) []byte {
	label := fmt.Sprintf("%s cam %d %s %s #%d", imei, camera, fileType, fileID, n)
	if fileType == store.FileVideo {
		return testMP4(label)
	}
	return testJPEG(label)
}

// testMP4 is an MP4 file type box followed by label: what the upload
// check of videos looks at, not a playable video.
func testMP4(label string) []byte {
	return append([]byte("\x00\x00\x00\x10ftypisom\x00\x00\x02\x00"), "video:"+label...)
}

// testJPEG draws a small real JPEG; the label goes into a comment-like tail
// so tests can tell images apart.
func testJPEG(label string) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for i := range img.Pix {
		img.Pix[i] = byte(len(label) + i)
	}
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	jpeg.Encode(&buf, img, nil)
	out := buf.Bytes()
	// A JPEG ends at its EOI marker; bytes after it are ignored by decoders.
	return append(out, []byte("\n"+label)...)
}

// mediaEnv is the API with a simulated fleet: one organization of the
// first partner with two devices, and a second partner's device in it too.
type mediaEnv struct {
	*testEnv
	cmd     *testCommander
	org     *store.Organization
	dev     *store.Device
	dev2    *store.Device
	foreign *store.Device
	// otherToken belongs to a partner with no devices in the organization.
	otherToken   string
	foreignToken string
}

// evIMEI returns the n-th test IMEI of these tests.
func evIMEI(n int) string {
	body := fmt.Sprintf("35900100%06d", n)
	for d := 0; d <= 9; d++ {
		if s := body + fmt.Sprint(d); store.ValidIMEI(s) {
			return s
		}
	}
	panic("no check digit")
}

func newMediaEnv(t *testing.T, opts ...envOption) *mediaEnv {
	t.Helper()
	cmd := newTestCommander(t)
	opts = append([]envOption{func(c *configs.Config, d *Deps) {
		d.Commander = cmd
		c.Media.LiveStreamConnectTimeout = 500 * time.Millisecond
	}}, opts...)
	m := &mediaEnv{testEnv: newEnv(t, opts...), cmd: cmd}
	foreignPartner := m.addPartner("Foreign", "foreign@example.com", "Secret123")
	m.addPartner("Other", "other@example.com", "Secret123")
	err := m.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		var err error
		if m.org, err = tx.CreateOrganization(m.partnerID, "Fleet", []byte("salt")); err != nil {
			return err
		}
		m.org.PartnerIDs, m.org.ExclusivePartnerOnly = append(m.org.PartnerIDs, foreignPartner), false
		if err := tx.UpdateOrganization(m.org); err != nil {
			return err
		}
		for i, d := range []**store.Device{&m.dev, &m.dev2, &m.foreign} {
			owner := m.partnerID
			if i == 2 {
				owner = foreignPartner
			}
			*d = &store.Device{IMEI: evIMEI(i + 1), Name: fmt.Sprintf("Truck %d", i+1), OrganizationID: m.org.ID, PartnerID: owner}
			if err := tx.AddDevice(*d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m.foreignToken = m.login("foreign@example.com", "Secret123")
	m.otherToken = m.login("other@example.com", "Secret123")
	return m
}

// report stores a device event as the broker ingests it, waking the media
// service after the commit as fleetcam does, and returns the stored event
// id (0 when dropped).
func (m *mediaEnv) report(dev *store.Device, ev protocol.Event) int64 {
	m.t.Helper()
	err := m.db.Update(m.t.Context(), store.Actor{Source: "device"}, func(tx *store.Tx) error {
		tx.OnCommit(m.api.WakeMedia)
		return broker.IngestEvent(tx, dev, ev)
	})
	if err != nil {
		m.t.Fatal(err)
	}
	var id int64
	m.db.View(m.t.Context(), func(tx *store.Tx) error {
		events, _, err := tx.DeviceEvents(dev.IMEI, time.UnixMilli(ev.Time), time.UnixMilli(ev.Time), store.Page{})
		for _, e := range events {
			if e.DeviceEventID == ev.ID {
				id = e.ID
			}
		}
		return err
	})
	return id
}

// sweep runs the media service once.
func (m *mediaEnv) sweep() { m.api.SweepMedia(context.Background()) }

// messages returns the outbox messages of kind.
func (m *mediaEnv) messages(kind string) []store.Message {
	m.t.Helper()
	all := allMessages(m.t, m.db)
	var out []store.Message
	for _, msg := range all {
		if msg.Kind == kind {
			out = append(out, msg)
		}
	}
	return out
}

// fetch GETs an absolute URL without a token.
func (m *mediaEnv) fetch(url string) (int, []byte, http.Header) {
	m.t.Helper()
	res, err := m.srv.Client().Get(url)
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(res.Body)
	return res.StatusCode, buf.Bytes(), res.Header
}

func devPath(imei, rest string) string { return "/v2/devices/" + imei + rest }

func blobFiles(t *testing.T, dataDir string) []string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dataDir, "media", "*", "*", "*", "*", "*"))
	var out []string
	for _, m := range matches {
		if !strings.Contains(filepath.Base(m), ".upload-") {
			out = append(out, m)
		}
	}
	return out
}
