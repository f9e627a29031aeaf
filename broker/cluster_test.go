package broker

import (
	"strings"
	"sync"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// nodeCalls records what a broker tells its cluster.
type nodeCalls struct {
	mu           sync.Mutex
	connected    []string // imei conn prev
	disconnected []string // imei conn
}

func (n *nodeCalls) NodeID() string { return "node-a" }

func (n *nodeCalls) Connected(imei, conn, prev string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.connected = append(n.connected, imei+" "+conn+" "+prev)
}

func (n *nodeCalls) Disconnected(imei, conn string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.disconnected = append(n.disconnected, imei+" "+conn)
}

func (n *nodeCalls) calls() (connected, disconnected []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.connected...), append([]string(nil), n.disconnected...)
}

// putLink stores imei as connected through conn.
func (e *env) putLink(imei, conn string) {
	e.t.Helper()
	err := e.db.Update(e.t.Context(), store.Actor{Source: "system"}, func(tx *store.Tx) error {
		return tx.PutDeviceLink(&store.DeviceLink{IMEI: imei, Presence: store.PresenceOnline, ConnectionID: conn})
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// TestClusterNodeStartsWithItsOwnConnectionsOnly: a node of a cluster that
// starts marks offline the connections it recorded in an earlier run, and
// leaves those of other nodes, which are live.
func TestClusterNodeStartsWithItsOwnConnectionsOnly(t *testing.T) {
	var mine, theirs string
	e := newEnvWith(t, nil, func(e *env) {
		e.srv.Cluster = &nodeCalls{}
		mine, theirs = e.addDevice(1), e.addDevice(2)
		e.putLink(mine, "node-a/old")
		e.putLink(theirs, "node-b/live")
	})
	if l := e.link(mine); l.Presence != store.PresenceOffline || l.ConnectionID != "" {
		t.Errorf("this node's stale connection: %+v", l)
	}
	if l := e.link(theirs); l.Presence != store.PresenceOnline || l.ConnectionID != "node-b/live" {
		t.Errorf("another node's connection: %+v", l)
	}
}

// TestClusterNodeTellsConnectionsAndTakeOver: connection ids name the
// node; the cluster hears of each recorded connection with the one it
// replaced and of its end; and a connection another node took over ends
// with DISCONNECT 0x8E, its session dropped.
func TestClusterNodeTellsConnectionsAndTakeOver(t *testing.T) {
	calls := &nodeCalls{}
	var id string
	e := newEnvWith(t, nil, func(e *env) {
		e.srv.Cluster = calls
		id = e.addDevice(1)
	})
	// The device was last connected to node-b.
	e.putLink(id, "node-b/earlier")
	rc, ack := e.rawConnectWith(5, id, id, e.bootstrapPassword(id), func(pk *packets.Packet) {
		expiry := uint32(300)
		pk.Properties.SessionExpiryInterval, pk.Properties.SessionExpiryIntervalFlag = expiry, true
	})
	if ack.ReasonCode != 0 {
		t.Fatalf("connect: reason 0x%02X", ack.ReasonCode)
	}
	rc.Subscribe(1, protocol.DownFilter(id))
	conn := e.link(id).ConnectionID
	if !strings.HasPrefix(conn, "node-a/") {
		t.Fatalf("connection id %q does not name the node", conn)
	}
	connected, _ := calls.calls()
	if len(connected) != 1 || connected[0] != id+" "+conn+" node-b/earlier" {
		t.Fatalf("the cluster was told %q", connected)
	}
	if e.srv.TakenOver(id, "node-a/another") {
		t.Fatal("a connection id the device does not hold ended its connection")
	}
	if !e.srv.TakenOver(id, conn) {
		t.Fatal("TakenOver did not find the device's connection")
	}
	for {
		pk := rc.Read()
		if pk.FixedHeader.Type == packets.Publish {
			continue
		}
		if pk.FixedHeader.Type != packets.Disconnect || pk.ReasonCode != packets.ErrSessionTakenOver.Code {
			t.Fatalf("got %s with reason 0x%02X, want DISCONNECT 0x8E", packets.PacketNames[pk.FixedHeader.Type], pk.ReasonCode)
		}
		break
	}
	waitFor(t, "the connection's end told and its session dropped", func() bool {
		_, disconnected := calls.calls()
		return len(disconnected) == 1 && disconnected[0] == id+" "+conn &&
			!e.srv.mqtt.Subscribed(id, protocol.Topic(id, protocol.TopicCommand))
	})
}
