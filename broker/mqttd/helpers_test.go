package mqttd

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// patience bounds every wait of the tests for a condition: long enough for
// a machine whose two cores are busy with other work as well as with the
// tests under the race detector. A wait ends as soon as its condition
// holds, so on a quiet machine the bound costs nothing.
const patience = time.Minute

// blockedWriteTimeout is the write timeout of the tests whose client stops
// reading. What they check, that Close or another client does not wait
// for such a write, takes a small fraction of it on any machine; waiting
// for the write would take all of it.
const blockedWriteTimeout = 5 * time.Minute

// start is the test clock's first reading.
var start = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a server listening on 127.0.0.1:0 with a recording handler.
type env struct {
	t     *testing.T
	srv   *Server
	h     *handler
	clock *storetest.Clock
	addr  string
	// wantPanics is how many recovered panics the test provokes: any other
	// count fails it, as every panic in packet handling is a bug.
	wantPanics int64
}

// newEnv starts a server with opts (the test clock and a silent log unless set).
func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	e := &env{t: t, h: newHandler(), clock: storetest.NewClock(start)}
	if opts.Now == nil {
		opts.Now = e.clock.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	e.srv = New(opts, e.h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	if err := e.srv.Serve("test", ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if n := e.srv.Info().Panics.Load(); n != e.wantPanics {
			t.Errorf("the server recovered %d panics, want %d", n, e.wantPanics)
		}
	})
	t.Cleanup(func() { _ = e.srv.Close() })
	return e
}

// logBuffer collects a server's log lines; it is safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// newLog returns a logger that writes text lines, debug and above, to lb.
func (lb *logBuffer) newLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (lb *logBuffer) Write(p []byte) (int, error) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.buf.Write(p)
}

// lines returns the lines logged so far.
func (lb *logBuffer) lines() []string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return strings.Split(strings.TrimSuffix(lb.buf.String(), "\n"), "\n")
}

func (e *env) dial() net.Conn {
	e.t.Helper()
	nc, err := net.Dial("tcp", e.addr)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = nc.Close() })
	return nc
}

// raw dials the server as a raw client of protocol version 4 or 5.
func (e *env) raw(version byte) *mqtttest.Client {
	e.t.Helper()
	return mqtttest.New(e.t, e.dial(), version)
}

// rawConnect dials and connects client id (clean, keepalive 30) after edit
// adjusted the CONNECT, and returns the client and the CONNACK.
func (e *env) rawConnect(version byte, id string, edit func(*packets.Packet)) (*mqtttest.Client, packets.Packet) {
	e.t.Helper()
	rc := e.raw(version)
	return rc, rc.Connect(id, edit)
}

// conns is the number of connections the server is serving.
func (e *env) conns() int {
	e.srv.mu.Lock()
	defer e.srv.mu.Unlock()
	return len(e.srv.conns)
}

// settle waits until the server serves n connections.
func (e *env) settle(n int) {
	e.t.Helper()
	waitFor(e.t, "connections to settle", func() bool { return e.conns() == n })
}

// waitFor checks cond until it holds, for up to patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	storetest.Eventually(t, what, patience, 2*time.Millisecond, cond)
}

// event is one call of the handler.
type event struct {
	kind    string // connect, online, ready, publish, cansubscribe, subscribed, closed
	conn    *Conn
	id      string
	topic   string // publish: the resolved topic; cansubscribe: the filter
	payload []byte
	qos     byte
	pid     uint16
}

// handler records its calls and makes the decisions a test sets.
type handler struct {
	mu      sync.Mutex
	events  []event
	changed chan struct{} // closed and replaced on each event

	connect func(c *Conn, pk *packets.Packet) error
	online  func(c *Conn)
	publish func(c *Conn, pk *packets.Packet) error
	closing func(c *Conn) // runs in Closed before the call is recorded
	denied  map[string]bool
	panicIn map[string]bool // "kind:client id": the call panics
}

func newHandler() *handler {
	return &handler{changed: make(chan struct{}), denied: map[string]bool{}, panicIn: map[string]bool{}}
}

// set changes the handler's decisions under its lock.
func (h *handler) set(f func(h *handler)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

// record notes ev and panics when the test asked for a panic in ev.kind.
func (h *handler) record(ev event) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	close(h.changed)
	h.changed = make(chan struct{})
	boom := h.panicIn[ev.kind+":"+ev.id]
	h.mu.Unlock()
	if boom {
		panic("test handler panics in " + ev.kind)
	}
}

func (h *handler) Connect(c *Conn, pk *packets.Packet) error {
	h.record(event{kind: "connect", conn: c, id: c.ID()})
	h.mu.Lock()
	f := h.connect
	h.mu.Unlock()
	if f != nil {
		return f(c, pk)
	}
	return nil
}

func (h *handler) Online(c *Conn) {
	h.record(event{kind: "online", conn: c, id: c.ID()})
	h.mu.Lock()
	f := h.online
	h.mu.Unlock()
	if f != nil {
		f(c)
	}
}

func (h *handler) Ready(c *Conn) { h.record(event{kind: "ready", conn: c, id: c.ID()}) }

func (h *handler) Publish(c *Conn, pk *packets.Packet) error {
	h.record(event{kind: "publish", conn: c, id: c.ID(), topic: pk.TopicName,
		payload: slices.Clone(pk.Payload), qos: pk.FixedHeader.Qos, pid: pk.PacketID})
	h.mu.Lock()
	f := h.publish
	h.mu.Unlock()
	if f != nil {
		return f(c, pk)
	}
	return nil
}

func (h *handler) CanSubscribe(c *Conn, filter string) bool {
	h.record(event{kind: "cansubscribe", conn: c, id: c.ID(), topic: filter})
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.denied[filter]
}

func (h *handler) Subscribed(c *Conn) { h.record(event{kind: "subscribed", conn: c, id: c.ID()}) }

func (h *handler) Closed(c *Conn) {
	h.mu.Lock()
	f := h.closing
	h.mu.Unlock()
	if f != nil {
		f(c)
	}
	h.record(event{kind: "closed", conn: c, id: c.ID()})
}

// panicOn makes the handler's calls of kind for client id panic, or stop panicking.
func (h *handler) panicOn(kind, id string, on bool) {
	h.set(func(h *handler) { h.panicIn[kind+":"+id] = on })
}

// log returns the events so far.
func (h *handler) log() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// all returns the events of kind for client id.
func (h *handler) all(kind, id string) []event {
	var out []event
	for _, ev := range h.log() {
		if ev.kind == kind && ev.id == id {
			out = append(out, ev)
		}
	}
	return out
}

// await waits until there are n events of kind for client id and returns them.
func (h *handler) await(t *testing.T, kind, id string, n int) []event {
	t.Helper()
	deadline := time.After(patience)
	for {
		h.mu.Lock()
		ch := h.changed
		h.mu.Unlock()
		if evs := h.all(kind, id); len(evs) >= n {
			return evs
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %d %s events of %q (have %d)", n, kind, id, len(h.all(kind, id)))
		}
	}
}

// pahoClient is an MQTT 5 client that records what it receives.
type pahoClient struct {
	t            *testing.T
	c            *paho.Client
	ack          *paho.Connack
	got          chan *paho.Publish
	disconnected chan *paho.Disconnect
}

// pahoConnect connects an MQTT 5 client (clean start, receive maximum 16,
// keepalive 30) after edit adjusted its CONNECT; it returns the CONNACK error.
func (e *env) pahoConnect(id string, edit func(*paho.Connect)) (*pahoClient, error) {
	e.t.Helper()
	pc := &pahoClient{t: e.t, got: make(chan *paho.Publish, 64), disconnected: make(chan *paho.Disconnect, 1)}
	pc.c = paho.NewClient(paho.ClientConfig{
		Conn: e.dial(),
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			pc.got <- pr.Packet
			return true, nil
		}},
		OnServerDisconnect: func(d *paho.Disconnect) {
			select {
			case pc.disconnected <- d:
			default:
			}
		},
	})
	recvMax := uint16(16)
	cp := &paho.Connect{ClientID: id, KeepAlive: 30, CleanStart: true,
		Properties: &paho.ConnectProperties{ReceiveMaximum: &recvMax, RequestProblemInfo: true}}
	if edit != nil {
		edit(cp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ack, err := pc.c.Connect(ctx, cp)
	pc.ack = ack
	if err == nil {
		e.t.Cleanup(pc.close)
	}
	return pc, err
}

// mustPaho connects an MQTT 5 client or ends the test.
func (e *env) mustPaho(id string, edit func(*paho.Connect)) *pahoClient {
	e.t.Helper()
	pc, err := e.pahoConnect(id, edit)
	if err != nil {
		e.t.Fatalf("connect %s: %v", id, err)
	}
	return pc
}

func (pc *pahoClient) close() {
	_ = pc.c.Disconnect(&paho.Disconnect{})
	select {
	case <-pc.c.Done():
	case <-time.After(patience):
	}
}

func (pc *pahoClient) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	pc.t.Cleanup(cancel)
	return ctx
}

// next returns the next message the client received.
func (pc *pahoClient) next() *paho.Publish {
	pc.t.Helper()
	select {
	case p := <-pc.got:
		return p
	case <-time.After(patience):
		pc.t.Fatal("no message arrived")
		return nil
	}
}

// serverDisconnect returns the DISCONNECT the server sent.
func (pc *pahoClient) serverDisconnect() *paho.Disconnect {
	pc.t.Helper()
	select {
	case d := <-pc.disconnected:
		return d
	case <-time.After(patience):
		pc.t.Fatal("the server sent no DISCONNECT")
		return nil
	}
}

// subscribe subscribes at QoS 1 and returns the SUBACK's reason codes.
func (pc *pahoClient) subscribe(filters ...string) []byte {
	pc.t.Helper()
	s := &paho.Subscribe{}
	for _, f := range filters {
		s.Subscriptions = append(s.Subscriptions, paho.SubscribeOptions{Topic: f, QoS: 1})
	}
	ack, err := pc.c.Subscribe(pc.ctx(), s)
	if err != nil && ack == nil {
		pc.t.Fatalf("subscribe %v: %v", filters, err)
	}
	return ack.Reasons
}

// flood publishes 64 messages of 1 MiB (the default receive quota, so each
// is written at once) to id on topic, from another goroutine whose end it
// returns. A client that reads none of them soon has a write blocked.
func (e *env) flood(id, topic string) <-chan struct{} {
	done := make(chan struct{})
	payload := make([]byte, 1<<20)
	go func() {
		defer close(done)
		for range 64 {
			if _, err := e.srv.Publish(id, topic, payload, nil); err != nil {
				return
			}
		}
	}()
	return done
}

// awaitBlockedWrite waits until the server's writes stall: the client's and
// the server's socket buffers hold a few megabytes, so once the bytes sent
// stop growing beyond that, a write is blocked.
func (e *env) awaitBlockedWrite() {
	e.t.Helper()
	sent := int64(-1)
	storetest.Eventually(e.t, "a blocked write", patience, 50*time.Millisecond, func() bool {
		was := sent
		sent = e.srv.Info().BytesSent.Load()
		return sent == was && sent > 1<<20
	})
}
