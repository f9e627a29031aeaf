// Package mqttd is fleetcam's MQTT server: the connections, sessions and
// flow control of MQTT 3.1.1 and 5 for clients that publish to the server
// and receive what the server publishes to them, at QoS 0 and 1. Clients
// never route messages to each other: whatever a client publishes goes to
// the Handler, and only the server publishes to clients.
//
// A connection costs one goroutine, and the goroutine's frames while it
// waits for the next packet are small, so that Go shrinks its stack to a
// few kilobytes once the connection is idle. Writes are made by the
// goroutine that has something to send, under the connection's write lock
// and a write deadline; there is no writer goroutine and no write queue.
//
// The packet codec is mochi-mqtt's packets package.
package mqttd

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// Handler is what the server asks and tells its owner about connections.
// Its methods run on the connection's goroutine unless said otherwise.
type Handler interface {
	// Connect decides a CONNECT before any session is touched. A nil
	// error admits the client; a packets.Code refuses it with that reason
	// code (≥ 0x80); any other error refuses it with 0x88 (server unavailable).
	Connect(c *Conn, pk *packets.Packet) error
	// Online runs once an admitted connection has taken over any earlier
	// connection of the same client and holds its session, before the
	// CONNACK is sent.
	Online(c *Conn)
	// Ready runs after the CONNACK went out and what was in flight in a
	// resumed session was sent again.
	Ready(c *Conn)
	// Publish handles a PUBLISH the client sent, its topic alias resolved
	// into TopicName (QoS 2 is handled as QoS 1). For QoS 1 the server
	// acknowledges once it returns: nil acknowledges
	// with success; a packets.Code refuses the message (see Server for the
	// rules by protocol version); any other error closes the connection
	// without acknowledging, so the client sends the message again.
	Publish(c *Conn, pk *packets.Packet) error
	// CanSubscribe reports whether the client may subscribe to filter.
	CanSubscribe(c *Conn, filter string) bool
	// Subscribed runs after a SUBACK that granted at least one filter.
	Subscribed(c *Conn)
	// Closed runs once when an admitted connection ended, for whatever
	// reason, before a connection taking it over proceeds.
	Closed(c *Conn)
}

// Options configure a Server. Zero values take the defaults noted.
type Options struct {
	// MaxPacketSize bounds a packet the server accepts, fixed header
	// included; a larger one closes the connection (0: 128 KiB).
	MaxPacketSize int
	// MaxInflight is the Receive Maximum the server announces and the most
	// unacknowledged QoS 1 messages it sends a client (0: 64).
	MaxInflight int
	// MaxPending bounds the messages a session holds beyond MaxInflight,
	// e.g. while its client is offline; more are dropped (0: 256).
	MaxPending int
	// MaxSubscriptions bounds the filters one session holds; a SUBSCRIBE
	// beyond it is refused with 0x97, quota exceeded (0: 16).
	MaxSubscriptions int
	// TopicAliasMaximum is the number of topic aliases a client may use (0: none).
	TopicAliasMaximum uint16
	// MaxSessionExpiry caps the session expiry a client asks for; MQTT
	// 3.1.1 sessions that are not clean last this long (0: 7 days).
	MaxSessionExpiry time.Duration
	// ConnectTimeout bounds the time from accepting a connection to its
	// CONNECT, TLS handshake included (0: 10 s).
	ConnectTimeout time.Duration
	// WriteTimeout bounds one write to a client; a client that does not
	// read for that long is disconnected (0: 10 s).
	WriteTimeout time.Duration
	// Log receives connection errors (slog.Default when nil).
	Log *slog.Logger
	// Now is the clock of session expiry (time.Now when nil). Network
	// deadlines always use the system clock.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.MaxPacketSize <= 0 {
		o.MaxPacketSize = 128 << 10
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = 64
	}
	o.MaxInflight = min(o.MaxInflight, 65535)
	if o.MaxPending <= 0 {
		o.MaxPending = 256
	}
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = 16
	}
	if o.MaxSessionExpiry <= 0 {
		o.MaxSessionExpiry = 7 * 24 * time.Hour
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Info holds the server's counters, read with atomic loads.
type Info struct {
	ClientsConnected atomic.Int64 // connections that passed Connect and have not ended
	Inflight         atomic.Int64 // QoS 1 messages sent and not yet acknowledged
	Subscriptions    atomic.Int64 // filters held by sessions
	MessagesReceived atomic.Int64 // PUBLISH packets received
	MessagesSent     atomic.Int64 // PUBLISH packets sent, resends included
	MessagesDropped  atomic.Int64 // messages a session could not hold or a client could not take
	BytesReceived    atomic.Int64
	BytesSent        atomic.Int64
	Panics           atomic.Int64 // connections closed because handling a packet panicked
}

// ErrClosed is returned by Publish once the server is closed.
var ErrClosed = errors.New("mqttd: server closed")

// Server is an MQTT server. Create it with New, then hand it listeners
// (Serve) or single connections (ServeConn).
//
// A client's PUBLISH that the Handler refuses with a code is answered by
// protocol version: an MQTT 5 client gets a PUBACK with the code for QoS 1;
// an MQTT 3.1.1 client is disconnected when the code is 0x87 (not
// authorized) and otherwise acknowledged, the message being dropped; a QoS
// 0 message is dropped. An MQTT 3.1.1 QoS 2 PUBLISH is answered as a QoS 1
// one but with PUBREC, and its PUBREL with PUBCOMP; an MQTT 5 one, which the
// CONNACK's Maximum QoS 1 forbade, gets a PUBACK.
type Server struct {
	opts Options
	h    Handler
	info Info

	mu       sync.Mutex
	sessions map[string]*session
	conns    map[*Conn]struct{}
	// ending holds, by client id, the connection that left its session
	// and whose Handler.Closed has not returned: the client's next
	// connection waits for it, so the Handler never sees a client online
	// twice.
	ending    map[string]*Conn
	listeners []net.Listener
	closed    bool
	wg        sync.WaitGroup
	stop      chan struct{}
}

// New returns a server that reports to h.
func New(opts Options, h Handler) *Server {
	opts.defaults()
	return &Server{opts: opts, h: h, sessions: map[string]*session{}, conns: map[*Conn]struct{}{},
		ending: map[string]*Conn{},
		stop:   make(chan struct{})}
}

// Info returns the server's counters.
func (s *Server) Info() *Info { return &s.info }

// Sessions returns the number of sessions held, connected or not.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Serve accepts connections from ln until the server is closed, serving
// each as listener id. It returns at once; Close closes ln. The first
// Serve also starts dropping expired sessions.
func (s *Server) Serve(id string, ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.listeners == nil {
		s.wg.Add(1)
		go s.expireSessions()
	}
	s.listeners = append(s.listeners, ln)
	s.wg.Add(1)
	go s.accept(id, ln)
	return nil
}

func (s *Server) accept(id string, ln net.Listener) {
	defer s.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait, then go on.
			s.opts.Log.Warn("mqtt accept failed", "listener", id, "error", err)
			select {
			case <-time.After(backoff):
			case <-s.stop:
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		go s.ServeConn(id, nc)
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// ServeConn serves one connection, from its CONNECT to its end, on the
// calling goroutine. The server owns nc and closes it.
func (s *Server) ServeConn(listener string, nc net.Conn) {
	c := newConn(s, listener, nc)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	c.serve()
}

// Close stops the listeners, disconnects every client (MQTT 5: DISCONNECT
// 0x8B, server shutting down) and waits until their connections ended.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	for _, ln := range s.listeners {
		_ = ln.Close()
	}
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	// In parallel: each Close may wait up to a second for a client that
	// reads nothing.
	var closing sync.WaitGroup
	for _, c := range conns {
		closing.Go(func() { c.Close(packets.ErrServerShuttingDown) })
	}
	closing.Wait()
	s.wg.Wait()
	return nil
}

// Publish sends a QoS 1 message to client id when its session holds a
// subscription matching topic. A connected client gets it at once unless
// its receive quota is used up; a session whose client is offline keeps
// it (up to MaxPending) for its next connection. It reports whether a
// matching session took the message.
func (s *Server) Publish(id, topic string, payload []byte, props *packets.Properties) (bool, error) {
	if s.isClosed() {
		return false, ErrClosed
	}
	ss := s.session(id)
	if ss == nil {
		return false, nil
	}
	msg := &message{topic: topic, payload: payload}
	if props != nil {
		msg.responseTopic, msg.correlation = props.ResponseTopic, props.CorrelationData
	}
	return ss.publish(msg)
}

// Subscribed reports whether client id's session holds a subscription
// matching topic.
func (s *Server) Subscribed(id, topic string) bool {
	ss := s.session(id)
	if ss == nil {
		return false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.matches(topic)
}

// Discard drops the session of client id while no connection holds it,
// as if it had expired, and reports whether there was one: for a client
// whose session goes on at another server (a node of a cluster that took
// the client over), so that nothing kept here reaches it later.
func (s *Server) Discard(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil || ss.conn.Load() != nil {
		return false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(s.sessions, id)
	ss.discardLocked()
	return true
}

func (s *Server) session(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// expireSessions drops the sessions of offline clients once their expiry
// interval passed.
func (s *Server) expireSessions() {
	defer s.wg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.dropExpired(s.opts.Now())
		}
	}
}

// dropExpired drops the offline sessions whose expiry is before now.
func (s *Server) dropExpired(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ss := range s.sessions {
		if ss.conn.Load() != nil {
			continue // online: its lock may be held by a slow write
		}
		ss.mu.Lock()
		if !ss.expiresAt.IsZero() && now.After(ss.expiresAt) {
			delete(s.sessions, id)
			ss.discardLocked()
		}
		ss.mu.Unlock()
	}
}
