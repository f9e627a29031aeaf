package mqttd

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
)

func TestConnackAnnouncesLimits(t *testing.T) {
	e := newEnv(t, Options{MaxInflight: 7, MaxPacketSize: 4096, TopicAliasMaximum: 3})
	rc, ack := e.rawConnect(5, "cam", nil)
	if ack.ReasonCode != 0 || ack.SessionPresent {
		t.Fatalf("CONNACK reason 0x%02X, session present %v", ack.ReasonCode, ack.SessionPresent)
	}
	p := ack.Properties
	checks := []struct {
		name      string
		got, want any
	}{
		{"ReceiveMaximum", p.ReceiveMaximum, uint16(7)},
		{"MaximumQos", [2]any{p.MaximumQos, p.MaximumQosFlag}, [2]any{byte(1), true}},
		{"RetainAvailable", [2]any{p.RetainAvailable, p.RetainAvailableFlag}, [2]any{byte(0), true}},
		{"SharedSubAvailable", [2]any{p.SharedSubAvailable, p.SharedSubAvailableFlag}, [2]any{byte(0), true}},
		{"SubIDAvailable", [2]any{p.SubIDAvailable, p.SubIDAvailableFlag}, [2]any{byte(0), true}},
		{"MaximumPacketSize", p.MaximumPacketSize, uint32(4096)},
		{"TopicAliasMaximum", p.TopicAliasMaximum, uint16(3)},
		{"SessionExpiryIntervalFlag", p.SessionExpiryIntervalFlag, false},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("CONNACK %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(rc.Sync()) != 0 {
		t.Error("the server sent more than the CONNACK")
	}

	// paho reads the same limits.
	pc := e.mustPaho("cam2", nil)
	pp := pc.ack.Properties
	if *pp.ReceiveMaximum != 7 || *pp.MaximumQoS != 1 || pp.RetainAvailable || pp.SharedSubAvailable ||
		pp.SubIDAvailable || *pp.MaximumPacketSize != 4096 || *pp.TopicAliasMaximum != 3 {
		t.Errorf("paho CONNACK properties %+v", pp)
	}
}

func TestConnackDefaults(t *testing.T) {
	e := newEnv(t, Options{})
	_, ack := e.rawConnect(5, "cam", nil)
	p := ack.Properties
	if p.ReceiveMaximum != 64 || p.MaximumPacketSize != 128<<10 || p.TopicAliasMaximum != 0 {
		t.Errorf("default CONNACK: receive maximum %d, maximum packet size %d, topic alias maximum %d; want 64, 131072, 0",
			p.ReceiveMaximum, p.MaximumPacketSize, p.TopicAliasMaximum)
	}
}

func TestConnackV311(t *testing.T) {
	e := newEnv(t, Options{})
	rc, ack := e.rawConnect(4, "cam", nil)
	if ack.ReasonCode != 0 || ack.SessionPresent || ack.FixedHeader.Remaining != 2 {
		t.Fatalf("CONNACK %+v, want return code 0 in two bytes", ack)
	}
	if evs := e.h.await(t, "ready", "cam", 1); evs[0].conn.ProtocolVersion() != 4 {
		t.Errorf("protocol version %d, want 4", evs[0].conn.ProtocolVersion())
	}
	if len(rc.Sync()) != 0 {
		t.Error("the server sent more than the CONNACK")
	}
}

func TestConnectCallsInOrder(t *testing.T) {
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", nil)
	ready := e.h.await(t, "ready", "cam", 1)[0]
	var kinds []string
	for _, ev := range e.h.log() {
		kinds = append(kinds, ev.kind)
	}
	if got := strings.Join(kinds, ","); got != "connect,online,ready" {
		t.Errorf("handler calls %s, want connect,online,ready", got)
	}
	c := ready.conn
	if c.ID() != "cam" || c.Listener() != "test" || c.ProtocolVersion() != 5 || c.Remote() != rc.Conn().LocalAddr().String() {
		t.Errorf("conn id %q listener %q version %d remote %q", c.ID(), c.Listener(), c.ProtocolVersion(), c.Remote())
	}
	if c.Closed() {
		t.Error("connection reported closed while open")
	}
	if n := e.srv.Info().ClientsConnected.Load(); n != 1 {
		t.Errorf("ClientsConnected = %d, want 1", n)
	}
	rc.Disconnect(nil)
	if got := rc.Ended(); len(got) != 0 {
		t.Errorf("the server answered a DISCONNECT with %d packets", len(got))
	}
	e.h.await(t, "closed", "cam", 1)
	<-c.Done()
	if !c.Closed() {
		t.Error("ended connection not reported closed")
	}
}

func TestSessionExpiryCapped(t *testing.T) {
	for _, ask := range []uint32{3600, math.MaxUint32} {
		e := newEnv(t, Options{MaxSessionExpiry: time.Minute})
		rc, ack := e.rawConnect(5, "cam", func(pk *packets.Packet) {
			pk.Properties.SessionExpiryInterval, pk.Properties.SessionExpiryIntervalFlag = ask, true
		})
		if !ack.Properties.SessionExpiryIntervalFlag || ack.Properties.SessionExpiryInterval != 60 {
			t.Fatalf("asked %d: CONNACK session expiry %d (flag %v), want 60", ask,
				ack.Properties.SessionExpiryInterval, ack.Properties.SessionExpiryIntervalFlag)
		}
		rc.Conn().Close()
		e.h.await(t, "closed", "cam", 1)
		e.srv.dropExpired(start.Add(59 * time.Second))
		if e.srv.Sessions() != 1 {
			t.Fatalf("asked %d: session dropped before the capped expiry", ask)
		}
		e.srv.dropExpired(start.Add(61 * time.Second))
		if e.srv.Sessions() != 0 {
			t.Fatalf("asked %d: session kept after the capped expiry", ask)
		}
	}

	// An expiry within the cap is not announced.
	e := newEnv(t, Options{MaxSessionExpiry: time.Minute})
	_, ack := e.rawConnect(5, "cam", func(pk *packets.Packet) {
		pk.Properties.SessionExpiryInterval, pk.Properties.SessionExpiryIntervalFlag = 30, true
	})
	if ack.Properties.SessionExpiryIntervalFlag {
		t.Errorf("CONNACK announces session expiry %d for an expiry within the cap", ack.Properties.SessionExpiryInterval)
	}
}

func TestConnectRefused(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		v5, v3 byte
		reason string
	}{
		{"bad credentials", packets.ErrBadUsernameOrPassword, 0x86, 0x04, "bad username or password"},
		{"not authorized", packets.ErrNotAuthorized, 0x87, 0x05, "not authorized"},
		{"client id", packets.ErrClientIdentifierNotValid, 0x85, 0x02, "client identifier not valid"},
		{"unavailable", packets.ErrServerUnavailable, 0x88, 0x03, "server unavailable"},
		{"rate", packets.ErrConnectionRateExceeded, 0x9F, 0x03, "connection rate exceeded"},
		{"banned", packets.ErrBanned, 0x8A, 0x05, "banned"},
		{"custom code", packets.Code{Code: 0x9C, Reason: "try elsewhere"}, 0x9C, 0x03, "try elsewhere"},
		{"plain error", errors.New("database down"), 0x88, 0x03, "server unavailable"},
		{"success code", packets.CodeSuccess, 0x88, 0x03, "server unavailable"},
	}
	for _, tc := range cases {
		for _, version := range []byte{5, 4} {
			t.Run(fmt.Sprintf("%s/v%d", tc.name, version), func(t *testing.T) {
				e := newEnv(t, Options{})
				e.h.set(func(h *handler) { h.connect = func(*Conn, *packets.Packet) error { return tc.err } })
				rc, ack := e.rawConnect(version, "cam", nil)
				want := tc.v5
				if version == 4 {
					want = tc.v3
				}
				if ack.ReasonCode != want || ack.SessionPresent {
					t.Fatalf("CONNACK reason 0x%02X (session present %v), want 0x%02X", ack.ReasonCode, ack.SessionPresent, want)
				}
				if version == 5 && ack.Properties.ReasonString != tc.reason {
					t.Errorf("CONNACK reason string %q, want %q", ack.Properties.ReasonString, tc.reason)
				}
				if got := rc.Ended(); len(got) != 0 {
					t.Errorf("%d packets after a refusing CONNACK", len(got))
				}
				e.settle(0)
				for _, kind := range []string{"online", "ready", "closed"} {
					if n := len(e.h.all(kind, "cam")); n != 0 {
						t.Errorf("%s called %d times for a refused connection", kind, n)
					}
				}
				if e.srv.Sessions() != 0 || e.srv.Info().ClientsConnected.Load() != 0 {
					t.Errorf("refused connection left %d sessions, %d clients", e.srv.Sessions(), e.srv.Info().ClientsConnected.Load())
				}
			})
		}
	}
}

func TestConnectRefusedByPaho(t *testing.T) {
	e := newEnv(t, Options{})
	e.h.set(func(h *handler) {
		h.connect = func(*Conn, *packets.Packet) error { return packets.ErrBadUsernameOrPassword }
	})
	pc, err := e.pahoConnect("cam", nil)
	if err == nil || pc.ack == nil || pc.ack.ReasonCode != 0x86 {
		t.Fatalf("paho connect: %v, CONNACK %+v; want refusal 0x86", err, pc.ack)
	}
}

func TestConnectWillRefused(t *testing.T) {
	cases := []struct {
		name   string
		qos    byte
		retain bool
		v5, v3 byte
	}{
		{"will qos 2", 2, false, 0x9B, 0x03},
		{"will retain", 0, true, 0x9A, 0x03},
	}
	for _, tc := range cases {
		for _, version := range []byte{5, 4} {
			t.Run(fmt.Sprintf("%s/v%d", tc.name, version), func(t *testing.T) {
				e := newEnv(t, Options{})
				rc, ack := e.rawConnect(version, "cam", func(pk *packets.Packet) {
					pk.Connect.WillFlag, pk.Connect.WillTopic, pk.Connect.WillPayload = true, "cam/gone", []byte("bye")
					pk.Connect.WillQos, pk.Connect.WillRetain = tc.qos, tc.retain
				})
				want := tc.v5
				if version == 4 {
					want = tc.v3
				}
				if ack.ReasonCode != want {
					t.Fatalf("CONNACK reason 0x%02X, want 0x%02X", ack.ReasonCode, want)
				}
				rc.Ended()
				e.settle(0)
				if n := len(e.h.all("closed", "cam")); n != 0 || e.srv.Sessions() != 0 {
					t.Errorf("Closed called %d times, %d sessions", n, e.srv.Sessions())
				}
			})
		}
	}

	// A will at QoS 1 without retain is accepted.
	e := newEnv(t, Options{})
	_, ack := e.rawConnect(5, "cam", func(pk *packets.Packet) {
		pk.Connect.WillFlag, pk.Connect.WillTopic, pk.Connect.WillPayload, pk.Connect.WillQos = true, "cam/gone", []byte("bye"), 1
	})
	if ack.ReasonCode != 0 {
		t.Errorf("will at QoS 1: CONNACK reason 0x%02X, want success", ack.ReasonCode)
	}
}

func TestConnectTimeout(t *testing.T) {
	e := newEnv(t, Options{ConnectTimeout: 100 * time.Millisecond})
	// From before the dial: the server's timer starts after it, however
	// long the machine takes to return from it.
	began := time.Now()
	rc := e.raw(5)
	if got := rc.Ended(); len(got) != 0 {
		t.Fatalf("the server sent %d packets to a client that sent nothing", len(got))
	}
	if d := time.Since(began); d < 100*time.Millisecond {
		t.Errorf("closed after %v, before the connect timeout", d)
	}
	e.settle(0)

	// The timeout covers the CONNECT only: a connected client stays.
	rc, _ = e.rawConnect(5, "cam", nil)
	rc.Silent(300 * time.Millisecond)
	if len(rc.Sync()) != 0 {
		t.Error("unexpected packets")
	}
}

func TestFirstPacketMustBeConnect(t *testing.T) {
	e := newEnv(t, Options{})
	rc := e.raw(4)
	rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}})
	if got := rc.Ended(); len(got) != 0 {
		t.Fatalf("the server answered a PINGREQ before CONNECT with %d packets", len(got))
	}
	e.settle(0)
	if n := len(e.h.all("connect", "")); n != 0 {
		t.Errorf("Connect called %d times", n)
	}
}

func TestSecondConnectIsProtocolError(t *testing.T) {
	for _, version := range []byte{5, 4} {
		e := newEnv(t, Options{})
		rc, _ := e.rawConnect(version, "cam", nil)
		rc.Write(mqtttest.ConnectPacket("cam", nil))
		rc.EndedWith(packets.ErrProtocolViolation)
		e.h.await(t, "closed", "cam", 1)
		if n := len(e.h.all("connect", "cam")); n != 1 {
			t.Errorf("v%d: Connect called %d times, want 1", version, n)
		}
	}
}

func TestServeConn(t *testing.T) {
	e := newEnv(t, Options{})
	client, server := net.Pipe()
	done := make(chan struct{})
	go func() {
		e.srv.ServeConn("pipe", server)
		close(done)
	}()
	pc := paho.NewClient(paho.ClientConfig{Conn: client})
	recvMax := uint16(4)
	ack, err := pc.Connect(t.Context(), &paho.Connect{ClientID: "piped", CleanStart: true, KeepAlive: 30,
		Properties: &paho.ConnectProperties{ReceiveMaximum: &recvMax}})
	if err != nil || ack.ReasonCode != 0 {
		t.Fatalf("connect over a pipe: %v", err)
	}
	if c := e.h.await(t, "ready", "piped", 1)[0].conn; c.Listener() != "pipe" {
		t.Errorf("listener %q, want pipe", c.Listener())
	}
	_ = pc.Disconnect(&paho.Disconnect{})
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("ServeConn did not return after the client disconnected")
	}
	if n := len(e.h.all("closed", "piped")); n != 1 {
		t.Errorf("Closed called %d times, want 1", n)
	}
}

func TestUnsupportedProtocolVersion(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		name    string
		proto   string
		version byte
		want    byte
	}{
		{"MQTT level 6", "MQTT", 6, 0x84}, // answered in MQTT 5's terms
		{"MQTT level 3", "MQTT", 3, 0x01}, // "MQTT" names 3.1.1 and 5 only
		{"MQTT level 2", "MQTT", 2, 0x01},
		{"MQTT 3.1", "MQIsdp", 3, 0x01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := e.raw(4) // CONNECT and CONNACK without properties
			pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect},
				Connect: packets.ConnectParams{ProtocolName: []byte(tc.proto), Clean: true, Keepalive: 30, ClientIdentifier: "cam"}}
			b := rc.Encode(pk)
			b[4+len(tc.proto)] = tc.version // fixed header 2, name length 2, name, then the level
			rc.WriteBytes(b)
			if ack := rc.Expect(packets.Connack); ack.ReasonCode != tc.want {
				t.Fatalf("CONNACK reason 0x%02X, want 0x%02X", ack.ReasonCode, tc.want)
			}
			rc.Ended()
		})
	}
	if n := len(e.h.all("connect", "cam")); n != 0 {
		t.Errorf("Connect called %d times for unsupported versions", n)
	}
}
