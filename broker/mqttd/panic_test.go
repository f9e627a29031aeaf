package mqttd

import (
	"fmt"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
)

// bystander is a connected client that checks it is still served.
type bystander struct {
	t  *testing.T
	rc *mqtttest.Client
}

func (e *env) bystander() *bystander {
	e.t.Helper()
	rc, _ := e.rawConnect(5, "bystander", nil)
	return &bystander{t: e.t, rc: rc}
}

func (b *bystander) check(pid uint16) {
	b.t.Helper()
	b.rc.Publish("bystander/up", "still here", 1, pid)
	if ack := b.rc.Expect(packets.Puback); ack.PacketID != pid || ack.ReasonCode != 0 {
		b.t.Fatalf("bystander: PUBACK id %d reason 0x%02X", ack.PacketID, ack.ReasonCode)
	}
}

func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	cases := []struct {
		kind    string
		trigger func(rc *mqtttest.Client)
		connack bool // the CONNACK went out before the panic
	}{
		{"publish", func(rc *mqtttest.Client) { rc.Publish("cam/up", "x", 1, 1) }, true},
		{"cansubscribe", func(rc *mqtttest.Client) {
			rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe}, PacketID: 1,
				Filters: packets.Subscriptions{{Filter: "cam/down", Qos: 1}}})
		}, true},
		{"subscribed", func(rc *mqtttest.Client) { rc.Subscribe(1, "cam/down") }, true},
		{"ready", func(*mqtttest.Client) {}, true},
		{"online", func(*mqtttest.Client) {}, false},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			e := newEnv(t, Options{})
			e.wantPanics = 1
			b := e.bystander()
			e.h.panicOn(tc.kind, "cam", true)
			rc := e.raw(5)
			rc.Write(mqtttest.ConnectPacket("cam", nil))
			if tc.connack {
				if ack := rc.Expect(packets.Connack); ack.ReasonCode != 0 {
					t.Fatalf("CONNACK reason 0x%02X", ack.ReasonCode)
				}
				tc.trigger(rc)
				rc.EndedWith(packets.ErrImplementationSpecificError)
			} else if got := rc.Ended(); len(got) != 0 {
				t.Fatalf("got %s before the connection ended, want nothing", packets.PacketNames[got[0].FixedHeader.Type])
			}
			e.h.await(t, "closed", "cam", 1)
			if n := e.srv.Info().Panics.Load(); n != 1 {
				t.Errorf("Panics = %d, want 1", n)
			}
			e.settle(1)
			if n := e.srv.Info().ClientsConnected.Load(); n != 1 {
				t.Errorf("ClientsConnected = %d, want the bystander only", n)
			}
			b.check(1)

			// The server accepts new connections as before.
			e.h.panicOn(tc.kind, "cam", false)
			rc, ack := e.rawConnect(5, "cam", nil)
			if ack.ReasonCode != 0 {
				t.Fatalf("reconnect: CONNACK reason 0x%02X", ack.ReasonCode)
			}
			rc.Subscribe(1, "cam/down")
		})
	}
}

func TestConnectPanic(t *testing.T) {
	for _, version := range []byte{5, 4} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := newEnv(t, Options{})
			e.wantPanics = 1
			b := e.bystander()
			e.h.panicOn("connect", "cam", true)
			rc := e.raw(version)
			rc.Write(mqtttest.ConnectPacket("cam", nil))
			if got := rc.Ended(); len(got) != 0 {
				t.Fatalf("got %d packets from a connection whose Connect panicked", len(got))
			}
			e.settle(1)
			if n := e.srv.Info().Panics.Load(); n != 1 {
				t.Errorf("Panics = %d, want 1", n)
			}
			if n := len(e.h.all("closed", "cam")); n != 0 {
				t.Errorf("Closed called %d times for a connection never admitted", n)
			}
			if e.srv.Sessions() != 1 {
				t.Errorf("Sessions = %d, want the bystander's only", e.srv.Sessions())
			}
			b.check(1)
		})
	}
}

func TestClosedPanic(t *testing.T) {
	e := newEnv(t, Options{})
	e.wantPanics = 1
	b := e.bystander()
	e.h.set(func(h *handler) { h.closing = func(c *Conn) { panic("test handler panics in closed") } })
	rc, _ := e.rawConnect(5, "cam", nil)
	rc.Disconnect(nil)
	rc.Ended()
	e.settle(1)
	if n := e.srv.Info().Panics.Load(); n != 1 {
		t.Errorf("Panics = %d, want 1", n)
	}
	if n := e.srv.Info().ClientsConnected.Load(); n != 1 {
		t.Errorf("ClientsConnected = %d, want the bystander only", n)
	}
	e.h.set(func(h *handler) { h.closing = nil })
	b.check(1)
	if _, ack := e.rawConnect(5, "cam", nil); ack.ReasonCode != 0 {
		t.Fatalf("reconnect: CONNACK reason 0x%02X", ack.ReasonCode)
	}
}
