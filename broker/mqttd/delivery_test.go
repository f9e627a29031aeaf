package mqttd

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
)

// publish calls Server.Publish and checks whether a session took the message.
func (e *env) publish(id, topic, payload string, want bool) {
	e.t.Helper()
	ok, err := e.srv.Publish(id, topic, []byte(payload), nil)
	if err != nil || ok != want {
		e.t.Fatalf("Publish(%s, %s) = %v, %v; want %v, nil", id, topic, ok, err, want)
	}
}

// withExpiry asks for a session expiry of seconds.
func withExpiry(seconds uint32, clean bool) func(*packets.Packet) {
	return func(pk *packets.Packet) {
		pk.Connect.Clean = clean
		pk.Properties.SessionExpiryInterval, pk.Properties.SessionExpiryIntervalFlag = seconds, seconds > 0
	}
}

// checkMessage checks a PUBLISH the server sent.
func checkMessage(t *testing.T, pk packets.Packet, topic, payload string, dup bool) {
	t.Helper()
	if pk.FixedHeader.Type != packets.Publish || pk.TopicName != topic || string(pk.Payload) != payload ||
		pk.FixedHeader.Qos != 1 || pk.FixedHeader.Dup != dup || pk.FixedHeader.Retain || pk.PacketID == 0 {
		t.Errorf("got %s %q %q qos %d dup %v retain %v id %d; want PUBLISH %q %q qos 1 dup %v",
			packets.PacketNames[pk.FixedHeader.Type], pk.TopicName, pk.Payload, pk.FixedHeader.Qos, pk.FixedHeader.Dup,
			pk.FixedHeader.Retain, pk.PacketID, topic, payload, dup)
	}
}

func TestServerPublishToSubscribers(t *testing.T) {
	for _, version := range []byte{5, 4} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := newEnv(t, Options{})
			e.publish("cam", "cam/down/cmd", "x", false) // no session
			rc, _ := e.rawConnect(version, "cam", nil)
			e.publish("cam", "cam/down/cmd", "x", false) // no subscription
			rc.Subscribe(1, "cam/down/#")
			props := &packets.Properties{ResponseTopic: "srv/reply", CorrelationData: []byte("c-1")}
			if ok, err := e.srv.Publish("cam", "cam/down/cmd", []byte("reboot"), props); !ok || err != nil {
				t.Fatalf("Publish = %v, %v", ok, err)
			}
			e.publish("cam", "cam/up/cmd", "x", false) // no matching subscription
			got := rc.Sync()
			if len(got) != 1 {
				t.Fatalf("client got %d packets, want 1", len(got))
			}
			pk := got[0]
			checkMessage(t, pk, "cam/down/cmd", "reboot", false)
			wantTopic, wantCorr := "srv/reply", "c-1"
			if version == 4 {
				wantTopic, wantCorr = "", ""
			}
			if pk.Properties.ResponseTopic != wantTopic || string(pk.Properties.CorrelationData) != wantCorr {
				t.Errorf("response topic %q correlation %q, want %q %q", pk.Properties.ResponseTopic,
					pk.Properties.CorrelationData, wantTopic, wantCorr)
			}
			info := e.srv.Info()
			if info.Inflight.Load() != 1 || info.MessagesSent.Load() != 1 {
				t.Errorf("Inflight %d MessagesSent %d, want 1 1", info.Inflight.Load(), info.MessagesSent.Load())
			}
			rc.Ack(pk.PacketID)
			rc.Sync()
			if n := info.Inflight.Load(); n != 0 {
				t.Errorf("Inflight = %d after the PUBACK, want 0", n)
			}
		})
	}
}

func TestServerPublishWithPaho(t *testing.T) {
	e := newEnv(t, Options{})
	pc := e.mustPaho("cam", nil)
	pc.subscribe("cam/down")
	props := &packets.Properties{ResponseTopic: "srv/reply", CorrelationData: []byte{1, 2}}
	if ok, err := e.srv.Publish("cam", "cam/down", []byte("hi"), props); !ok || err != nil {
		t.Fatalf("Publish = %v, %v", ok, err)
	}
	p := pc.next()
	if p.Topic != "cam/down" || string(p.Payload) != "hi" || p.QoS != 1 || p.Properties.ResponseTopic != "srv/reply" ||
		string(p.Properties.CorrelationData) != "\x01\x02" {
		t.Errorf("paho got %+v %+v", p, p.Properties)
	}
	waitFor(t, "the PUBACK", func() bool { return e.srv.Info().Inflight.Load() == 0 })
}

func TestServerPublishRespectsReceiveMaximum(t *testing.T) {
	cases := []struct {
		name       string
		version    byte
		receiveMax uint16
		opts       Options
	}{
		{"client receive maximum", 5, 2, Options{}},
		{"server maximum below the client's", 5, 10, Options{MaxInflight: 2}},
		{"MQTT 3.1.1", 4, 0, Options{MaxInflight: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opts)
			rc, _ := e.rawConnect(tc.version, "cam", func(pk *packets.Packet) { pk.Properties.ReceiveMaximum = tc.receiveMax })
			rc.Subscribe(1, "cam/down")
			for i := range 4 {
				e.publish("cam", "cam/down", fmt.Sprint(i), true)
			}
			// Publish writes before it returns: what is not here yet waits.
			got := rc.Sync()
			if len(got) != 2 {
				t.Fatalf("client got %d messages with a receive maximum of 2", len(got))
			}
			checkMessage(t, got[0], "cam/down", "0", false)
			checkMessage(t, got[1], "cam/down", "1", false)
			if n := e.srv.Info().Inflight.Load(); n != 2 {
				t.Errorf("Inflight = %d, want 2", n)
			}
			rc.Ack(got[1].PacketID) // out of order frees a slot too
			third := rc.Expect(packets.Publish)
			checkMessage(t, third, "cam/down", "2", false)
			if more := rc.Sync(); len(more) != 0 {
				t.Fatalf("one PUBACK let %d more messages through", len(more)+1)
			}
			rc.Ack(got[0].PacketID)
			checkMessage(t, rc.Expect(packets.Publish), "cam/down", "3", false)
			if n := e.srv.Info().Inflight.Load(); n != 2 {
				t.Errorf("Inflight = %d, want 2", n)
			}
		})
	}
}

func TestOfflineSessionKeepsMessages(t *testing.T) {
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", withExpiry(60, true))
	rc.Subscribe(1, "cam/down")
	rc.Disconnect(nil)
	rc.Ended()
	e.h.await(t, "closed", "cam", 1)

	e.publish("cam", "cam/down", "a", true)
	e.publish("cam", "cam/down", "b", true)
	e.publish("cam", "cam/other", "c", false)
	if n := e.srv.Info().Inflight.Load(); n != 0 {
		t.Errorf("Inflight = %d while the client is offline, want 0", n)
	}

	rc, ack := e.rawConnect(5, "cam", withExpiry(60, false))
	if !ack.SessionPresent {
		t.Fatal("CONNACK without session present for a kept session")
	}
	got := rc.Sync()
	if len(got) != 2 {
		t.Fatalf("client got %d packets after resuming, want 2", len(got))
	}
	checkMessage(t, got[0], "cam/down", "a", false)
	checkMessage(t, got[1], "cam/down", "b", false)
	if got[0].PacketID == got[1].PacketID {
		t.Error("two messages in flight share a packet id")
	}
}

func TestInflightResentOnResume(t *testing.T) {
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", withExpiry(60, true))
	rc.Subscribe(1, "cam/down")
	e.publish("cam", "cam/down", "first", true)
	first := rc.Expect(packets.Publish)
	checkMessage(t, first, "cam/down", "first", false)
	_ = rc.Conn().Close() // the connection drops before the PUBACK
	e.h.await(t, "closed", "cam", 1)
	e.publish("cam", "cam/down", "second", true)
	if n := e.srv.Info().Inflight.Load(); n != 1 {
		t.Errorf("Inflight = %d while offline with one message unacknowledged, want 1", n)
	}

	rc, ack := e.rawConnect(5, "cam", withExpiry(60, false))
	if !ack.SessionPresent {
		t.Fatal("CONNACK without session present")
	}
	again := rc.Expect(packets.Publish)
	checkMessage(t, again, "cam/down", "first", true)
	if again.PacketID != first.PacketID {
		t.Errorf("resent with packet id %d, first sent with %d", again.PacketID, first.PacketID)
	}
	checkMessage(t, rc.Expect(packets.Publish), "cam/down", "second", false)
	rc.Sync() // the resends were counted before the connection read on
	if n := e.srv.Info().MessagesSent.Load(); n != 3 {
		t.Errorf("MessagesSent = %d, want 3 (the resend counts)", n)
	}
	e.h.await(t, "ready", "cam", 2)
}

func TestMaxPendingOverflow(t *testing.T) {
	// Offline: the session holds MaxPending messages.
	e := newEnv(t, Options{MaxPending: 2})
	rc, _ := e.rawConnect(5, "cam", withExpiry(60, true))
	rc.Subscribe(1, "cam/down")
	rc.Disconnect(nil)
	e.h.await(t, "closed", "cam", 1)
	e.publish("cam", "cam/down", "1", true)
	e.publish("cam", "cam/down", "2", true)
	ok, err := e.srv.Publish("cam", "cam/down", []byte("3"), nil)
	if ok || err == nil {
		t.Fatalf("Publish beyond MaxPending = %v, %v; want false and an error", ok, err)
	}
	if n := e.srv.Info().MessagesDropped.Load(); n != 1 {
		t.Errorf("MessagesDropped = %d, want 1", n)
	}
	rc, _ = e.rawConnect(5, "cam", withExpiry(60, false))
	got := rc.Sync()
	if len(got) != 2 {
		t.Fatalf("client got %d messages after resuming, want the 2 kept", len(got))
	}

	// Online: messages beyond the receive quota wait, up to MaxPending.
	e = newEnv(t, Options{MaxPending: 1})
	rc, _ = e.rawConnect(5, "cam", func(pk *packets.Packet) { pk.Properties.ReceiveMaximum = 1 })
	rc.Subscribe(1, "cam/down")
	e.publish("cam", "cam/down", "1", true) // in flight
	e.publish("cam", "cam/down", "2", true) // waits
	if ok, err := e.srv.Publish("cam", "cam/down", []byte("3"), nil); ok || err == nil {
		t.Fatalf("Publish beyond MaxPending = %v, %v; want false and an error", ok, err)
	}
	if n := e.srv.Info().MessagesDropped.Load(); n != 1 {
		t.Errorf("MessagesDropped = %d, want 1", n)
	}
}

func TestPublishTooLargeForClient(t *testing.T) {
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", func(pk *packets.Packet) { pk.Properties.MaximumPacketSize = 64 })
	rc.Subscribe(1, "cam/down")
	ok, err := e.srv.Publish("cam", "cam/down", []byte(strings.Repeat("x", 100)), nil)
	if ok || err == nil {
		t.Fatalf("Publish above the client's maximum packet size = %v, %v; want false and an error", ok, err)
	}
	info := e.srv.Info()
	if info.MessagesDropped.Load() != 1 || info.Inflight.Load() != 0 {
		t.Errorf("MessagesDropped %d Inflight %d, want 1 0", info.MessagesDropped.Load(), info.Inflight.Load())
	}
	e.publish("cam", "cam/down", "small", true)
	got := rc.Sync()
	if len(got) != 1 {
		t.Fatalf("client got %d packets, want the small message only", len(got))
	}
	checkMessage(t, got[0], "cam/down", "small", false)
}

func TestNoPublishBeforeConnack(t *testing.T) {
	// A message published while the handler runs Online for a resumed
	// session must follow the CONNACK, not precede it.
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", withExpiry(60, true))
	rc.Subscribe(1, "cam/down")
	rc.Disconnect(nil)
	e.h.await(t, "closed", "cam", 1)

	e.h.set(func(h *handler) {
		h.online = func(c *Conn) {
			if ok, err := e.srv.Publish(c.ID(), "cam/down", []byte("early"), nil); !ok || err != nil {
				t.Errorf("Publish during Online = %v, %v", ok, err)
			}
		}
	})
	rc = e.raw(5)
	rc.Write(mqtttest.ConnectPacket("cam", withExpiry(60, false)))
	first := rc.Read()
	if first.FixedHeader.Type != packets.Connack {
		t.Fatalf("first packet %s, want CONNACK", packets.PacketNames[first.FixedHeader.Type])
	}
	if !first.SessionPresent {
		t.Error("CONNACK without session present")
	}
	got := rc.Sync()
	if len(got) != 1 {
		t.Fatalf("client got %d messages after the CONNACK, want 1", len(got))
	}
	checkMessage(t, got[0], "cam/down", "early", false)
}

func TestQos0SubscriptionDeliveredAtMostOnce(t *testing.T) {
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", withExpiry(60, true))
	if got := rc.SubscribeWith(1, []packets.Subscription{{Filter: "cam/q0/#", Qos: 0}, {Filter: "cam/both/#", Qos: 0},
		{Filter: "cam/+/x", Qos: 1}}).ReasonCodes; !bytes.Equal(got, []byte{0, 0, 1}) {
		t.Fatalf("SUBACK codes % X", got)
	}
	e.publish("cam", "cam/q0/a", "zero", true)
	e.publish("cam", "cam/both/x", "one", true) // the highest QoS of the matching filters
	got := rc.Sync()
	if len(got) != 2 {
		t.Fatalf("client got %d packets, want 2", len(got))
	}
	if pk := got[0]; pk.FixedHeader.Qos != 0 || pk.PacketID != 0 || string(pk.Payload) != "zero" {
		t.Errorf("QoS 0 filter: got QoS %d id %d payload %q", pk.FixedHeader.Qos, pk.PacketID, pk.Payload)
	}
	checkMessage(t, got[1], "cam/both/x", "one", false)
	if n := e.srv.Info().Inflight.Load(); n != 1 {
		t.Errorf("Inflight = %d, want the QoS 1 message only", n)
	}
	rc.Ack(got[1].PacketID)

	// Offline, a QoS 0 message is not kept.
	rc.Disconnect(nil)
	rc.Ended()
	e.h.await(t, "closed", "cam", 1)
	e.publish("cam", "cam/q0/b", "lost", false)
	rc, _ = e.rawConnect(5, "cam", withExpiry(60, false))
	if got := rc.Sync(); len(got) != 0 {
		t.Errorf("resumed session got %d packets, want none", len(got))
	}
}

// withLimits resumes a session with the client's Receive Maximum and
// Maximum Packet Size (0: not given).
func withLimits(receiveMax uint16, maxPacket uint32) func(*packets.Packet) {
	return func(pk *packets.Packet) {
		withExpiry(60, false)(pk)
		pk.Properties.ReceiveMaximum, pk.Properties.MaximumPacketSize = receiveMax, maxPacket
	}
}

func TestResumeRespectsTheNewReceiveMaximum(t *testing.T) {
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", withLimits(8, 0))
	rc.Subscribe(1, "cam/down")
	for i := range 5 {
		e.publish("cam", "cam/down", fmt.Sprint(i), true)
		rc.Expect(packets.Publish)
	}
	rc.Conn().Close()
	e.h.await(t, "closed", "cam", 1)

	rc, _ = e.rawConnect(5, "cam", withLimits(2, 0))
	for want := 0; want < 5; {
		got := rc.Sync()
		if len(got) == 0 || len(got) > 2 {
			t.Fatalf("after %d messages the client has %d unacknowledged, want 1 or 2 (Receive Maximum 2)", want, len(got))
		}
		for _, pk := range got {
			checkMessage(t, pk, "cam/down", fmt.Sprint(want), want < 2) // the first two were in flight
			rc.Ack(pk.PacketID)
			want++
		}
	}
	if got := rc.Sync(); len(got) != 0 {
		t.Errorf("%d more messages after the five", len(got))
	}
}

func TestResumeDropsWhatTheNewClientCannotTake(t *testing.T) {
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", withLimits(2, 0))
	rc.Subscribe(1, "cam/down")
	e.publish("cam", "cam/down", strings.Repeat("x", 1000), true)
	e.publish("cam", "cam/down", "small", true)
	rc.Expect(packets.Publish)
	rc.Expect(packets.Publish)
	rc.Conn().Close()
	e.h.await(t, "closed", "cam", 1)

	rc, _ = e.rawConnect(5, "cam", withLimits(2, 500)) // takes packets of 500 bytes at most
	e.publish("cam", "cam/down", "new", true)
	got := rc.Sync()
	if len(got) != 2 {
		t.Fatalf("client got %d packets after resuming, want 2", len(got))
	}
	checkMessage(t, got[0], "cam/down", "small", true)
	checkMessage(t, got[1], "cam/down", "new", false)
	if info := e.srv.Info(); info.MessagesDropped.Load() != 1 || info.Inflight.Load() != 2 {
		t.Errorf("MessagesDropped %d Inflight %d, want 1 2", info.MessagesDropped.Load(), info.Inflight.Load())
	}
}
