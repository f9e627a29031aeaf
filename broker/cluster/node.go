// Package cluster makes a broker one node of a fleetcam cluster: several
// fleetcam processes that share one PostgreSQL database and reach each
// other's devices over NATS (docs/cluster.md). A Node owns the NATS
// connection. The broker tells it about its devices (broker.Cluster); the
// API reaches every device of the cluster through it, with the methods
// the broker has for its own (Send, Enqueue, PushConfig, Online,
// Disconnect): a device connected to this node is the broker's, any other
// is asked over NATS of the node that holds it.
//
// Subjects. While a node holds a device it subscribes to
// fleetcam.device.<imei>.*, so the NATS server's interest in a device's
// subjects is where the device is: it appears with the connection and
// goes with it, or with the node's NATS connection when the node dies.
//
//	fleetcam.device.<imei>.command     request: run a command, answer the device's reply
//	fleetcam.device.<imei>.where       request: the holder answers its node id
//	fleetcam.device.<imei>.config      push the desired configuration now
//	fleetcam.device.<imei>.queued      send the queued commands now
//	fleetcam.device.<imei>.disconnect  end the connection (0x98, removed)
//	fleetcam.node.<node>.takeover      a connection of this node was replaced
//	fleetcam.node.<node>.ping          request: the node answers while it lives (Gone)
//	fleetcam.device.<imei>.<verb>      request: a handler of the API (HandleHeld)
//	fleetcam.nodes.status              request: every node answers its NodeStatus
//	fleetcam.api.>                     the API's own subjects (Request, Publish, Subscribe)
//
// Takeover is ordered by PostgreSQL, not by NATS: the transaction that
// records a device's new connection reads the one it replaces, so the node
// that commits later tells the node of the earlier connection, by name,
// to end it (broker.Server.TakenOver). Two connections opened at once on
// two nodes leave the one committed last, whatever order their messages
// take.
package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/store"
)

// ErrUnavailable means a device that is not connected to this node cannot
// be reached because NATS cannot be: it may be connected to another node.
// The API answers 503 ServiceUnavailableError.
var ErrUnavailable = errors.New("cluster: the other nodes cannot be reached")

// Tuning that is not configuration.
const (
	// replyMargin is how much longer a node waits for another node's
	// answer to a command than the device is given to answer it.
	replyMargin = 2 * time.Second
	// whereTimeout bounds the wait for a holder to say it holds a device.
	whereTimeout = 2 * time.Second
	// inboxSize is how many device messages wait for a worker; NATS drops
	// what comes beyond it (a slow consumer), which costs an immediate
	// push, never a record.
	inboxSize = 8192
	// workers handle device messages; commands get a goroutine each, as
	// they wait for the device.
	workers = 4
)

// Options configure a Node.
type Options struct {
	// URL names the NATS servers, separated by commas (cluster.natsURL).
	URL string
	// NodeID names this node (cluster.nodeId).
	NodeID string
	// Broker is this node's broker; set the Node as its Cluster before it starts.
	Broker *broker.Server
	// CommandTimeout is how long a device is given to answer a command
	// (mqtt.commandTimeout).
	CommandTimeout time.Duration
	Log            *slog.Logger
}

// Node is this process as one node of the cluster.
type Node struct {
	id      string
	b       *broker.Server
	log     *slog.Logger
	timeout time.Duration
	nc      *nats.Conn

	inbox    chan *nats.Msg
	takeover *nats.Subscription
	status   *nats.Subscription
	ping     *nats.Subscription
	started  time.Time

	mu       sync.Mutex
	held     map[string]*holding // by IMEI
	handlers map[string]HeldHandler

	stop     chan struct{}
	workers  sync.WaitGroup
	commands sync.WaitGroup
}

// holding is a device this node holds: its current connection and the
// subscription to its subjects.
type holding struct {
	conn string
	sub  *nats.Subscription
}

var _ broker.Cluster = (*Node)(nil)

// Connect joins the cluster: it connects to NATS and answers for this
// node. Should NATS be down, the node starts all the same, alone until
// NATS is back (the client reconnects by itself, forever).
func Connect(o Options) (*Node, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	n := &Node{id: o.NodeID, b: o.Broker, timeout: o.CommandTimeout,
		log:   o.Log.With("component", "cluster", "node", o.NodeID),
		inbox: make(chan *nats.Msg, inboxSize), held: map[string]*holding{}, stop: make(chan struct{}),
		started: time.Now().UTC().Truncate(time.Second)}
	nc, err := nats.Connect(o.URL, nats.Name("fleetcam "+o.NodeID),
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second),
		// Nothing waits in a buffer while NATS is away: what cannot go
		// now fails now, and the API says so.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			n.log.Warn("NATS connection lost: devices on other nodes cannot be reached until it is back", "err", err)
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			n.log.Info("NATS connection back")
			go n.reconcile()
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("cluster: cluster.natsURL: %w", err)
	}
	n.nc = nc
	if !nc.IsConnected() {
		n.log.Warn("NATS cannot be reached yet; starting alone and connecting in the background", "url", o.URL)
	}
	n.takeover, err = nc.Subscribe(nodeSubject(n.id, "takeover"), n.takenOver)
	if err == nil {
		n.status, err = nc.Subscribe(statusSubject, n.answerStatus)
	}
	if err == nil {
		n.ping, err = nc.Subscribe(nodeSubject(n.id, "ping"), func(m *nats.Msg) { _ = m.Respond([]byte(n.id)) })
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("cluster: subscribe: %w", err)
	}
	for range workers {
		n.workers.Go(n.work)
	}
	return n, nil
}

// NodeID implements broker.Cluster.
func (n *Node) NodeID() string { return n.id }

// Close leaves the cluster: this node answers for no device any more. The
// broker must be closed first.
func (n *Node) Close() {
	n.mu.Lock()
	for imei, h := range n.held {
		_ = h.sub.Unsubscribe()
		delete(n.held, imei)
	}
	n.mu.Unlock()
	_ = n.takeover.Unsubscribe()
	_ = n.status.Unsubscribe()
	_ = n.ping.Unsubscribe()
	n.nc.Close()
	close(n.stop)
	n.workers.Wait()
	n.commands.Wait()
}

func deviceSubject(imei, verb string) string { return "fleetcam.device." + imei + "." + verb }

func nodeSubject(node, verb string) string { return "fleetcam.node." + node + "." + verb }

// takeoverNotice names a connection that a newer one replaced.
type takeoverNotice struct {
	IMEI string `json:"imei"`
	Conn string `json:"conn"`
}

// Connected implements broker.Cluster: the node answers for the device
// from now on, and the node of the connection it replaced, if another,
// is told to end that one.
func (n *Node) Connected(imei, conn, prev string) {
	n.mu.Lock()
	if h := n.held[imei]; h != nil {
		h.conn = conn
	} else if sub, err := n.nc.ChanSubscribe(deviceSubject(imei, "*"), n.inbox); err != nil {
		n.log.Error("subscribe to a device's subjects; other nodes cannot reach it", "imei", imei, "err", err)
	} else {
		n.held[imei] = &holding{conn: conn, sub: sub}
	}
	n.mu.Unlock()
	if node := broker.NodeOf(prev); node != "" && node != n.id {
		raw, _ := json.Marshal(takeoverNotice{IMEI: imei, Conn: prev})
		if err := n.nc.Publish(nodeSubject(node, "takeover"), raw); err != nil {
			n.log.Warn("tell a node its device connection was taken over; it ends when NATS is back", "imei", imei, "to", node, "err", err)
		}
	}
}

// Disconnected implements broker.Cluster.
func (n *Node) Disconnected(imei, conn string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if h := n.held[imei]; h != nil && h.conn == conn {
		_ = h.sub.Unsubscribe()
		delete(n.held, imei)
	}
}

// takenOver ends the connection a takeover notice names.
func (n *Node) takenOver(m *nats.Msg) {
	var t takeoverNotice
	if err := json.Unmarshal(m.Data, &t); err != nil || !store.ValidIMEI(t.IMEI) {
		n.log.Warn("malformed takeover notice", "subject", m.Subject)
		return
	}
	n.b.TakenOver(t.IMEI, t.Conn)
}

// reconcile makes up, after NATS was away, for the messages this node may
// have missed meanwhile: it ends the connections the store says another
// connection replaced (their takeover notices), and sends the devices it
// holds any configuration they have not acknowledged and any queued
// command not yet sent on their connection (pushes and queued commands
// made through other nodes), and it disconnects the devices removed from
// the inventory meanwhile (0x98).
func (n *Node) reconcile() {
	n.mu.Lock()
	held := make(map[string]string, len(n.held))
	for imei, h := range n.held {
		held[imei] = h.conn
	}
	n.mu.Unlock()
	for imei, conn := range held {
		dl, err := n.b.Presence(imei)
		if errors.Is(err, store.ErrNotFound) {
			n.b.Disconnect(imei)
			continue
		}
		if err != nil {
			n.log.Warn("read a device's connection after NATS was away", "imei", imei, "err", err)
			continue
		}
		if dl.ConnectionID != "" && dl.ConnectionID != conn {
			n.b.TakenOver(imei, conn)
			continue
		}
		if err := n.b.PushConfig(imei); err != nil {
			n.log.Warn("push configuration after NATS was away", "imei", imei, "err", err)
		}
		n.b.DeliverQueued(imei)
	}
}

// work handles the messages for the devices this node holds until Close.
func (n *Node) work() {
	for {
		select {
		case <-n.stop:
			return
		case m := <-n.inbox:
			n.handle(m)
		}
	}
}

// handle carries out one message for a device of this node.
func (n *Node) handle(m *nats.Msg) {
	parts := strings.Split(m.Subject, ".")
	if len(parts) != 4 {
		return
	}
	imei, verb := parts[2], parts[3]
	switch verb {
	case "command":
		n.commands.Go(func() { n.answerCommand(imei, m) })
	case "where":
		if n.b.Online(imei) {
			_ = m.Respond([]byte(n.id))
		}
	case "config":
		if err := n.b.PushConfig(imei); err != nil {
			n.log.Warn("push configuration; it is sent again on the next connection", "imei", imei, "err", err)
		}
	case "queued":
		n.b.DeliverQueued(imei)
	case "disconnect":
		n.b.Disconnect(imei)
	default:
		if fn := n.handler(verb); fn != nil && m.Reply != "" {
			n.commands.Go(func() { n.answerHeld(imei, fn, m) })
		}
	}
}
