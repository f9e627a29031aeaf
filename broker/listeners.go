package broker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"
)

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

// wsListener serves MQTT over WebSocket: each upgraded connection is
// handed to serve, which runs it to its end.
type wsListener struct {
	ln       net.Listener
	srv      *http.Server
	upgrader websocket.Upgrader
	serve    func(net.Conn)
}

// listenWS binds address and serves WebSocket upgrades on any path.
func listenWS(address string, serve func(net.Conn), log *slog.Logger) (*wsListener, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, err
	}
	l := &wsListener{ln: ln, serve: serve, upgrader: websocket.Upgrader{
		Subprotocols: []string{"mqtt"},
		// Devices are not browsers: there is no origin to check.
		CheckOrigin: func(*http.Request) bool { return true },
	}}
	l.srv = &http.Server{Handler: http.HandlerFunc(l.handle), ReadHeaderTimeout: connectTimeout}
	go func() {
		if err := l.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("websocket listener stopped", "error", err)
		}
	}()
	return l, nil
}

// Addr is the bound address.
func (l *wsListener) Addr() string { return l.ln.Addr().String() }

func (l *wsListener) handle(w http.ResponseWriter, r *http.Request) {
	c, err := l.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	l.serve(&wsConn{Conn: c.NetConn(), c: c})
}

// Close stops accepting upgrades. The MQTT server ends the connections.
func (l *wsListener) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.srv.Shutdown(ctx)
}

// wsConn carries MQTT bytes in binary WebSocket messages.
type wsConn struct {
	net.Conn
	c *websocket.Conn
	r io.Reader
	// writeDeadline is the deadline of the next write, in unix
	// nanoseconds (0: none). The WebSocket writer sets the socket's write
	// deadline to its own on every message, so Write hands it this one.
	writeDeadline atomic.Int64
}

// SetWriteDeadline bounds the next writes. It also applies to the socket
// at once, so that a write already blocked ends at the new deadline.
func (ws *wsConn) SetWriteDeadline(t time.Time) error {
	var n int64
	if !t.IsZero() {
		n = t.UnixNano()
	}
	ws.writeDeadline.Store(n)
	return ws.Conn.SetWriteDeadline(t)
}

// SetDeadline sets the read and write deadlines.
func (ws *wsConn) SetDeadline(t time.Time) error {
	if err := ws.Conn.SetReadDeadline(t); err != nil {
		return err
	}
	return ws.SetWriteDeadline(t)
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

// Write sends p as one binary message, within the write deadline. The
// MQTT server makes one write at a time on a connection.
func (ws *wsConn) Write(p []byte) (int, error) {
	var deadline time.Time
	if n := ws.writeDeadline.Load(); n != 0 {
		deadline = time.Unix(0, n)
	}
	_ = ws.c.SetWriteDeadline(deadline)
	if err := ws.c.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}
