package mqtttest

import (
	"errors"
	"os"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// ConnectPacket is a CONNECT for client id (clean start, keepalive 30)
// after edit, when set, adjusted it.
func ConnectPacket(id string, edit func(*packets.Packet)) packets.Packet {
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 30, ClientIdentifier: id}}
	if edit != nil {
		edit(&pk)
	}
	return pk
}

// Connect sends ConnectPacket(id, edit) and returns the CONNACK.
func (c *Client) Connect(id string, edit func(*packets.Packet)) packets.Packet {
	c.tb.Helper()
	c.Write(ConnectPacket(id, edit))
	return c.Expect(packets.Connack)
}

// Publish sends a PUBLISH of payload to topic at qos with packet id pid.
func (c *Client) Publish(topic string, payload string, qos byte, pid uint16) {
	c.tb.Helper()
	c.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos},
		TopicName: topic, Payload: []byte(payload), PacketID: pid})
}

// PublishAlias sends a QoS 1 PUBLISH of payload with topic alias alias and
// topic, which may be empty to use the alias alone (MQTT 5).
func (c *Client) PublishAlias(topic string, alias uint16, payload string, pid uint16) {
	c.tb.Helper()
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1},
		TopicName: topic, Payload: []byte(payload), PacketID: pid}
	pk.Properties.TopicAlias, pk.Properties.TopicAliasFlag = alias, true
	c.Write(pk)
}

// Ack sends a PUBACK for packet id pid.
func (c *Client) Ack(pid uint16) {
	c.tb.Helper()
	c.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pid})
}

// Subscribe sends a SUBSCRIBE of filters, each at QoS 1, and returns the
// SUBACK, which must carry packet id pid.
func (c *Client) Subscribe(pid uint16, filters ...string) packets.Packet {
	c.tb.Helper()
	subs := make([]packets.Subscription, 0, len(filters))
	for _, f := range filters {
		subs = append(subs, packets.Subscription{Filter: f, Qos: 1})
	}
	return c.SubscribeWith(pid, subs)
}

// SubscribeWith sends one SUBSCRIBE of subs as they are (each filter with
// its own QoS and options) and returns the SUBACK, which must carry packet
// id pid.
func (c *Client) SubscribeWith(pid uint16, subs []packets.Subscription) packets.Packet {
	c.tb.Helper()
	c.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe}, PacketID: pid, Filters: subs})
	ack := c.Expect(packets.Suback)
	if ack.PacketID != pid {
		c.tb.Fatalf("SUBACK for packet %d, want %d", ack.PacketID, pid)
	}
	return ack
}

// Unsubscribe sends an UNSUBSCRIBE of filters and returns the UNSUBACK,
// which must carry packet id pid.
func (c *Client) Unsubscribe(pid uint16, filters ...string) packets.Packet {
	c.tb.Helper()
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe}, PacketID: pid}
	for _, f := range filters {
		pk.Filters = append(pk.Filters, packets.Subscription{Filter: f})
	}
	c.Write(pk)
	ack := c.Expect(packets.Unsuback)
	if ack.PacketID != pid {
		c.tb.Fatalf("UNSUBACK for packet %d, want %d", ack.PacketID, pid)
	}
	return ack
}

// Disconnect sends a DISCONNECT, with a session expiry when expiry is set.
func (c *Client) Disconnect(expiry *uint32) {
	c.tb.Helper()
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}}
	if expiry != nil {
		pk.Properties.SessionExpiryInterval, pk.Properties.SessionExpiryIntervalFlag = *expiry, true
	}
	c.Write(pk)
}

// Sync sends a PINGREQ and returns the packets that arrived before its
// PINGRESP. A server handles a client's packets in order, so these are all
// it sent in answer to what the client sent before.
func (c *Client) Sync() []packets.Packet {
	c.tb.Helper()
	c.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}})
	var before []packets.Packet
	for {
		pk := c.Read()
		if pk.FixedHeader.Type == packets.Pingresp {
			return before
		}
		before = append(before, pk)
	}
}

// Silent checks that nothing arrives within d and that the connection is
// still open. Call it after the server acted, so that anything it sent is
// already on its way.
func (c *Client) Silent(d time.Duration) {
	c.tb.Helper()
	pk, err := c.ReadWithin(d)
	if err == nil {
		c.tb.Fatalf("unexpected %s", packets.PacketNames[pk.FixedHeader.Type])
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		c.tb.Fatalf("connection ended: %v", err)
	}
}

// Ended reads until the server closed the connection and returns the
// packets that came first. It ends the test when the connection is still
// open after Patience or a packet cannot be decoded.
func (c *Client) Ended() []packets.Packet {
	c.tb.Helper()
	var got []packets.Packet
	for {
		pk, err := c.TryRead()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			c.tb.Fatal("the server did not close the connection")
		case errors.Is(err, ErrDecode):
			c.tb.Fatalf("before the connection ended: %v", err)
		case err != nil:
			return got
		}
		got = append(got, pk)
	}
}

// EndedWith checks that the connection ended after exactly a DISCONNECT
// with code (MQTT 5) or after nothing (MQTT 3.1.1). A DISCONNECT for an
// error (code 0x80 or above) must say why in a reason string.
func (c *Client) EndedWith(code packets.Code) {
	c.tb.Helper()
	got := c.Ended()
	if c.version < 5 {
		if len(got) != 0 {
			c.tb.Fatalf("MQTT 3.1.1 connection ended after %d packets (first %s), want none",
				len(got), packets.PacketNames[got[0].FixedHeader.Type])
		}
		return
	}
	if len(got) != 1 || got[0].FixedHeader.Type != packets.Disconnect {
		names := []string{}
		for _, pk := range got {
			names = append(names, packets.PacketNames[pk.FixedHeader.Type])
		}
		c.tb.Fatalf("connection ended after %v, want one DISCONNECT", names)
	}
	if got[0].ReasonCode != code.Code {
		c.tb.Fatalf("DISCONNECT reason 0x%02X (%q), want 0x%02X", got[0].ReasonCode, got[0].Properties.ReasonString, code.Code)
	}
	if code.Code >= packets.ErrUnspecifiedError.Code && got[0].Properties.ReasonString == "" {
		c.tb.Errorf("DISCONNECT 0x%02X without a reason string", code.Code)
	}
}
