// Package broker is fleetcam's device link: an embedded MQTT broker
// (mochi-mqtt) that authenticates dashcams, confines each to its own topics,
// tracks their presence, delivers their desired configuration and commands,
// and stores what they publish through a group commit before acknowledging it.
// docs/device-protocol.md is the wire contract it implements.
package broker

import (
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/mochi-mqtt/server/v2/system"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// Sentinel errors. The API maps them to HTTP answers in one place.
var (
	// ErrDeviceOffline means the device holds no connection ready for
	// commands; the API answers 417 ExpectationFailedError.
	ErrDeviceOffline = errors.New("broker: device offline")
	// ErrCommandTimeout means the device did not answer a command in time.
	ErrCommandTimeout = errors.New("broker: command timed out")
	// ErrCommandFailed means the device answered a command with ok false;
	// the wrapped message is the device's error text.
	ErrCommandFailed = errors.New("broker: command failed on the device")
)

// EventHandler stores or reacts to one event a device published, in the
// transaction that acknowledges it. The default stores a store.Event (once
// per device event id) and emits a store.MessageEvent.
type EventHandler func(tx *store.Tx, dev *store.Device, ev protocol.Event) error

// StatusHandler runs after the broker stored a status report (presence,
// firmware, health) in the same transaction, e.g. for alarms or auxiliary cameras.
type StatusHandler func(tx *store.Tx, dev *store.Device, prev *store.DeviceLink, st protocol.Status) error

// GPSHandler runs after a GPS batch was stored, with the samples that were
// new (a redelivered batch yields none), in the same transaction. The
// default is store.GPSHook (geofence sides, speedLimit events).
type GPSHandler func(tx *store.Tx, dev *store.Device, points []store.GPSPoint) error

// MediaHandler records that a device finished an upload, in the
// transaction that acknowledges the message.
type MediaHandler func(tx *store.Tx, dev *store.Device, m protocol.MediaReady) error

// DesiredConfigFunc builds the configuration the cloud wants a device to
// apply. The default is DesiredFromSettings of the device's effective settings.
type DesiredConfigFunc func(tx *store.Tx, dev *store.Device) (protocol.DesiredConfig, error)

// Server is the embedded broker and the Commander the API uses. Create it
// with New, set the handler fields, then Start it.
type Server struct {
	// Handlers of device messages. Set them before Start; nil keeps the default.
	EventHandler  EventHandler
	StatusHandler StatusHandler
	GPSHandler    GPSHandler
	MediaHandler  MediaHandler
	DesiredConfig DesiredConfigFunc

	cfg     configs.MQTT
	devices configs.Devices
	db      *store.DB
	log     *slog.Logger
	now     func() time.Time
	metrics *metrics
	master  []byte
	limiter *ipLimiter

	mochi   *mqtt.Server
	cloud   *mqtt.Client // the inline client the cloud publishes with
	links   *registry
	replies *replyWaiters

	mu        sync.Mutex
	committer *store.Committer
	addrs     map[string]listeners.Listener
	running   bool
	stop      chan struct{}
	wg        sync.WaitGroup
}

// clientReadBuffer is the size of each connection's read buffer (mochi's
// default is 2 KiB).
const clientReadBuffer = 512

// Listener ids, also used in logs.
const (
	listenerTCP = "tcp"
	listenerTLS = "tls"
	listenerWS  = "ws"
)

// New builds a broker from cfg (its MQTT and Devices sections) on db. reg
// receives the fleetcam_mqtt_* metrics; now is the clock used for bootstrap
// proofs and token times (time.Now when nil).
func New(cfg configs.Config, db *store.DB, log *slog.Logger, reg prometheus.Registerer, now func() time.Time) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	master, err := hex.DecodeString(cfg.Devices.FactoryMasterKey)
	if err != nil || len(master) < 16 {
		return nil, fmt.Errorf("broker: devices.factoryMasterKey must be at least 32 hex characters")
	}
	m := cfg.MQTT
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = uint32(m.MaxPacketSize)
	caps.MaximumInflight = uint16(m.MaxInflight)
	caps.ReceiveMaximum = uint16(m.MaxInflight)
	caps.MaximumClientWritesPending = int32(m.ClientWritesPending)
	caps.MaximumSessionExpiryInterval = uint32(m.MaxSessionExpiry / time.Second)
	caps.MaximumQos = 1
	caps.RetainAvailable = 0
	caps.SharedSubAvailable = 0
	caps.TopicAliasMaximum = 16
	s := &Server{
		cfg: m, devices: cfg.Devices, db: db, log: log.With("component", "broker"), now: now, master: master,
		limiter: newIPLimiter(m.ConnectRatePerIP, m.ConnectBurstPerIP),
		links:   newRegistry(), replies: newReplyWaiters(),
		addrs: map[string]listeners.Listener{},
	}
	s.mochi = mqtt.New(&mqtt.Options{
		Capabilities: caps, InlineClient: true, Logger: s.log,
		// $SYS values are dropped as soon as mochi publishes them
		// (sysTopicsHook); the interval only bounds the work.
		SysTopicResendInterval: 300,
		// The read buffer is allocated per connection and held while it is
		// idle; device messages are small, and a larger body is read
		// straight into its own buffer.
		ClientNetReadBufferSize: clientReadBuffer,
	})
	s.cloud = s.mochi.NewClient(nil, mqtt.LocalListener, "fleetcam-cloud", true)
	if s.metrics, err = newMetrics(reg, s); err != nil {
		return nil, err
	}
	for _, h := range []mqtt.Hook{&authHook{s: s}, &aclHook{s: s}, &sessionHook{s: s}, &ingestHook{s: s}, &sysTopicsHook{s: s}} {
		if err := s.mochi.AddHook(h, nil); err != nil {
			return nil, fmt.Errorf("broker: add hook %s: %w", h.ID(), err)
		}
	}
	return s, nil
}

// sysTopicsHook drops the $SYS values mochi retains each time it publishes
// them. fleetcam serves no $SYS topics (a device may subscribe only to its
// own topics; operators read /metrics), and while any retained message
// exists mochi walks the topic tree for retained messages on every
// SUBSCRIBE, which was 8% of the server's CPU in a connection storm.
type sysTopicsHook struct {
	mqtt.HookBase
	s *Server
}

// ID names the hook.
func (h *sysTopicsHook) ID() string { return "fleetcam-sys-topics" }

// Provides lists the events the hook handles.
func (h *sysTopicsHook) Provides(b byte) bool { return b == mqtt.OnSysInfoTick }

// OnSysInfoTick runs after mochi published and retained the $SYS values.
func (h *sysTopicsHook) OnSysInfoTick(*system.Info) {
	topics := h.s.mochi.Topics
	for topic := range topics.Retained.GetAll() {
		if strings.HasPrefix(topic, mqtt.SysPrefix) {
			topics.RetainMessage(packets.Packet{TopicName: topic})
		}
	}
}

// Start binds the configured listeners, marks devices left online by a
// previous run offline and starts accepting connections.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return errors.New("broker: already started")
	}
	err := s.db.Update(store.Actor{Source: "system"}, func(tx *store.Tx) error {
		_, err := tx.MarkAllOffline(tx.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("broker: reset presence: %w", err)
	}
	ls := []listeners.Listener{listeners.NewTCP(listeners.Config{ID: listenerTCP, Address: s.cfg.Addr})}
	if s.cfg.TLSAddr != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("broker: mqtt.tlsCert/mqtt.tlsKey: %w", err)
		}
		ls = append(ls, listeners.NewTCP(listeners.Config{ID: listenerTLS, Address: s.cfg.TLSAddr,
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}))
	}
	if s.cfg.WSAddr != "" {
		ls = append(ls, newWSListener(listenerWS, s.cfg.WSAddr))
	}
	for _, l := range ls {
		g := &guardedListener{Listener: l, s: s}
		if err := s.mochi.AddListener(g); err != nil {
			s.closeListeners()
			return fmt.Errorf("broker: listen %s on %s: %w", l.ID(), l.Address(), err)
		}
		s.addrs[l.ID()] = g
	}
	s.committer = s.db.NewCommitter(store.CommitterOptions{
		MaxBatch: s.cfg.CommitBatch, Delay: s.cfg.CommitDelay, OnBatch: s.metrics.observeBatch,
	})
	if err := s.mochi.Serve(); err != nil {
		s.committer.Close()
		return fmt.Errorf("broker: serve: %w", err)
	}
	s.stop = make(chan struct{})
	s.wg.Add(1)
	go s.sweep()
	s.running = true
	return nil
}

func (s *Server) closeListeners() {
	for _, l := range s.addrs {
		l.Close(func(string) {})
	}
}

// Close disconnects every device, stops the listeners and commits what is
// still queued. The store stays open; its owner closes it.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	s.running = false
	close(s.stop)
	s.wg.Wait()
	err := s.mochi.Close()
	s.committer.Close()
	return err
}

// sweep drops idle per-address rate limiters.
func (s *Server) sweep() {
	defer s.wg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.limiter.sweep(s.now())
		}
	}
}

// Addr is the bound address of the MQTT TCP listener (empty before Start).
func (s *Server) Addr() string { return s.addr(listenerTCP) }

// TLSAddr is the bound address of the MQTT over TLS listener, if configured.
func (s *Server) TLSAddr() string { return s.addr(listenerTLS) }

// WSAddr is the bound address of the MQTT over WebSocket listener, if configured.
func (s *Server) WSAddr() string { return s.addr(listenerWS) }

func (s *Server) addr(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.addrs[id]; ok {
		return l.Address()
	}
	return ""
}

// commit runs fn through the group commit on behalf of a device and waits
// until it is on disk.
func (s *Server) commit(dev *store.Device, fn func(*store.Tx) error) error {
	return s.committer.Do(deviceActor(dev), fn)
}

func deviceActor(dev *store.Device) store.Actor {
	return store.Actor{Source: "device", OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID}
}
