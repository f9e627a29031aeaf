package devicesim

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// Load mode: thousands of light dashcams in one process, for load tests.
// A load device keeps only what a load test needs: its credential, its
// connection and the times of its next GPS message and event. It has no
// goroutine of its own while idle (the MQTT client has three); its GPS
// and events are driven by timers, each publish running in the timer's
// goroutine until the PUBACK arrives. It applies no configuration, but
// acknowledges every configuration version it is sent, keeps the token it
// is granted and answers every command with ok false.

// LoadOptions configure a LoadFleet. Zero values take the defaults noted.
type LoadOptions struct {
	// BrokerURL is tcp://, mqtt://, tls://, ssl:// or mqtts:// host:port.
	BrokerURL string
	// BrokerURLs, instead of BrokerURL, are the addresses of the nodes of a
	// cluster, as a dashcam configured with several addresses holds them:
	// device i connects first to BrokerURLs[i mod len] (the fleet spread
	// evenly over the nodes) and, after a lost connection or a failed
	// attempt, to the next address in the list.
	BrokerURLs []string
	// IMEIs are the devices, one connection each.
	IMEIs []string
	// FactoryMasterKey lets a device without a token bootstrap (firmware 3.12 and later).
	FactoryMasterKey []byte
	// TokenSeed, when set, gives every device the token LoadToken(TokenSeed,
	// IMEI) instead of bootstrapping: for a store provisioned with the same
	// seed, as cmd/fleetbench provisions it.
	TokenSeed []byte
	// StateDir, when set, is read for tokens at start and receives granted
	// tokens, in the format of Device state files.
	StateDir string
	// Firmware is the version reported; below 3.12 devices connect in legacy
	// mode without a token. Default DefaultFirmware.
	Firmware string
	// ConnectRate is how many devices start connecting per second; 0: as
	// fast as ConnectConcurrency allows.
	ConnectRate float64
	// ConnectConcurrency bounds connection attempts in progress; default 256.
	ConnectConcurrency int
	// CleanStart asks for clean sessions; default persistent sessions with SessionExpiry.
	CleanStart bool
	// SessionExpiry of persistent sessions; default 1h.
	SessionExpiry time.Duration
	// KeepAlive is the MQTT keep-alive; default 60s.
	KeepAlive time.Duration
	// ReceiveMaximum bounds the broker's messages in flight to a device; default 4.
	ReceiveMaximum uint16
	// ConnectTimeout bounds dial, CONNECT and SUBSCRIBE; default 10s.
	ConnectTimeout time.Duration
	// PublishTimeout bounds the wait for one PUBACK; default 10s.
	PublishTimeout time.Duration
	// ReconnectDelay is the first back-off after a lost or failed
	// connection; it doubles up to 30s, with jitter. Default 1s.
	ReconnectDelay time.Duration
	// GPSInterval is the time between two fixes; 0: no GPS (unless ClosedLoop).
	GPSInterval time.Duration
	// GPSBatch is the number of fixes per GPS message; default 1. A device
	// publishes one message every GPSInterval × GPSBatch.
	GPSBatch int
	// EventInterval is the time between two events of a device; 0: none.
	EventInterval time.Duration
	// ClosedLoop makes every device publish GPS messages back to back,
	// Window at a time, as fast as the broker acknowledges them (GPSInterval
	// is then ignored).
	ClosedLoop bool
	// Window bounds the publishes a device has awaiting PUBACK; default 1
	// in closed loop, 16 otherwise. An open-loop message due while the
	// window is full is skipped and counted.
	Window int
	// NoStatus skips the status report after connecting.
	NoStatus bool
	// Route is driven for positions; nil: the built-in city loop.
	Route *Route
	// Stats collects the counters; a new one when nil.
	Stats *Stats
	// OnAck is called after every acknowledged publish.
	OnAck func(Ack)
	// OnConnect is called after every connection is set up (and
	// subscribed), with the broker URL it was made to.
	OnConnect func(imei, brokerURL string)
	// OnReceive is called for every message the broker sends a device,
	// with its topic suffix (protocol.TopicCommand, TopicConfig, …) and
	// payload, before the device answers it.
	OnReceive func(imei, suffix string, payload []byte)
	// Logger receives diagnostics; discarded when nil.
	Logger *slog.Logger
}

// LoadToken is the token of imei in a fleet provisioned from seed:
// base64url(HMAC-SHA256(seed, "fleetcam load token" 0x00 imei)), 43
// characters like a granted token. The store keeps its SHA-256 as usual.
func LoadToken(seed []byte, imei string) string {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte("fleetcam load token\x00" + imei))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// LoadFleet runs light simulated dashcams for load tests (see LoadOptions).
type LoadFleet struct {
	o       LoadOptions
	urls    []*url.URL // BrokerURL, or BrokerURLs in order
	log     *slog.Logger
	stats   *Stats
	devices []*loadDevice
	legacy  bool
	started time.Time

	ctx context.Context
	sem chan struct{}
	// work counts connection attempts and publishes under way; once
	// stopping is set no new work starts.
	mu       sync.Mutex
	idle     *sync.Cond
	work     int
	stopping atomic.Bool
}

// NewLoadFleet validates o and reads the devices' tokens; nothing connects
// before Run.
func NewLoadFleet(o LoadOptions) (*LoadFleet, error) {
	bad := func(format string, a ...any) (*LoadFleet, error) {
		return nil, fmt.Errorf("devicesim: "+format+": %w", append(a, ErrInvalidOptions)...)
	}
	if len(o.IMEIs) == 0 {
		return bad("a load fleet needs at least one imei")
	}
	addrs := o.BrokerURLs
	switch {
	case len(addrs) > 0 && o.BrokerURL != "":
		return bad("brokerURL and brokerURLs exclude each other")
	case len(addrs) == 0:
		addrs = []string{o.BrokerURL}
	}
	urls := make([]*url.URL, len(addrs))
	for i, a := range addrs {
		u, err := parseBrokerURL(a)
		if err != nil {
			return nil, err
		}
		urls[i] = u
	}
	if o.Firmware == "" {
		o.Firmware = DefaultFirmware
	}
	legacy := protocol.FirmwareBelow(o.Firmware, protocol.MinTokenFirmware)
	if !legacy && len(o.TokenSeed) == 0 && len(o.FactoryMasterKey) == 0 {
		return bad("firmware %s needs a factoryMasterKey or a tokenSeed", o.Firmware)
	}
	switch {
	case o.ConnectRate < 0:
		return bad("connectRate %g must not be negative", o.ConnectRate)
	case o.GPSInterval < 0 || o.GPSBatch < 0 || o.EventInterval < 0 || o.Window < 0 || o.ConnectConcurrency < 0:
		return bad("gpsInterval, gpsBatch, eventInterval, window and connectConcurrency must not be negative")
	case o.KeepAlive > 65535*time.Second:
		return bad("keepAlive %s must be at most 65535s", o.KeepAlive)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.SessionExpiry, time.Hour)
	def(&o.KeepAlive, 60*time.Second)
	def(&o.ConnectTimeout, 10*time.Second)
	def(&o.PublishTimeout, 10*time.Second)
	def(&o.ReconnectDelay, time.Second)
	if o.ConnectConcurrency == 0 {
		o.ConnectConcurrency = 256
	}
	if o.ReceiveMaximum == 0 {
		o.ReceiveMaximum = 4
	}
	if o.GPSBatch == 0 {
		o.GPSBatch = 1
	}
	if o.Window == 0 {
		o.Window = 16
		if o.ClosedLoop {
			o.Window = 1
		}
	}
	if o.Route == nil {
		o.Route = CityLoop()
	}
	if o.Stats == nil {
		o.Stats = NewStats()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	f := &LoadFleet{o: o, urls: urls, log: o.Logger, stats: o.Stats, legacy: legacy,
		devices: make([]*loadDevice, 0, len(o.IMEIs))}
	seen := make(map[string]bool, len(o.IMEIs))
	for _, imei := range o.IMEIs {
		if !ValidIMEI(imei) {
			return nil, fmt.Errorf("devicesim: imei %q must be 15 digits with a valid check digit: %w", imei, ErrInvalidIMEI)
		}
		if seen[imei] {
			return bad("imei %s appears twice in the fleet", imei)
		}
		seen[imei] = true
		d := &loadDevice{f: f, imei: imei, addr: len(f.devices) % len(urls)}
		h := fnv.New64a()
		h.Write([]byte(imei))
		d.seed = mix64(h.Sum64())
		switch {
		case legacy:
		case len(o.TokenSeed) > 0:
			d.token = LoadToken(o.TokenSeed, imei)
		default:
			d.factory = protocol.FactoryKey(o.FactoryMasterKey, imei)
			if o.StateDir != "" {
				st, err := loadState(o.StateDir, imei)
				if err != nil {
					return nil, err
				}
				d.token = st.Token
			}
		}
		f.devices = append(f.devices, d)
	}
	return f, nil
}

// Stats returns the fleet's counters.
func (f *LoadFleet) Stats() *Stats { return f.stats }

// Run connects the devices at the connect rate, keeps them connected
// (reconnecting with back-off) and publishing until ctx ends, then
// disconnects them and returns once every publish has finished.
func (f *LoadFleet) Run(ctx context.Context) error {
	if f.ctx != nil {
		return fmt.Errorf("devicesim: a load fleet runs once: %w", ErrInvalidOptions)
	}
	f.ctx = ctx
	f.sem = make(chan struct{}, f.o.ConnectConcurrency)
	f.started = time.Now()
	f.idle = sync.NewCond(&f.mu)
	f.stats.Expect(len(f.devices))
	f.startAll(ctx)
	<-ctx.Done()
	f.mu.Lock()
	f.stopping.Store(true)
	f.mu.Unlock()
	for _, d := range f.devices {
		d.stop()
	}
	f.mu.Lock()
	for f.work > 0 {
		f.idle.Wait()
	}
	f.mu.Unlock()
	return nil
}

// enter registers work about to start; false once the fleet is stopping.
func (f *LoadFleet) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping.Load() {
		return false
	}
	f.work++
	return true
}

// leave ends work registered with enter.
func (f *LoadFleet) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.work--; f.work == 0 {
		f.idle.Broadcast()
	}
}

// spawn runs fn in its own goroutine as tracked work, unless the fleet is stopping.
func (f *LoadFleet) spawn(fn func()) {
	if !f.enter() {
		return
	}
	go func() {
		defer f.leave()
		fn()
	}()
}

// startAll starts the devices' first connection attempts, paced by the
// connect rate: device i starts i/rate seconds after the first.
func (f *LoadFleet) startAll(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for i, d := range f.devices {
		if f.o.ConnectRate > 0 {
			due := f.started.Add(time.Duration(float64(i) / f.o.ConnectRate * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				t.Reset(wait)
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case f.sem <- struct{}{}:
		}
		if !f.enter() {
			<-f.sem
			return
		}
		go func() {
			defer f.leave()
			d.connect(true)
		}()
	}
}

// schedule runs fn after delay as tracked work, unless the fleet is stopping by then.
func (f *LoadFleet) schedule(delay time.Duration, fn func()) *time.Timer {
	return time.AfterFunc(delay, func() {
		if !f.enter() {
			return
		}
		defer f.leave()
		fn()
	})
}

// backoff is the delay before reconnect attempt n: exponential from
// ReconnectDelay, capped at 30s, with up to 50% jitter.
func (f *LoadFleet) backoff(n int, jitter float64) time.Duration {
	b := f.o.ReconnectDelay
	for i := 1; i < n && b < 30*time.Second; i++ {
		b *= 2
	}
	b = min(b, 30*time.Second)
	return b/2 + time.Duration(jitter*float64(b/2))
}
