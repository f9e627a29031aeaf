package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// statusSubject is the subject every node answers with its NodeStatus: a
// request on it gathers the live nodes of the cluster.
const statusSubject = "fleetcam.nodes.status"

// StatusWait is how long a gathering of node statuses collects answers:
// every live node answers at once, so a node that has not answered by
// then is as good as gone.
const StatusWait = 500 * time.Millisecond

// NodeStatus is what one node says of itself when asked (GET /v2/cluster,
// `fleetcam cluster status`).
type NodeStatus struct {
	NodeID string `json:"nodeId"`
	// Devices counts the devices connected to the node.
	Devices int `json:"devices"`
	// StartedAt is when the node's process started.
	StartedAt time.Time `json:"startedAt"`
}

// answerStatus answers a gathering of node statuses with this node's.
func (n *Node) answerStatus(m *nats.Msg) {
	raw, _ := json.Marshal(NodeStatus{NodeID: n.id, Devices: n.b.DevicesOnline(), StartedAt: n.started})
	_ = m.Respond(raw)
}

// Status gathers the statuses of the cluster's live nodes, this one's
// included, ordered by node id. It fails with ErrUnavailable while NATS
// cannot be reached.
func (n *Node) Status(ctx context.Context) ([]NodeStatus, error) {
	if !n.nc.IsConnected() {
		return nil, ErrUnavailable
	}
	return GatherStatus(ctx, n.nc, StatusWait)
}

// pingWait bounds the wait for a node's answer to a ping. A node that
// lives answers at once; NATS itself answers "no responders" at once for
// a node with no connection, so the bound only matters for a node that
// is connected but too busy to answer, which counts as alive.
const pingWait = 2 * time.Second

// Gone reports whether no process of node answers on NATS: NATS knows of
// no subscriber to the node's ping subject, so the node's NATS connection
// is gone (closed by a process that ended, or given up by the NATS server
// for a host that vanished). A node that answers, or that NATS says is
// subscribed but does not answer in time, is not gone. It fails with
// ErrUnavailable while this node cannot reach NATS, and with another
// error when NATS cannot tell: then nothing may be concluded.
func (n *Node) Gone(ctx context.Context, node string) (bool, error) {
	if !n.nc.IsConnected() {
		return false, ErrUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, pingWait)
	defer cancel()
	_, err := n.nc.RequestWithContext(ctx, nodeSubject(node, "ping"), nil)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, nats.ErrNoResponders):
		return true, nil
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return false, nil
	}
	return false, fmt.Errorf("cluster: ping node %s: %w", node, err)
}

// Reachable reports whether this node reaches NATS, so the other nodes'
// devices (GET /readyz).
func (n *Node) Reachable() bool { return n.nc.IsConnected() }

// GatherStatus asks every node on nc's NATS for its status and collects
// the answers that arrive within wait (or until ctx ends), ordered by
// node id: a scatter-gather on one request subject with a reply inbox of
// its own, since NATS request/reply keeps only the first answer.
func GatherStatus(ctx context.Context, nc *nats.Conn, wait time.Duration) ([]NodeStatus, error) {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("cluster: gather node status: %w", err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(statusSubject, inbox, nil); err != nil {
		return nil, fmt.Errorf("cluster: gather node status: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var nodes []NodeStatus
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: gather node status: %w", err)
		}
		var s NodeStatus
		if json.Unmarshal(m.Data, &s) == nil && s.NodeID != "" {
			nodes = append(nodes, s)
		}
	}
	slices.SortFunc(nodes, func(a, b NodeStatus) int { return strings.Compare(a.NodeID, b.NodeID) })
	return nodes, nil
}
