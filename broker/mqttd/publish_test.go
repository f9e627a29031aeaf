package mqttd

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
)

// refuse makes the handler answer every PUBLISH with err.
func (h *handler) refuse(err error) {
	h.set(func(h *handler) { h.publish = func(*Conn, *packets.Packet) error { return err } })
}

func TestPublishAckedAfterHandler(t *testing.T) {
	for _, version := range []byte{5, 4} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := newEnv(t, Options{})
			release := make(chan struct{})
			free := sync.OnceFunc(func() { close(release) })
			t.Cleanup(free)
			e.h.set(func(h *handler) {
				h.publish = func(*Conn, *packets.Packet) error { <-release; return nil }
			})
			rc, _ := e.rawConnect(version, "cam", nil)
			rc.Publish("cam/up", "hello", 1, 7)
			ev := e.h.await(t, "publish", "cam", 1)[0]
			if ev.topic != "cam/up" || string(ev.payload) != "hello" || ev.qos != 1 || ev.pid != 7 {
				t.Errorf("handler got topic %q payload %q qos %d id %d", ev.topic, ev.payload, ev.qos, ev.pid)
			}
			rc.Silent(50 * time.Millisecond) // no PUBACK while the handler decides
			free()
			ack := rc.Expect(packets.Puback)
			if ack.PacketID != 7 || ack.ReasonCode != 0 {
				t.Errorf("PUBACK id %d reason 0x%02X, want id 7 success", ack.PacketID, ack.ReasonCode)
			}
		})
	}
}

func TestPublishRefusedV5(t *testing.T) {
	codes := []packets.Code{
		packets.ErrNotAuthorized,
		packets.ErrQuotaExceeded,
		packets.ErrTopicNameInvalid,
		{Code: 0x99, Reason: "payload is not JSON"},
	}
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", nil)
	for i, code := range codes {
		e.h.refuse(code)
		pid := uint16(10 + i)
		rc.Publish("cam/up", "x", 1, pid)
		ack := rc.Expect(packets.Puback)
		if ack.PacketID != pid || ack.ReasonCode != code.Code || ack.Properties.ReasonString != code.Reason {
			t.Errorf("refused with %v: PUBACK id %d reason 0x%02X %q", code, ack.PacketID, ack.ReasonCode, ack.Properties.ReasonString)
		}
	}
	// The connection goes on; a success code is acknowledged as success.
	e.h.refuse(nil)
	rc.Publish("cam/up", "x", 1, 99)
	if ack := rc.Expect(packets.Puback); ack.PacketID != 99 || ack.ReasonCode != 0 {
		t.Errorf("PUBACK id %d reason 0x%02X after refusals, want success", ack.PacketID, ack.ReasonCode)
	}

	// paho sees the code and the reason.
	e.h.refuse(packets.ErrQuotaExceeded)
	pc := e.mustPaho("cam2", nil)
	pr, err := pc.c.Publish(pc.ctx(), &paho.Publish{Topic: "cam2/up", QoS: 1, Payload: []byte("x")})
	if err == nil || pr == nil || pr.ReasonCode != 0x97 || pr.Properties == nil || pr.Properties.ReasonString != "quota exceeded" {
		t.Errorf("paho publish: %v, response %+v", err, pr)
	}
}

func TestPublishRefusalWithoutProblemInfo(t *testing.T) {
	e := newEnv(t, Options{})
	e.h.refuse(packets.ErrNotAuthorized)
	rc, _ := e.rawConnect(5, "cam", func(pk *packets.Packet) {
		pk.Properties.RequestProblemInfo, pk.Properties.RequestProblemInfoFlag = 0, true
	})
	rc.Publish("cam/up", "x", 1, 1)
	ack := rc.Expect(packets.Puback)
	if ack.ReasonCode != 0x87 || ack.Properties.ReasonString != "" {
		t.Errorf("PUBACK reason 0x%02X %q, want 0x87 without a reason string", ack.ReasonCode, ack.Properties.ReasonString)
	}
}

func TestPublishRefusedV311(t *testing.T) {
	// Refusals other than "not authorized" are acknowledged.
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(4, "cam", nil)
	for i, code := range []packets.Code{packets.ErrQuotaExceeded, packets.ErrUnspecifiedError, packets.ErrPayloadFormatInvalid} {
		e.h.refuse(code)
		pid := uint16(i + 1)
		rc.Publish("cam/up", "x", 1, pid)
		if ack := rc.Expect(packets.Puback); ack.PacketID != pid {
			t.Errorf("refused with %v: PUBACK id %d, want %d", code, ack.PacketID, pid)
		}
	}
	if len(rc.Sync()) != 0 {
		t.Error("unexpected packets")
	}

	// "Not authorized" disconnects without a PUBACK.
	e.h.refuse(packets.ErrNotAuthorized)
	rc.Publish("cam/up", "x", 1, 9)
	rc.EndedWith(packets.ErrNotAuthorized)
	e.h.await(t, "closed", "cam", 1)
}

func TestPublishQoS0NeverAcked(t *testing.T) {
	for _, version := range []byte{5, 4} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := newEnv(t, Options{})
			rc, _ := e.rawConnect(version, "cam", nil)
			for i, answer := range []error{nil, packets.ErrNotAuthorized, packets.ErrQuotaExceeded} {
				e.h.refuse(answer)
				rc.Publish("cam/up", "x", 0, 0)
				if got := rc.Sync(); len(got) != 0 {
					t.Fatalf("QoS 0 publish answered %v: got %s", answer, packets.PacketNames[got[0].FixedHeader.Type])
				}
				if n := len(e.h.all("publish", "cam")); n != i+1 {
					t.Fatalf("handler saw %d messages, want %d", n, i+1)
				}
			}
		})
	}
}

func TestPublishPlainErrorCloses(t *testing.T) {
	for _, version := range []byte{5, 4} {
		for _, qos := range []byte{1, 0} {
			t.Run(fmt.Sprintf("v%d/qos%d", version, qos), func(t *testing.T) {
				e := newEnv(t, Options{})
				e.h.refuse(errors.New("store unavailable"))
				rc, _ := e.rawConnect(version, "cam", nil)
				pid := uint16(0)
				if qos > 0 {
					pid = 3
				}
				rc.Publish("cam/up", "x", qos, pid)
				rc.EndedWith(packets.ErrImplementationSpecificError)
				e.h.await(t, "closed", "cam", 1)
			})
		}
	}
}

func TestPublishQoS2AnsweredWithPubackV5(t *testing.T) {
	// MQTT 5: the CONNACK announced QoS 1 at most; a QoS 2 publish is
	// handled as QoS 1.
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(5, "cam", nil)
	rc.Publish("cam/up", "x", 2, 5)
	if ack := rc.Expect(packets.Puback); ack.PacketID != 5 || ack.ReasonCode != 0 {
		t.Errorf("PUBACK id %d reason 0x%02X, want id 5 success", ack.PacketID, ack.ReasonCode)
	}
	// A PUBREL that follows is ignored.
	rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrel}, PacketID: 5})
	if got := rc.Sync(); len(got) != 0 {
		t.Errorf("PUBREL answered with %s", packets.PacketNames[got[0].FixedHeader.Type])
	}
	if n := len(e.h.all("publish", "cam")); n != 1 {
		t.Errorf("handler saw %d messages, want 1", n)
	}
}

func TestPublishQoS2ExchangeV311(t *testing.T) {
	// MQTT 3.1.1 announces no maximum QoS: a QoS 2 publish gets its
	// exchange, PUBREC once handled and PUBCOMP for the PUBREL, with the
	// refusals of QoS 1 (acknowledged, but "not authorized" closes).
	e := newEnv(t, Options{})
	rc, _ := e.rawConnect(4, "cam", nil)
	for i, answer := range []error{nil, packets.ErrPayloadFormatInvalid} {
		e.h.refuse(answer)
		pid := uint16(5 + i)
		rc.Publish("cam/up", "x", 2, pid)
		if ack := rc.Expect(packets.Pubrec); ack.PacketID != pid {
			t.Fatalf("answer %v: PUBREC id %d, want %d", answer, ack.PacketID, pid)
		}
		if n := len(e.h.all("publish", "cam")); n != i+1 {
			t.Fatalf("answer %v: handler saw %d messages at the PUBREC, want %d", answer, n, i+1)
		}
		rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrel, Qos: 1}, PacketID: pid})
		if comp := rc.Expect(packets.Pubcomp); comp.PacketID != pid {
			t.Fatalf("answer %v: PUBCOMP id %d, want %d", answer, comp.PacketID, pid)
		}
	}
	if got := rc.Sync(); len(got) != 0 {
		t.Errorf("unexpected %s", packets.PacketNames[got[0].FixedHeader.Type])
	}
	e.h.refuse(packets.ErrNotAuthorized)
	rc.Publish("cam/up", "x", 2, 9)
	rc.EndedWith(packets.ErrNotAuthorized)
	e.h.await(t, "closed", "cam", 1)
}

func TestTopicAliases(t *testing.T) {
	e := newEnv(t, Options{TopicAliasMaximum: 2})
	rc, _ := e.rawConnect(5, "cam", nil)
	steps := []struct {
		topic string
		alias uint16
		want  string
	}{
		{"cam/a", 1, "cam/a"},
		{"", 1, "cam/a"},
		{"cam/b", 2, "cam/b"},
		{"", 1, "cam/a"},
		{"cam/c", 1, "cam/c"}, // an alias can be set again
		{"", 1, "cam/c"},
		{"", 2, "cam/b"},
	}
	for i, s := range steps {
		pid := uint16(i + 1)
		rc.PublishAlias(s.topic, s.alias, fmt.Sprint(i), pid)
		if ack := rc.Expect(packets.Puback); ack.PacketID != pid || ack.ReasonCode != 0 {
			t.Fatalf("step %d: PUBACK id %d reason 0x%02X", i, ack.PacketID, ack.ReasonCode)
		}
		ev := e.h.await(t, "publish", "cam", i+1)[i]
		if ev.topic != s.want || string(ev.payload) != fmt.Sprint(i) {
			t.Errorf("step %d (topic %q alias %d): handler got %q, want %q", i, s.topic, s.alias, ev.topic, s.want)
		}
	}

	// paho, as the topic alias extension would use it.
	pc := e.mustPaho("cam2", nil)
	alias := uint16(2)
	for _, topic := range []string{"cam2/x", ""} {
		if _, err := pc.c.Publish(pc.ctx(), &paho.Publish{Topic: topic, QoS: 1, Payload: []byte("p"),
			Properties: &paho.PublishProperties{TopicAlias: &alias}}); err != nil {
			t.Fatalf("paho publish with alias: %v", err)
		}
	}
	for i, ev := range e.h.await(t, "publish", "cam2", 2) {
		if ev.topic != "cam2/x" {
			t.Errorf("paho message %d reached the handler on %q, want cam2/x", i, ev.topic)
		}
	}
}

func TestTopicAliasInvalid(t *testing.T) {
	cases := []struct {
		name    string
		max     uint16
		publish func(rc *mqtttest.Client)
	}{
		{"unknown alias", 2, func(rc *mqtttest.Client) { rc.PublishAlias("", 1, "x", 1) }},
		{"set alias unknown", 2, func(rc *mqtttest.Client) {
			rc.PublishAlias("cam/a", 1, "x", 1)
			rc.Expect(packets.Puback)
			rc.PublishAlias("", 2, "x", 2)
		}},
		{"alias above maximum", 2, func(rc *mqtttest.Client) { rc.PublishAlias("cam/a", 3, "x", 1) }},
		{"aliases not offered", 0, func(rc *mqtttest.Client) { rc.PublishAlias("cam/a", 1, "x", 1) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{TopicAliasMaximum: tc.max})
			rc, _ := e.rawConnect(5, "cam", nil)
			tc.publish(rc)
			rc.EndedWith(packets.ErrTopicAliasInvalid)
			e.h.await(t, "closed", "cam", 1)
			for _, ev := range e.h.all("publish", "cam") {
				if ev.topic == "" {
					t.Error("the handler got a message without topic")
				}
			}
		})
	}

	// Aliases belong to a connection: the next one starts without any.
	e := newEnv(t, Options{TopicAliasMaximum: 2})
	rc, _ := e.rawConnect(5, "cam", nil)
	rc.PublishAlias("cam/a", 1, "x", 1)
	rc.Expect(packets.Puback)
	rc.Disconnect(nil)
	rc.Ended()
	rc, _ = e.rawConnect(5, "cam", func(pk *packets.Packet) { pk.Connect.Clean = false })
	rc.PublishAlias("", 1, "x", 1)
	rc.EndedWith(packets.ErrTopicAliasInvalid)
}
