// Package devicesim simulates fleetcam dashcams. A Device speaks only the
// wire contract of broker/protocol over MQTT (5 or 3.1.1): it bootstraps
// with its factory key, keeps the secret token it is granted, applies and
// acknowledges its configuration, answers commands, publishes GPS along a
// route and driving events with real JPEG media, and can go offline, reboot
// or be factory reset. A Fleet runs thousands of them in one process.
package devicesim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// Sentinel errors. Callers test them with errors.Is.
var (
	// ErrInvalidIMEI means an IMEI or IMEI range breaks the 15-digit Luhn rule.
	ErrInvalidIMEI = errors.New("devicesim: invalid imei")
	// ErrInvalidOptions means a device or fleet option is out of range.
	ErrInvalidOptions = errors.New("devicesim: invalid options")
	// ErrOffline means the device has no broker connection right now.
	ErrOffline = errors.New("devicesim: device offline")
	// ErrRefused means the broker refused the connection (CONNACK reason code).
	ErrRefused = errors.New("devicesim: connection refused")
	// ErrSuppressed means the device configuration disables the event.
	ErrSuppressed = errors.New("devicesim: event suppressed by device configuration")
	// ErrUnknownEvent means the event type is not an API-syntax event type.
	ErrUnknownEvent = errors.New("devicesim: unknown event type")
	// ErrInvalidRoute means a route or GPX file cannot be driven.
	ErrInvalidRoute = errors.New("devicesim: invalid route")
	// ErrInvalidScenario means a scenario file breaks a rule.
	ErrInvalidScenario = errors.New("devicesim: invalid scenario")
	// ErrNoSDCard means a command needs the SD card and the device reports none.
	ErrNoSDCard = errors.New("devicesim: no SD card")
	// ErrUnknownCamera means no camera with that id is paired with the device.
	ErrUnknownCamera = errors.New("devicesim: unknown camera")
)

// Defaults of Options.
const (
	DefaultFirmware       = "3.12.4"
	DefaultProductType    = "AI-12"
	DefaultReceiveMaximum = 8
	// DefaultHotspotPassword is the fixed hotspot password a device falls back to after a factory reset.
	DefaultHotspotPassword = "FleetcamHotspot00000"
)

// Options configure one simulated dashcam. Zero values take the defaults noted.
type Options struct {
	// IMEI is the ClientID and username; it must be a valid 15-digit IMEI.
	IMEI string
	// BrokerURL is tcp://, mqtt://, tls://, ssl:// or mqtts:// host:port.
	BrokerURL string
	// FactoryMasterKey is the fleet's factory master secret (raw bytes, the
	// hex-decoded configs Devices.FactoryMasterKey); the device's factory key
	// is protocol.FactoryKey(FactoryMasterKey, IMEI).
	FactoryMasterKey []byte
	// StateDir keeps one small file per IMEI (token, applied config, SD card,
	// hotspot), mode 0600. Empty: state lives in memory only.
	StateDir string
	// Firmware is the firmware version; below 3.12 the device connects in
	// legacy mode (password "legacy:<firmware>") and never bootstraps. Default DefaultFirmware.
	Firmware string
	// ProductType is reported in the status; default "AI-12".
	ProductType string
	// MQTTVersion is 5 (default) or 4 (MQTT 3.1.1).
	MQTTVersion int
	// CleanSession asks for a clean session; the default is a persistent
	// session (clean start false) with SessionExpiry.
	CleanSession bool
	// SessionExpiry is the MQTT 5 session expiry of a persistent session; default 1h.
	SessionExpiry time.Duration
	// KeepAlive is the MQTT keep-alive; default 60s.
	KeepAlive time.Duration
	// ReceiveMaximum bounds QoS 1 messages the broker may have in flight to
	// the device (MQTT 5); it also sizes the client's receive queue. Default 8.
	ReceiveMaximum uint16
	// ConnectTimeout bounds dial, CONNECT and SUBSCRIBE; default 10s.
	ConnectTimeout time.Duration
	// ReconnectDelay is the first back-off after a failed connection; it
	// doubles up to 30s, with jitter. Default 1s.
	ReconnectDelay time.Duration
	// RebootDelay is how long a reboot keeps the device off the network; default 2s.
	RebootDelay time.Duration
	// GrantTimeout bounds the wait for the TokenGrant after a bootstrap; default 30s.
	GrantTimeout time.Duration
	// PublishTimeout bounds the wait for one PUBACK; default 10s.
	PublishTimeout time.Duration

	// Route is driven in a loop; nil: the built-in city loop.
	Route *Route
	// RouteOffset is where on the route the device starts; negative: derived from the IMEI.
	RouteOffset time.Duration
	// GPSInterval is the time between fixes; 0: no GPS.
	GPSInterval time.Duration
	// GPSBatch is the number of fixes per GPSBatch message; 0: one batch per second.
	GPSBatch int
	// EventRate is the mean number of random driving events per second; 0: none.
	EventRate float64
	// Scenario is a scripted timeline run once from the first Run.
	Scenario *Scenario
	// RecordingHistory is how much recording the SD card holds when the device starts; default 1h.
	RecordingHistory time.Duration
	// FrameWidth and FrameHeight size snapshots and video frames (videos
	// at most 320 wide, same aspect); default 640x360.
	FrameWidth, FrameHeight int
	// VideoFPS is the frame rate of uploaded videos (H.264 MP4); default 2.
	VideoFPS int
	// LiveFPS is the frame rate of a live stream; default 2.
	LiveFPS int
	// IgnoreEventConfig publishes events even when the applied configuration
	// disables them, to exercise the cloud's own filtering.
	IgnoreEventConfig bool
	// Health is the set of faults the device reports from the start (SetHealth changes it).
	Health Health
	// OutboxLimit bounds messages kept while offline (GPS, events, media
	// notices); the oldest are dropped beyond it. Default 10000.
	OutboxLimit int

	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Logger receives per-device diagnostics; discarded when nil.
	Logger *slog.Logger
	// Stats collects counters shared by a fleet; a private one when nil.
	Stats *Stats
	// HTTPClient uploads media; a client with a 60s timeout when nil.
	HTTPClient *http.Client
	// OnAck is called after every acknowledged publish (load mode logs them).
	OnAck func(Ack)
}

// Ack describes one publish the broker acknowledged.
type Ack struct {
	IMEI    string
	Topic   string        // the topic suffix, e.g. "up/gps"
	Key     string        // event id, or the first GPS sample time in unix ms
	Latency time.Duration // PUBLISH to PUBACK
	At      time.Time
}

// Device is one simulated dashcam. Its methods are safe for concurrent use;
// Run drives it until its context ends.
type Device struct {
	o       Options
	now     func() time.Time
	log     *slog.Logger
	stats   *Stats
	http    *http.Client
	factory []byte
	legacy  bool

	inbox    *queue
	granted  chan struct{}
	wake     chan struct{}
	running  atomic.Bool
	everUp   atomic.Bool
	eventSeq atomic.Int64

	mu           sync.Mutex
	epoch        string
	link         link
	up           chan struct{} // closed while link is set
	offlineUntil time.Time
	lastErr      error
	st           persisted
	privacyMode  string
	health       Health
	driver       *driverState
	wrongPins    []time.Time
	rec          *recorder
	files        map[string]fileInfo
	fileOrder    []string
	adasFiles    []protocol.File
	adasDone     bool
	control      controlState
	live         map[int]*stream
	fences       map[int64]bool
	outbox       []pending
	outSeq       uint64
	flushing     bool
	bytesUp      int64
	bytesDown    int64
	usageStart   int64
	started      time.Time
	rng          *rand.Rand
}

// driverState is the driver checked in at the device.
type driverState struct {
	DriverID int64
	PinCode  string
	QRCode   string
}

// fileInfo is a camera file the device can upload on request.
type fileInfo struct {
	Time     time.Time
	CameraID int
	FileType string
	Duration time.Duration
}

// New validates o and returns a device that has not connected yet. The
// device's state file, if any, is read here.
func New(o Options) (*Device, error) {
	if !ValidIMEI(o.IMEI) {
		return nil, fmt.Errorf("devicesim: imei %q must be 15 digits with a valid check digit: %w", o.IMEI, ErrInvalidIMEI)
	}
	if o.BrokerURL == "" {
		o.BrokerURL = "tcp://127.0.0.1:1883"
	}
	if _, err := parseBrokerURL(o.BrokerURL); err != nil {
		return nil, err
	}
	if o.Firmware == "" {
		o.Firmware = DefaultFirmware
	}
	if o.ProductType == "" {
		o.ProductType = DefaultProductType
	}
	switch o.MQTTVersion {
	case 0:
		o.MQTTVersion = 5
	case 4, 5:
	default:
		return nil, fmt.Errorf("devicesim: mqttVersion %d must be 5 or 4 (3.1.1): %w", o.MQTTVersion, ErrInvalidOptions)
	}
	legacy := protocol.FirmwareBelow(o.Firmware, protocol.MinTokenFirmware)
	if !legacy && len(o.FactoryMasterKey) == 0 {
		return nil, fmt.Errorf("devicesim: factoryMasterKey is required for firmware %s (3.12 and later bootstrap with it): %w", o.Firmware, ErrInvalidOptions)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.SessionExpiry, time.Hour)
	def(&o.KeepAlive, 60*time.Second)
	def(&o.ConnectTimeout, 10*time.Second)
	def(&o.ReconnectDelay, time.Second)
	def(&o.RebootDelay, 2*time.Second)
	def(&o.GrantTimeout, 30*time.Second)
	def(&o.PublishTimeout, 10*time.Second)
	def(&o.RecordingHistory, time.Hour)
	if o.KeepAlive > 65535*time.Second {
		return nil, fmt.Errorf("devicesim: keepAlive %s must be at most 65535s: %w", o.KeepAlive, ErrInvalidOptions)
	}
	if o.ReceiveMaximum == 0 {
		o.ReceiveMaximum = DefaultReceiveMaximum
	}
	if o.GPSInterval < 0 || o.GPSBatch < 0 || o.EventRate < 0 {
		return nil, fmt.Errorf("devicesim: gpsInterval, gpsBatch and eventRate must not be negative: %w", ErrInvalidOptions)
	}
	if o.FrameWidth == 0 && o.FrameHeight == 0 {
		o.FrameWidth, o.FrameHeight = 640, 360
	}
	if o.FrameWidth < 64 || o.FrameHeight < 48 || o.FrameWidth > 4096 || o.FrameHeight > 4096 {
		return nil, fmt.Errorf("devicesim: frame size %dx%d must be from 64x48 to 4096x4096: %w", o.FrameWidth, o.FrameHeight, ErrInvalidOptions)
	}
	if o.VideoFPS <= 0 {
		o.VideoFPS = 2
	}
	if o.LiveFPS <= 0 {
		o.LiveFPS = 2
	}
	if o.OutboxLimit <= 0 {
		o.OutboxLimit = 10000
	}
	if o.Route == nil {
		o.Route = CityLoop()
	}
	h := fnv.New64a()
	h.Write([]byte(o.IMEI))
	seed := h.Sum64()
	if o.RouteOffset < 0 {
		o.RouteOffset = time.Duration(seed % uint64(o.Route.Duration()))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Stats == nil {
		o.Stats = NewStats()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	}
	d := &Device{
		o:       o,
		now:     o.Now,
		log:     o.Logger.With("imei", o.IMEI),
		stats:   o.Stats,
		http:    o.HTTPClient,
		legacy:  legacy,
		inbox:   newQueue(),
		granted: make(chan struct{}, 1),
		up:      make(chan struct{}),
		wake:    make(chan struct{}, 1),
		files:   map[string]fileInfo{},
		live:    map[int]*stream{},
		fences:  map[int64]bool{},
		health:  o.Health,
		rng:     rand.New(rand.NewPCG(seed, seed>>1|1)),
	}
	if !legacy {
		d.factory = protocol.FactoryKey(o.FactoryMasterKey, o.IMEI)
	}
	now := d.now()
	d.epoch = strconv.FormatInt(now.UnixNano(), 36)
	d.usageStart = now.Unix()
	st, err := loadState(o.StateDir, o.IMEI)
	if err != nil {
		return nil, err
	}
	if st.SDCard.UUID == "" {
		st.SDCard = protocol.SDCard{Present: true, Healthy: true, UUID: uuidFrom(seed, 0), Manufacturer: sdMakers[seed%uint64(len(sdMakers))]}
	}
	if st.HotspotPassword == "" {
		st.HotspotPassword = DefaultHotspotPassword
	}
	d.st = st
	if st.Config != nil {
		d.privacyMode = st.Config.Privacy.Mode
	}
	d.rec = newRecorder([]int{1, 2}, now.Add(-o.RecordingHistory))
	return d, nil
}

// IMEI returns the device's IMEI.
func (d *Device) IMEI() string { return d.o.IMEI }

// Firmware returns the firmware version the device reports.
func (d *Device) Firmware() string { return d.o.Firmware }

// Legacy reports whether the device authenticates without a token (firmware below 3.12).
func (d *Device) Legacy() bool { return d.legacy }

// Token returns the secret token the device holds; empty before a bootstrap,
// after a factory reset and in legacy mode.
func (d *Device) Token() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.Token
}

// Connected reports whether the device has a broker connection.
func (d *Device) Connected() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.link != nil
}

// LastError returns the most recent connection or publish error, or nil.
func (d *Device) LastError() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastErr
}

// AppliedConfig returns a copy of the configuration the device applied, or
// nil before it received one.
func (d *Device) AppliedConfig() *protocol.DesiredConfig {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.st.Config == nil {
		return nil
	}
	return cloneConfig(d.st.Config)
}

// PrivacyMode returns "on" or "off" ("" until set).
func (d *Device) PrivacyMode() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.privacyMode
}

// Hotspot returns whether the hotspot is on and its password.
func (d *Device) Hotspot() (on bool, password string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.HotspotOn, d.st.HotspotPassword
}

// SDCard returns the storage card the device holds.
func (d *Device) SDCard() protocol.SDCard {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.SDCard
}

// Driver returns the id of the checked-in driver and whether one is checked in.
func (d *Device) Driver() (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.driver == nil {
		return 0, false
	}
	return d.driver.DriverID, true
}

// RecordingRanges returns, per camera, the intervals on the SD card now.
func (d *Device) RecordingRanges() protocol.RecordingRanges {
	return d.rec.ranges(d.now())
}

// Position returns where the device is on its route at t.
func (d *Device) Position(t time.Time) Position {
	d.mu.Lock()
	start := d.started
	d.mu.Unlock()
	if start.IsZero() {
		start = t
	}
	return d.o.Route.At(t.Sub(start) + d.o.RouteOffset)
}

// Status returns the status report the device would publish now.
func (d *Device) Status() protocol.Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	power := true
	sd := d.st.SDCard
	st := protocol.Status{
		Firmware:       d.o.Firmware,
		ProductType:    d.o.ProductType,
		State:          "online",
		SDCard:         &sd,
		RecordingTest:  "passed",
		PowerConnected: &power,
		Cameras:        []protocol.Camera{{ID: 1, Connected: true}, {ID: 2, Connected: true}},
		DataUsage:      &protocol.DataUsage{PeriodStart: d.usageStart, BytesUp: d.bytesUp, BytesDown: d.bytesDown},
		Hotspot:        &protocol.HotspotState{On: d.st.HotspotOn},
	}
	if d.adasDone {
		cal := true
		st.AdasCalibrated = &cal
	}
	st.Cameras = append(st.Cameras, d.auxStatusLocked()...)
	d.applyHealthLocked(&st)
	return st
}

// setErr records err as the device's last error and in the shared stats.
func (d *Device) setErr(err error) {
	if errors.Is(err, errStopping) || errors.Is(err, errWentOffline) {
		return
	}
	d.mu.Lock()
	d.lastErr = err
	d.mu.Unlock()
	d.stats.setLastError(d.o.IMEI, err)
}

// randFloat returns a pseudo-random number in [0, 1) from the device's source.
func (d *Device) randFloat() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rng.Float64()
}

// signal does a non-blocking send on a 1-buffered channel.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

var sdMakers = []string{"SanDisk", "Samsung", "Kingston", "Transcend", "Lexar"}

// uuidFrom formats a version-4-shaped UUID from a seed and a counter, so a
// device's first SD card is stable across runs.
func uuidFrom(seed, n uint64) string {
	r := rand.New(rand.NewPCG(seed, n+0x9e3779b97f4a7c15))
	var b [16]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
