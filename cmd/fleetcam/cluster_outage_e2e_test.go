package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/internal/pgserver"
)

// TestClusterPostgresOutage: while PostgreSQL is down a node acknowledges
// no device message (no PUBACK without a commit) and answers API writes
// 503; /readyz says so. When the database is back both recover by
// themselves: the device's kept event is stored and acknowledged, and the
// same write succeeds.
func TestClusterPostgresOutage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv, err := pgserver.Start(ctx, pgserver.Options{Parent: pgserver.MemoryDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	if err := srv.Exec(ctx, "postgres", "CREATE DATABASE fleetcam"); err != nil {
		t.Fatal(err)
	}
	url := srv.URL("fleetcam")
	e := startClusterOn(t, 2, url, nil)
	imei := e.addDevice("35693810002100", "Truck 21")
	other := e.addDevice("35693810002190", "Truck 21b")

	var mu sync.Mutex
	acked := map[string]bool{}
	dev, _ := e.simulateWith(0, imei, stateDir(t), func(o *devicesim.Options) {
		o.ReconnectDelay = 100 * time.Millisecond
		o.OnAck = func(a devicesim.Ack) {
			mu.Lock()
			acked[a.Key] = true
			mu.Unlock()
		}
	})
	isAcked := func(key string) bool {
		mu.Lock()
		defer mu.Unlock()
		return acked[key]
	}
	eventually(t, "the device connected to node-a", func() bool { return dev.Connected() && e.holder(imei) == "node-a" })
	before, err := dev.Emit(ctx, devicesim.EventSpec{Type: "accOn"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the event before the outage acknowledged", func() bool { return isAcked(before.ID) })

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	rename := func(name string) (int, map[string]any) {
		return e.nodes[1].c.call("PATCH", "/v2/devices/"+imei, e.tok, map[string]any{"name": name})
	}
	if status, out := rename("Truck 21 (outage)"); status != http.StatusServiceUnavailable || out["error"] != "ServiceUnavailableError" {
		t.Fatalf("an API write while PostgreSQL is down: %d %v; want 503 ServiceUnavailableError", status, out)
	}
	if status, out := e.nodes[1].c.call("POST", "/v2/authenticate", "", map[string]any{"email": partnerEmail, "password": partnerPassword}); status != http.StatusServiceUnavailable || out["error"] != "ServiceUnavailableError" {
		t.Fatalf("signing in while PostgreSQL is down: %d %v; want 503 ServiceUnavailableError", status, out)
	}
	if status, s := readyStatus(e.nodes[0]); status != http.StatusServiceUnavailable || s != "storeUnavailable" {
		t.Fatalf("readyz while PostgreSQL is down: %d %q; want 503 storeUnavailable", status, s)
	}

	// A device cannot authenticate: CONNACK 0x88, server unavailable.
	conn, err := net.Dial("tcp", e.nodes[1].a.broker.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if ack := mqtttest.New(t, conn, 5).Connect(other, legacyLogin(other)); ack.ReasonCode != packets.ErrServerUnavailable.Code {
		t.Fatalf("a device connecting while PostgreSQL is down: CONNACK 0x%02X, want 0x88", ack.ReasonCode)
	}

	// The event the device reports now cannot be committed: the node does
	// not acknowledge it and ends the connection, and the device keeps it.
	emitCtx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	during, err := dev.Emit(emitCtx, devicesim.EventSpec{Type: "accOff"})
	if err != nil && during.ID == "" {
		t.Fatal(err)
	}
	eventually(t, "node-a to end the connection whose message it cannot store", func() bool { return !dev.Connected() })
	if isAcked(during.ID) {
		t.Fatal("an event was acknowledged while PostgreSQL was down")
	}
	if dev.Pending() == 0 {
		t.Fatal("the device does not keep the unacknowledged event for its next connection")
	}

	if err := srv.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the kept event acknowledged once PostgreSQL is back", func() bool { return isAcked(during.ID) })
	var stored int
	if err := pgQuery(t, url, "SELECT count(*) FROM events WHERE imei = '"+imei+"' AND device_event_id IN ('"+
		before.ID+"', '"+during.ID+"')", &stored); err != nil || stored != 2 {
		t.Fatalf("events stored: %d, %v; want both", stored, err)
	}
	eventually(t, "API writes to succeed again", func() bool {
		status, _ := rename("Truck 21 (after)")
		return status == http.StatusOK
	})
	eventually(t, "readyz to answer ready again", func() bool {
		status, s := readyStatus(e.nodes[0])
		return status == http.StatusOK && s == "ready"
	})
}
