package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/store"
)

// The cluster's promises, each shown with three nodes on one PostgreSQL
// database and one NATS server (cluster_env_test.go).

// storedConnection is the device's connection as the store records it.
func (e *clusterEnv) storedConnection(imei string) store.DeviceLink {
	e.t.Helper()
	var dl store.DeviceLink
	err := e.nodes[0].a.db.View(e.t.Context(), func(tx *store.Tx) error {
		l, err := tx.DeviceLink(imei)
		if err == nil {
			dl = *l
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return dl
}

// TestClusterTakeover: a device whose old connection node A still holds
// connects to node B; A ends the old one with DISCONNECT 0x8E within a
// second, and the device is B's alone.
func TestClusterTakeover(t *testing.T) {
	e := startCluster(t, 3, nil)
	imei := e.addDevice("35693810001000", "Truck 10")
	old := e.rawDevice(0, imei)
	eventually(t, "the device recorded on node-a", func() bool {
		return strings.HasPrefix(e.storedConnection(imei).ConnectionID, "node-a/")
	})
	e.rawDevice(1, imei)
	if code := disconnectedWith(old, time.Second); code != int(packets.ErrSessionTakenOver.Code) {
		t.Fatalf("node-a ended the old connection with %d within a second; want DISCONNECT 0x8E", code)
	}
	eventually(t, "the device held by node-b alone", func() bool { return e.holder(imei) == "node-b" })
	if dl := e.storedConnection(imei); !strings.HasPrefix(dl.ConnectionID, "node-b/") || dl.Presence != store.PresenceOnline {
		t.Fatalf("the store records %+v; want node-b's connection, online", dl)
	}
}

// TestClusterRemoval: removing a device through node C ends its
// connection on node A with DISCONNECT 0x98.
func TestClusterRemoval(t *testing.T) {
	e := startCluster(t, 3, nil)
	imei := e.addDevice("35693810001100", "Truck 11")
	rc := e.rawDevice(0, imei)
	eventually(t, "the device held by node-a", func() bool { return e.holder(imei) == "node-a" })
	if status, out := e.nodes[2].c.call("DELETE", e.org+"/devices/"+imei, e.tok, nil); status != http.StatusOK {
		t.Fatalf("remove through node-c: %d %v", status, out)
	}
	if code := disconnectedWith(rc, 5*time.Second); code != int(packets.ErrAdministrativeAction.Code) {
		t.Fatalf("node-a ended the removed device's connection with %d; want DISCONNECT 0x98", code)
	}
	eventually(t, "no node to hold the removed device", func() bool { return e.holder(imei) == "" })
}
