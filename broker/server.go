// Package broker is fleetcam's device link: an embedded MQTT server
// (broker/mqttd) that authenticates dashcams, confines each to its own topics,
// tracks their presence, delivers their desired configuration and commands,
// and stores what they publish through a group commit before acknowledging it.
// docs/device-protocol.md is the wire contract it implements.
package broker

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetcam/fleetcam/broker/mqttd"
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

// DesiredConfigFunc builds the configuration the cloud wants a device to
// apply. The default is DesiredFromSettings of the device's effective settings.
type DesiredConfigFunc func(tx *store.Tx, dev *store.Device) (protocol.DesiredConfig, error)

// Server is the embedded broker and the Commander the API uses. Create it
// with New, set Notify (and DesiredConfig, if not the default), then Start it.
type Server struct {
	// Notify is told about device messages once they are committed. Set
	// it before Start.
	Notify Notifiers
	// DesiredConfig builds the configuration a device is sent. Set it
	// before Start; nil keeps the default.
	DesiredConfig DesiredConfigFunc
	// Cluster is told about this node's devices when the broker is one
	// node of a cluster (cluster.go). Set it before Start; nil: alone.
	Cluster Cluster

	cfg     configs.MQTT
	devices configs.Devices
	db      *store.DB
	log     *slog.Logger
	now     func() time.Time
	metrics *metrics
	master  []byte
	limiter *ipLimiter

	mqtt    *mqttd.Server
	links   *registry
	replies *replyWaiters
	// queued holds devices whose queued commands were just committed.
	queued *pendingDelivery
	// unsaved holds ended connections whose offline record is not
	// committed, unrecorded live ones whose online record failed.
	unsaved, unrecorded *unsavedOffline

	mu        sync.Mutex
	committer *store.Committer
	addrs     map[string]string // bound address by listener id
	ws        *wsListener
	running   bool
	stop      chan struct{}
	wg        sync.WaitGroup
}

// Limits of the device link that are not settings.
const (
	// connectTimeout bounds the wait for a new connection's TLS handshake
	// and CONNECT packet, and the wait for a connection taken over to end.
	connectTimeout = 10 * time.Second
	// writeTimeout bounds one write to a device; a device that reads
	// nothing for that long is disconnected.
	writeTimeout = 10 * time.Second
	// topicAliasMaximum is the number of topic aliases a device may use.
	topicAliasMaximum = 16
)

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
	s := &Server{
		cfg: m, devices: cfg.Devices, db: db, log: log.With("component", "broker"), now: now, master: master,
		limiter: newIPLimiter(m.ConnectRatePerIP, m.ConnectBurstPerIP),
		links:   newRegistry(), replies: newReplyWaiters(), queued: newPendingDelivery(), unsaved: newUnsavedOffline(), unrecorded: newUnsavedOffline(),
		addrs: map[string]string{},
	}
	s.mqtt = mqttd.New(mqttd.Options{
		MaxPacketSize: m.MaxPacketSize, MaxInflight: m.MaxInflight, MaxPending: m.ClientWritesPending,
		TopicAliasMaximum: topicAliasMaximum, MaxSessionExpiry: m.MaxSessionExpiry,
		ConnectTimeout: connectTimeout, WriteTimeout: writeTimeout, Log: s.log, Now: now,
	}, deviceHandler{s: s})
	if s.metrics, err = newMetrics(reg, s); err != nil {
		return nil, err
	}
	return s, nil
}

// Start binds the configured listeners, marks devices left online by a
// previous run offline and starts accepting connections.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return errors.New("broker: already started")
	}
	if err := s.markOwnOffline(); err != nil {
		return fmt.Errorf("broker: reset presence: %w", err)
	}
	s.committer = s.db.NewCommitter(store.CommitterOptions{
		MaxBatch: s.cfg.CommitBatch, Delay: s.cfg.CommitDelay, OnBatch: s.metrics.observeBatch,
	})
	if err := s.listen(); err != nil {
		s.closeListeners()
		s.committer.Close()
		return err
	}
	s.stop = make(chan struct{})
	s.wg.Add(3)
	go s.sweep()
	go s.deliverCommitted()
	go s.repairPresence()
	s.running = true
	return nil
}

// listen binds the configured listeners and serves them.
func (s *Server) listen() error {
	ln, err := s.listenTCP(s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("broker: listen tcp on %s: %w", s.cfg.Addr, err)
	}
	if err := s.serve(listenerTCP, ln); err != nil {
		return err
	}
	if s.cfg.TLSAddr != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("broker: mqtt.tlsCert/mqtt.tlsKey: %w", err)
		}
		s.metrics.servesCertificate(cert)
		ln, err := s.listenTCP(s.cfg.TLSAddr)
		if err != nil {
			return fmt.Errorf("broker: listen tls on %s: %w", s.cfg.TLSAddr, err)
		}
		if err := s.serve(listenerTLS, tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})); err != nil {
			return err
		}
	}
	if s.cfg.WSAddr != "" {
		ws, err := listenWS(s.cfg.WSAddr, func(c net.Conn) { s.mqtt.ServeConn(listenerWS, c) }, s.log)
		if err != nil {
			return fmt.Errorf("broker: listen ws on %s: %w", s.cfg.WSAddr, err)
		}
		s.ws = ws
		s.addrs[listenerWS] = ws.Addr()
	}
	return nil
}

// listenTCP binds address, reading PROXY headers from the trusted
// balancers (mqtt.trustedProxies) before anything else, TLS included.
func (s *Server) listenTCP(address string) (net.Listener, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, err
	}
	wrapped, err := withProxyHeaders(ln, s.cfg.TrustedProxies)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return wrapped, nil
}

func (s *Server) serve(id string, ln net.Listener) error {
	if err := s.mqtt.Serve(id, ln); err != nil {
		_ = ln.Close()
		return fmt.Errorf("broker: serve %s: %w", id, err)
	}
	s.addrs[id] = ln.Addr().String()
	return nil
}

// closeListeners stops accepting connections and ends the connected ones.
func (s *Server) closeListeners() {
	if s.ws != nil {
		s.ws.Close()
	}
	_ = s.mqtt.Close()
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
	s.closeListeners()
	s.committer.Close()
	// The offline records of the connections closeListeners ended are
	// written as they end, and some may come after the committer closed:
	// the connections this broker recorded that still read online are
	// recorded offline here, each with its deviceStatus message.
	if err := s.markOwnOffline(); err != nil {
		s.log.Error("record devices offline at shutdown", "error", err)
	}
	return nil
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
	return s.addrs[id]
}

// commit runs fn through the group commit on behalf of a device and waits
// until it is on disk. Device writes have no caller to give up: a message
// is committed once read (its PUBACK follows), and Close commits what is
// queued, so they run under context.Background, like the broker's other
// store calls.
func (s *Server) commit(dev *store.Device, fn func(*store.Tx) error) error {
	return s.committer.Do(context.Background(), deviceActor(dev), fn)
}

// commitLinked is commit for a job of connection l. The group commit is
// given the device's latest stored GPS sample as l knows it, from its
// last committed job (store.Committer.DoKnowing), and l learns the next
// from this job's transaction; a job that fails leaves l knowing none,
// and its next job's transaction reads it.
func (s *Server) commitLinked(l *link, job func(*store.Tx) error) error {
	var next *store.LatestGPS
	err := s.committer.DoKnowing(context.Background(), deviceActor(&l.dev), l.knownGPS(), func(tx *store.Tx) error {
		if err := job(tx); err != nil {
			return err
		}
		next = nil
		if k, ok := tx.KnownLatestGPS(l.imei); ok {
			next = &k
		}
		return nil
	})
	if err != nil {
		next = nil
	}
	l.learnGPS(next)
	return err
}

func deviceActor(dev *store.Device) store.Actor {
	return store.Actor{Source: "device", OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID, IMEI: dev.IMEI}
}
