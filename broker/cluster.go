package broker

import (
	"context"
	"crypto/rand"
	"strings"

	"github.com/fleetcam/fleetcam/store"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Cluster is what a broker that is one node of a cluster tells the other
// nodes about its devices (broker/cluster implements it over NATS). Set
// it on Server before Start; nil, the default, is a broker alone, which
// says nothing to anyone.
type Cluster interface {
	// NodeID names this node. Every connection id the broker records
	// begins with it (NodeOf), so that the store tells which node holds a
	// device.
	NodeID() string
	// Connected is told once conn is recorded in the store as the
	// device's current connection, in place of prev (empty when none
	// was). The store orders the connections of a device: conn was
	// committed after prev, so a node that still holds prev must end it.
	Connected(imei, conn, prev string)
	// Disconnected is told when the device's current connection on this
	// node ended.
	Disconnected(imei, conn string)
}

// connSep separates the node from the rest of a connection id.
const connSep = "/"

// NodeOf returns the node that recorded connection id conn; "" for a
// connection of a broker alone.
func NodeOf(conn string) string {
	node, _, found := strings.Cut(conn, connSep)
	if !found {
		return ""
	}
	return node
}

// newConnID returns the id of a new connection: random, after this node's
// id in a cluster.
func (s *Server) newConnID() string {
	if s.Cluster == nil {
		return rand.Text()
	}
	return s.Cluster.NodeID() + connSep + rand.Text()
}

// markOwnOffline marks offline the devices the store says are connected
// to this broker, each with the deviceStatus message a disconnect records
// (store.Tx.MarkOffline): as the broker starts, when none can be connected
// yet, so these are what an earlier run left (a crash), and as it stops,
// once its connections ended. A broker alone owns every connection; a node
// of a cluster only those it recorded, the others' being live elsewhere.
func (s *Server) markOwnOffline() error {
	prefix := ""
	if s.Cluster != nil {
		prefix = s.Cluster.NodeID() + connSep
	}
	return s.db.Update(context.Background(), store.Actor{Source: "system"}, func(tx *store.Tx) error {
		_, err := tx.MarkOffline(tx.Now(), prefix)
		return err
	})
}

// TakenOver ends the device's connection conn on this node (MQTT 5:
// DISCONNECT 0x8E, session taken over) once another node of the cluster
// has recorded a newer connection of the device, and then drops the
// device's session here, since it goes on there: nothing kept here may
// reach the device on a later connection. A device's other connections
// on this node are not touched. It reports whether conn was connected.
func (s *Server) TakenOver(imei, conn string) bool {
	l := s.links.byIMEI(imei)
	if l == nil || l.id != conn {
		return false
	}
	s.log.Info("device connection taken over by another node", "imei", imei, "connection", conn)
	l.conn.Close(packets.ErrSessionTakenOver)
	go func() {
		<-l.conn.Done()
		s.mqtt.Discard(imei)
	}()
	return true
}
