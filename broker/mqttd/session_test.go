package mqttd

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
)

// leave connects id with edit, subscribes to filter and disconnects,
// leaving whatever session the CONNECT asked for.
func (e *env) leave(version byte, id, filter string, edit func(*packets.Packet)) {
	e.t.Helper()
	n := len(e.h.all("closed", id))
	rc, ack := e.rawConnect(version, id, edit)
	if ack.ReasonCode != 0 {
		e.t.Fatalf("connect %s: reason 0x%02X", id, ack.ReasonCode)
	}
	rc.Subscribe(1, filter)
	rc.Disconnect(nil)
	rc.Ended()
	e.h.await(e.t, "closed", id, n+1)
}

func TestCleanStartDiscardsSession(t *testing.T) {
	for _, version := range []byte{5, 4} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := newEnv(t, Options{})
			e.leave(version, "cam", "cam/down", withExpiry(60, false))
			e.publish("cam", "cam/down", "kept", true)
			rc, ack := e.rawConnect(version, "cam", withExpiry(60, true))
			if ack.SessionPresent {
				t.Error("clean start: CONNACK with session present")
			}
			if len(rc.Sync()) != 0 {
				t.Error("a message of the discarded session arrived")
			}
			if e.srv.Subscribed("cam", "cam/down") || e.srv.Info().Subscriptions.Load() != 0 {
				t.Error("clean start kept the subscriptions")
			}
		})
	}
}

// TestDiscardDropsOfflineSession: a session without a connection is
// dropped with what it kept; one a connection holds stays.
func TestDiscardDropsOfflineSession(t *testing.T) {
	e := newEnv(t, Options{})
	e.leave(5, "cam", "cam/down", withExpiry(60, false))
	e.publish("cam", "cam/down", "kept", true)
	if !e.srv.Discard("cam") {
		t.Fatal("Discard found no session to drop")
	}
	if e.srv.Subscribed("cam", "cam/down") || e.srv.Info().Subscriptions.Load() != 0 {
		t.Fatal("the discarded session's subscriptions remain")
	}
	rc, ack := e.rawConnect(5, "cam", withExpiry(60, false))
	if ack.SessionPresent {
		t.Error("CONNACK with session present after Discard")
	}
	if len(rc.Sync()) != 0 {
		t.Error("a message of the discarded session arrived")
	}
	rc.Subscribe(1, "cam/down")
	if e.srv.Discard("cam") || !e.srv.Subscribed("cam", "cam/down") {
		t.Fatal("Discard dropped the session of a connected client")
	}
}

func TestSessionEndsWithConnection(t *testing.T) {
	cases := []struct {
		name    string
		version byte
		edit    func(*packets.Packet)
	}{
		{"MQTT 5 without expiry", 5, withExpiry(0, false)},
		{"MQTT 3.1.1 clean", 4, withExpiry(0, true)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			e.leave(tc.version, "cam", "cam/down", tc.edit)
			if n := e.srv.Sessions(); n != 0 {
				t.Errorf("Sessions = %d after the connection ended, want 0", n)
			}
			if e.srv.Info().Subscriptions.Load() != 0 {
				t.Error("Subscriptions not released")
			}
			e.publish("cam", "cam/down", "x", false)
			_, ack := e.rawConnect(tc.version, "cam", withExpiry(0, false))
			if ack.SessionPresent {
				t.Error("CONNACK with session present for an ended session")
			}
		})
	}
}

func TestDisconnectChangesExpiry(t *testing.T) {
	u32 := func(v uint32) *uint32 { return &v }
	cases := []struct {
		name     string
		connect  uint32  // session expiry in the CONNECT
		leave    *uint32 // session expiry in the DISCONNECT
		code     byte    // the server's DISCONNECT, if any
		lasts    time.Duration
		maxLimit time.Duration
	}{
		{"zero to non-zero is a protocol error", 0, u32(60), 0x82, 0, 0},
		{"to zero ends the session", 10, u32(0), 0, 0, 0},
		{"raised", 10, u32(100), 0, 100 * time.Second, 0},
		{"lowered", 100, u32(10), 0, 10 * time.Second, 0},
		{"raised above the cap", 10, u32(1 << 20), 0, time.Hour, time.Hour},
		{"unchanged", 30, nil, 0, 30 * time.Second, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{MaxSessionExpiry: tc.maxLimit})
			rc, _ := e.rawConnect(5, "cam", withExpiry(tc.connect, true))
			rc.Subscribe(1, "cam/down")
			rc.Disconnect(tc.leave)
			got := rc.Ended()
			if tc.code != 0 {
				if len(got) != 1 || got[0].FixedHeader.Type != packets.Disconnect || got[0].ReasonCode != tc.code {
					t.Fatalf("server answered %d packets, want a DISCONNECT 0x%02X", len(got), tc.code)
				}
			} else if len(got) != 0 {
				t.Fatalf("server answered a DISCONNECT with %d packets", len(got))
			}
			e.h.await(t, "closed", "cam", 1)
			if tc.lasts == 0 {
				if n := e.srv.Sessions(); n != 0 {
					t.Fatalf("Sessions = %d, want the session ended", n)
				}
				return
			}
			e.srv.dropExpired(start.Add(tc.lasts - time.Second))
			if e.srv.Sessions() != 1 {
				t.Fatalf("session dropped before %v", tc.lasts)
			}
			e.srv.dropExpired(start.Add(tc.lasts + time.Second))
			if e.srv.Sessions() != 0 {
				t.Fatalf("session kept after %v", tc.lasts)
			}
		})
	}
}

func TestDropExpired(t *testing.T) {
	e := newEnv(t, Options{})
	e.leave(5, "short", "short/down", withExpiry(10, true))
	e.leave(5, "long", "long/down", withExpiry(100, true))
	e.leave(4, "legacy", "legacy/down", withExpiry(0, false)) // MaxSessionExpiry: 7 days
	online, _ := e.rawConnect(5, "online", withExpiry(10, true))
	online.Subscribe(1, "online/down")
	e.publish("short", "short/down", "waits", true)
	e.publish("online", "online/down", "in flight", true)
	info := e.srv.Info()
	if info.Subscriptions.Load() != 4 || info.Inflight.Load() != 1 {
		t.Fatalf("Subscriptions %d Inflight %d, want 4 1", info.Subscriptions.Load(), info.Inflight.Load())
	}

	e.srv.dropExpired(start.Add(50 * time.Second))
	if n := e.srv.Sessions(); n != 3 {
		t.Errorf("Sessions = %d, want 3", n)
	}
	if e.srv.session("short") != nil {
		t.Error("the expired session was kept")
	}
	for _, id := range []string{"long", "legacy", "online"} {
		if e.srv.session(id) == nil {
			t.Errorf("session %s dropped", id)
		}
	}
	if info.Subscriptions.Load() != 3 {
		t.Errorf("Subscriptions = %d after dropping a session, want 3", info.Subscriptions.Load())
	}
	e.publish("short", "short/down", "x", false)

	// A connected client's session never expires; the others do in time.
	e.srv.dropExpired(start.Add(8 * 24 * time.Hour))
	if n := e.srv.Sessions(); n != 1 || e.srv.session("online") == nil {
		t.Errorf("Sessions = %d, want the connected client's only", n)
	}
	if info.Inflight.Load() != 1 || info.Subscriptions.Load() != 1 {
		t.Errorf("Subscriptions %d Inflight %d, want 1 1", info.Subscriptions.Load(), info.Inflight.Load())
	}
	_, ack := e.rawConnect(5, "short", withExpiry(10, false))
	if ack.SessionPresent {
		t.Error("a dropped session was resumed")
	}
}

func TestExpiredSessionNotResumed(t *testing.T) {
	e := newEnv(t, Options{})
	e.leave(5, "cam", "cam/down", withExpiry(10, true))
	e.clock.Advance(11 * time.Second) // past expiry, not yet dropped
	if e.srv.Sessions() != 1 {
		t.Fatal("session gone before expiry ran")
	}
	_, ack := e.rawConnect(5, "cam", withExpiry(10, false))
	if ack.SessionPresent || e.srv.Subscribed("cam", "cam/down") {
		t.Error("an expired session was resumed")
	}
	if n := e.srv.Info().Subscriptions.Load(); n != 0 {
		t.Errorf("Subscriptions = %d, want 0", n)
	}
}

func TestV311PersistentSession(t *testing.T) {
	e := newEnv(t, Options{MaxSessionExpiry: time.Hour})
	e.leave(4, "cam", "cam/down", withExpiry(0, false))
	if e.srv.Sessions() != 1 {
		t.Fatal("MQTT 3.1.1 session without clean flag ended with its connection")
	}
	e.publish("cam", "cam/down", "while away", true)
	rc, ack := e.rawConnect(4, "cam", withExpiry(0, false))
	if !ack.SessionPresent {
		t.Fatal("CONNACK without session present")
	}
	checkMessage(t, rc.Expect(packets.Publish), "cam/down", "while away", false)
	rc.Disconnect(nil)
	e.h.await(t, "closed", "cam", 2)

	// It lasts MaxSessionExpiry.
	e.srv.dropExpired(start.Add(time.Hour - time.Second))
	if e.srv.Sessions() != 1 {
		t.Fatal("session dropped before MaxSessionExpiry")
	}
	e.srv.dropExpired(start.Add(time.Hour + time.Second))
	if e.srv.Sessions() != 0 {
		t.Fatal("session kept after MaxSessionExpiry")
	}
}

func TestTakeover(t *testing.T) {
	e := newEnv(t, Options{})
	expiry := uint32(60)
	old := e.mustPaho("cam", func(cp *paho.Connect) { cp.Properties.SessionExpiryInterval = &expiry })
	old.subscribe("cam/down")
	oldConn := e.h.await(t, "ready", "cam", 1)[0].conn
	// Closed(old) lingers: Online(new) must wait for it to return.
	e.h.set(func(h *handler) {
		h.closing = func(c *Conn) {
			if c != oldConn {
				return
			}
			linger := time.After(200 * time.Millisecond)
			for {
				h.mu.Lock()
				ch := h.changed
				h.mu.Unlock()
				if slices.ContainsFunc(h.log(), func(ev event) bool { return ev.kind == "online" && ev.conn != oldConn }) {
					return
				}
				select {
				case <-ch:
				case <-linger:
					return
				}
			}
		}
	})

	rc, ack := e.rawConnect(5, "cam", withExpiry(60, false))
	if ack.ReasonCode != 0 || !ack.SessionPresent {
		t.Fatalf("takeover CONNACK reason 0x%02X session present %v", ack.ReasonCode, ack.SessionPresent)
	}
	if d := old.serverDisconnect(); d.ReasonCode != 0x8E {
		t.Errorf("old connection got DISCONNECT 0x%02X, want 0x8E", d.ReasonCode)
	}
	select {
	case <-oldConn.Done():
	default:
		t.Error("the old connection had not ended when the new one was acknowledged")
	}

	// Closed(old) ran before Online(new).
	log := e.h.log()
	closedOld := slices.IndexFunc(log, func(ev event) bool { return ev.kind == "closed" && ev.conn == oldConn })
	onlineNew := slices.IndexFunc(log, func(ev event) bool { return ev.kind == "online" && ev.conn != oldConn })
	if closedOld < 0 || onlineNew < 0 || closedOld > onlineNew {
		t.Errorf("Closed(old) at %d, Online(new) at %d; want Closed first", closedOld, onlineNew)
	}

	// The session, with its subscription, serves the new connection.
	e.publish("cam", "cam/down", "to new", true)
	checkMessage(t, rc.Expect(packets.Publish), "cam/down", "to new", false)
	select {
	case p := <-old.got:
		t.Errorf("the old connection got %q", p.Payload)
	default:
	}
	if e.srv.Sessions() != 1 || e.srv.Info().ClientsConnected.Load() != 1 {
		t.Errorf("Sessions %d ClientsConnected %d, want 1 1", e.srv.Sessions(), e.srv.Info().ClientsConnected.Load())
	}
}

func TestTakeoverV311(t *testing.T) {
	e := newEnv(t, Options{})
	old, _ := e.rawConnect(4, "cam", withExpiry(0, false))
	old.Subscribe(1, "cam/down")
	rc, ack := e.rawConnect(4, "cam", withExpiry(0, false))
	if !ack.SessionPresent {
		t.Error("takeover CONNACK without session present")
	}
	old.EndedWith(packets.ErrSessionTakenOver)
	e.publish("cam", "cam/down", "to new", true)
	checkMessage(t, rc.Expect(packets.Publish), "cam/down", "to new", false)
}

func TestTakeoverCleanOrWithoutExpiry(t *testing.T) {
	cases := []struct {
		name          string
		oldEdit, edit func(*packets.Packet)
	}{
		{"clean start", withExpiry(60, true), withExpiry(60, true)},
		{"old session without expiry", withExpiry(0, true), withExpiry(60, false)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			old, _ := e.rawConnect(5, "cam", tc.oldEdit)
			old.Subscribe(1, "cam/down")
			_, ack := e.rawConnect(5, "cam", tc.edit)
			if ack.SessionPresent {
				t.Error("CONNACK with session present")
			}
			old.EndedWith(packets.ErrSessionTakenOver)
			if e.srv.Subscribed("cam", "cam/down") || e.srv.Info().Subscriptions.Load() != 0 {
				t.Error("the old session's subscription survived")
			}
		})
	}
}

// A write blocked on a client that reads nothing holds its session's lock.
// A takeover of that client must not hold up the rest of the server while
// it ends the old connection.
func TestTakeoverOfBlockedClientStallsNothingElse(t *testing.T) {
	e := newEnv(t, Options{WriteTimeout: blockedWriteTimeout})
	stuck, _ := e.rawConnect(5, "cam", withExpiry(60, true))
	stuck.Subscribe(1, "cam/down")
	// stuck reads nothing from here on.
	published := e.flood("cam", "cam/down")
	e.awaitBlockedWrite()

	began := time.Now()
	takeover := e.raw(5)
	takeover.Write(mqtttest.ConnectPacket("cam", withExpiry(60, false)))
	e.h.await(t, "connect", "cam", 2) // the takeover is under way
	if _, ack := e.rawConnect(5, "other", nil); ack.ReasonCode != 0 {
		t.Fatalf("other client: CONNACK reason 0x%02X", ack.ReasonCode)
	}
	e.srv.Sessions()
	if d := time.Since(began); d >= blockedWriteTimeout/2 {
		t.Errorf("another client's connection took %v during the takeover, want well under the stuck write's timeout of %v", d, blockedWriteTimeout)
	}
	if ack := takeover.Expect(packets.Connack); ack.ReasonCode != 0 || !ack.SessionPresent {
		t.Errorf("takeover CONNACK reason 0x%02X session present %v", ack.ReasonCode, ack.SessionPresent)
	}
	takeover.Conn().Close() // the rest of the messages fail on the closed connection
	<-published
}
