package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
	"golang.org/x/time/rate"
)

// connectTimeout bounds the wait for a new connection's TLS handshake and
// CONNECT packet; mochi replaces the deadline with the keepalive once connected.
const connectTimeout = 10 * time.Second

// guardedListener wraps a mochi listener so that every connection runs under
// guard: a panic in mochi's packet handling (v2.7.9 has no recover, and a
// truncated MQTT 5 SUBSCRIBE panics it) closes that connection only.
type guardedListener struct {
	listeners.Listener
	s *Server
}

// Serve starts the wrapped listener with the guarded establish function.
func (g *guardedListener) Serve(establish listeners.EstablishFn) {
	g.Listener.Serve(g.s.guard(establish))
}

// Close stops the wrapped listener, disconnecting its clients with the
// broker's own function: mochi's (Clients.GetByListener) takes its read lock
// twice and deadlocks against a client ending at the same moment.
func (g *guardedListener) Close(_ listeners.CloseFn) {
	g.Listener.Close(g.s.closeClients)
}

// closeClients disconnects the clients of listener id.
func (s *Server) closeClients(id string) {
	for _, cl := range s.mochi.Clients.GetAll() {
		if cl.Net.Listener == id && !cl.Closed() {
			_ = s.mochi.DisconnectClient(cl, packets.ErrServerShuttingDown)
		}
	}
}

// guard wraps the per-connection function of mochi.
func (s *Server) guard(next listeners.EstablishFn) listeners.EstablishFn {
	return func(id string, c net.Conn) (err error) {
		_ = c.SetReadDeadline(time.Now().Add(connectTimeout))
		defer func() {
			l := s.links.forgetConn(c)
			r := recover()
			if r != nil {
				s.metrics.panics.Inc()
				s.log.Error("connection handler panicked; connection closed", "listener", id,
					"remote", c.RemoteAddr().String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				_ = c.Close()
				err = fmt.Errorf("broker: connection from %s: recovered panic: %v", c.RemoteAddr(), r)
			}
			if l == nil {
				return
			}
			defer close(l.done)
			// mochi skips its disconnect hook when a connection ends early
			// (a failed CONNACK write, a panic): end the device's presence here.
			s.disconnected(l.cl)
			if r != nil {
				s.afterPanic(l.cl)
			}
		}()
		if err := next(id, c); err != nil {
			// Ends of connections are routine; refusals and panics are
			// logged where they happen.
			s.log.Debug("connection ended", "listener", id, "remote", c.RemoteAddr().String(), "error", err)
		}
		return nil
	}
}

// ipLimiter limits new connections per source address.
type ipLimiter struct {
	mu    sync.Mutex
	every rate.Limit
	burst int
	m     map[string]*rate.Limiter
}

func newIPLimiter(perSecond float64, burst int) *ipLimiter {
	return &ipLimiter{every: rate.Limit(perSecond), burst: max(burst, 1), m: map[string]*rate.Limiter{}}
}

// allow reports whether remote (host:port) may connect now. A rate of 0 or
// less disables the limit.
func (l *ipLimiter) allow(remote string, now time.Time) bool {
	if l.every <= 0 {
		return true
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[host]
	if !ok {
		lim = rate.NewLimiter(l.every, l.burst)
		l.m[host] = lim
	}
	return lim.AllowN(now, 1)
}

// sweep forgets addresses whose bucket has refilled: they are idle.
func (l *ipLimiter) sweep(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for host, lim := range l.m {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.m, host)
		}
	}
}

// wsListener serves MQTT over WebSocket. Unlike mochi's own it binds in
// Init, so an address with port 0 reports the port it got.
type wsListener struct {
	id, address string
	ln          net.Listener
	srv         *http.Server
	upgrader    websocket.Upgrader
	log         *slog.Logger
	establish   listeners.EstablishFn
	mu          sync.Mutex
}

func newWSListener(id, address string) *wsListener {
	return &wsListener{id: id, address: address, upgrader: websocket.Upgrader{
		Subprotocols: []string{"mqtt"},
		// Devices are not browsers: there is no origin to check.
		CheckOrigin: func(*http.Request) bool { return true },
	}}
}

// ID names the listener.
func (l *wsListener) ID() string { return l.id }

// Protocol is "ws".
func (l *wsListener) Protocol() string { return "ws" }

// Address is the bound address once Init ran.
func (l *wsListener) Address() string {
	if l.ln != nil {
		return l.ln.Addr().String()
	}
	return l.address
}

// Init binds the address.
func (l *wsListener) Init(log *slog.Logger) error {
	l.log = log
	ln, err := net.Listen("tcp", l.address)
	if err != nil {
		return err
	}
	l.ln = ln
	mux := http.NewServeMux()
	mux.HandleFunc("/", l.handle)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: connectTimeout}
	return nil
}

// Serve accepts WebSocket upgrades until Close.
func (l *wsListener) Serve(establish listeners.EstablishFn) {
	l.mu.Lock()
	l.establish = establish
	l.mu.Unlock()
	if err := l.srv.Serve(l.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		l.log.Error("websocket listener stopped", "error", err)
	}
}

func (l *wsListener) handle(w http.ResponseWriter, r *http.Request) {
	c, err := l.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	l.mu.Lock()
	establish := l.establish
	l.mu.Unlock()
	if err := establish(l.id, &wsConn{Conn: c.NetConn(), c: c}); err != nil {
		l.log.Debug("websocket connection ended", "error", err)
	}
}

// Close stops accepting and disconnects the listener's clients.
func (l *wsListener) Close(closeClients listeners.CloseFn) {
	closeClients(l.id)
	if l.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = l.srv.Shutdown(ctx)
	}
}

// wsConn carries MQTT bytes in binary WebSocket messages.
type wsConn struct {
	net.Conn
	c *websocket.Conn
	r io.Reader
}

// Read reads the next bytes of the current binary message, moving on to the
// next message when one ends.
func (ws *wsConn) Read(p []byte) (int, error) {
	for {
		if ws.r == nil {
			op, r, err := ws.c.NextReader()
			if err != nil {
				return 0, err
			}
			if op != websocket.BinaryMessage {
				return 0, errors.New("broker: websocket message is not binary")
			}
			ws.r = r
		}
		n, err := ws.r.Read(p)
		if errors.Is(err, io.EOF) {
			ws.r = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

// Write sends p as one binary message.
func (ws *wsConn) Write(p []byte) (int, error) {
	if err := ws.c.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}
