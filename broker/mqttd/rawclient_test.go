package mqttd

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// rawClient speaks MQTT packets built with mochi's codec, for exact wire
// checks, MQTT 3.1.1 and broken input.
type rawClient struct {
	t       *testing.T
	conn    net.Conn
	r       *bufio.Reader
	version byte
	sent    int // bytes written
	recv    int // bytes read
}

// raw dials the server as a client of protocol version 4 or 5.
func (e *env) raw(version byte) *rawClient {
	e.t.Helper()
	conn := e.dial()
	return &rawClient{t: e.t, conn: conn, r: bufio.NewReader(conn), version: version}
}

// rawConnect dials and connects client id (clean, keepalive 30) after edit
// adjusted the CONNECT, and returns the client and the CONNACK.
func (e *env) rawConnect(version byte, id string, edit func(*packets.Packet)) (*rawClient, packets.Packet) {
	e.t.Helper()
	rc := e.raw(version)
	return rc, rc.connect(id, edit)
}

// connect sends a CONNECT and returns the CONNACK.
func (rc *rawClient) connect(id string, edit func(*packets.Packet)) packets.Packet {
	rc.t.Helper()
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 30, ClientIdentifier: id}}
	if edit != nil {
		edit(&pk)
	}
	rc.write(pk)
	return rc.expect(packets.Connack)
}

// encode returns the bytes of pk in the client's protocol version.
func (rc *rawClient) encode(pk packets.Packet) []byte {
	rc.t.Helper()
	pk.ProtocolVersion = rc.version
	buf := new(bytes.Buffer)
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(buf)
	case packets.Publish:
		err = pk.PublishEncode(buf)
	case packets.Puback:
		err = pk.PubackEncode(buf)
	case packets.Pubrel:
		pk.FixedHeader.Qos = 1
		err = pk.PubrelEncode(buf)
	case packets.Subscribe:
		pk.FixedHeader.Qos = 1
		err = pk.SubscribeEncode(buf)
	case packets.Unsubscribe:
		pk.FixedHeader.Qos = 1
		err = pk.UnsubscribeEncode(buf)
	case packets.Pingreq:
		err = pk.PingreqEncode(buf)
	case packets.Disconnect:
		err = pk.DisconnectEncode(buf)
	default:
		rc.t.Fatalf("raw client cannot encode packet type %d", pk.FixedHeader.Type)
	}
	if err != nil {
		rc.t.Fatal(err)
	}
	return buf.Bytes()
}

func (rc *rawClient) write(pk packets.Packet) { rc.t.Helper(); rc.writeBytes(rc.encode(pk)) }

func (rc *rawClient) writeBytes(b []byte) {
	rc.t.Helper()
	n, err := rc.conn.Write(b)
	rc.sent += n
	if err != nil {
		rc.t.Fatal(err)
	}
}

// publish sends a PUBLISH of payload to topic at qos with packet id pid.
func (rc *rawClient) publish(topic string, payload string, qos byte, pid uint16) {
	rc.t.Helper()
	rc.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos},
		TopicName: topic, Payload: []byte(payload), PacketID: pid})
}

// subscribe sends a SUBSCRIBE of filters at QoS 1 and returns the SUBACK.
func (rc *rawClient) subscribe(pid uint16, filters ...string) packets.Packet {
	rc.t.Helper()
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe}, PacketID: pid}
	for _, f := range filters {
		pk.Filters = append(pk.Filters, packets.Subscription{Filter: f, Qos: 1})
	}
	rc.write(pk)
	ack := rc.expect(packets.Suback)
	if ack.PacketID != pid {
		rc.t.Fatalf("SUBACK for packet %d, want %d", ack.PacketID, pid)
	}
	return ack
}

// ack sends a PUBACK for packet id pid.
func (rc *rawClient) ack(pid uint16) {
	rc.t.Helper()
	rc.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pid})
}

// disconnect sends a DISCONNECT, with a session expiry when expiry is set.
func (rc *rawClient) disconnect(expiry *uint32) {
	rc.t.Helper()
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}}
	if expiry != nil {
		pk.Properties.SessionExpiryInterval, pk.Properties.SessionExpiryIntervalFlag = *expiry, true
	}
	rc.write(pk)
}

// sync sends a PINGREQ and returns the packets that arrived before its
// PINGRESP: the server handles a client's packets in order, so they are
// all it sent in answer to what the client sent before.
func (rc *rawClient) sync() []packets.Packet {
	rc.t.Helper()
	rc.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}})
	var before []packets.Packet
	for {
		pk := rc.read()
		if pk.FixedHeader.Type == packets.Pingresp {
			return before
		}
		before = append(before, pk)
	}
}

// expect reads the next packet and checks its type.
func (rc *rawClient) expect(typ byte) packets.Packet {
	rc.t.Helper()
	pk := rc.read()
	if pk.FixedHeader.Type != typ {
		rc.t.Fatalf("got %s, want %s", packets.PacketNames[pk.FixedHeader.Type], packets.PacketNames[typ])
	}
	return pk
}

// read returns the next packet from the server.
func (rc *rawClient) read() packets.Packet {
	rc.t.Helper()
	pk, err := rc.tryRead()
	if err != nil {
		rc.t.Fatalf("read: %v", err)
	}
	return pk
}

func (rc *rawClient) tryRead() (packets.Packet, error) {
	return rc.readWithin(patience)
}

func (rc *rawClient) readWithin(d time.Duration) (packets.Packet, error) {
	_ = rc.conn.SetReadDeadline(time.Now().Add(d))
	var pk packets.Packet
	b, err := rc.r.ReadByte()
	if err != nil {
		return pk, err
	}
	if err := pk.FixedHeader.Decode(b); err != nil {
		return pk, err
	}
	n, lenBytes, err := packets.DecodeLength(rc.r)
	if err != nil {
		return pk, err
	}
	pk.FixedHeader.Remaining = n
	body := make([]byte, n)
	if _, err := io.ReadFull(rc.r, body); err != nil {
		return pk, err
	}
	rc.recv += 1 + lenBytes + n
	pk.ProtocolVersion = rc.version
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackDecode(body)
	case packets.Publish:
		err = pk.PublishDecode(body)
	case packets.Puback:
		err = pk.PubackDecode(body)
	case packets.Suback:
		err = pk.SubackDecode(body)
	case packets.Unsuback:
		err = pk.UnsubackDecode(body)
	case packets.Disconnect:
		err = pk.DisconnectDecode(body)
	case packets.Pingresp:
	default:
		err = errors.New("unexpected packet type " + packets.PacketNames[pk.FixedHeader.Type])
	}
	return pk, err
}

// silent checks that nothing arrives within d (after the server acted, so
// that anything it sent is already on its way).
func (rc *rawClient) silent(d time.Duration) {
	rc.t.Helper()
	pk, err := rc.readWithin(d)
	if err == nil {
		rc.t.Fatalf("unexpected %s", packets.PacketNames[pk.FixedHeader.Type])
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		rc.t.Fatalf("connection ended: %v", err)
	}
}

// ended reads until the server closed the connection and returns the
// packets that came first.
func (rc *rawClient) ended() []packets.Packet {
	rc.t.Helper()
	var got []packets.Packet
	for {
		pk, err := rc.tryRead()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			rc.t.Fatal("the server did not close the connection")
		}
		if err != nil {
			return got
		}
		got = append(got, pk)
	}
}

// endedWith checks that the connection ended after exactly a DISCONNECT
// with code (MQTT 5) or after nothing (MQTT 3.1.1).
func (rc *rawClient) endedWith(code packets.Code) {
	rc.t.Helper()
	got := rc.ended()
	if rc.version < 5 {
		if len(got) != 0 {
			rc.t.Fatalf("MQTT 3.1.1 connection ended after %d packets (first %s), want none",
				len(got), packets.PacketNames[got[0].FixedHeader.Type])
		}
		return
	}
	if len(got) != 1 || got[0].FixedHeader.Type != packets.Disconnect {
		names := []string{}
		for _, pk := range got {
			names = append(names, packets.PacketNames[pk.FixedHeader.Type])
		}
		rc.t.Fatalf("connection ended after %v, want one DISCONNECT", names)
	}
	if got[0].ReasonCode != code.Code {
		rc.t.Fatalf("DISCONNECT reason 0x%02X (%q), want 0x%02X", got[0].ReasonCode, got[0].Properties.ReasonString, code.Code)
	}
	if code.Code >= packets.ErrUnspecifiedError.Code && got[0].Properties.ReasonString == "" {
		rc.t.Errorf("DISCONNECT 0x%02X without a reason string", code.Code)
	}
}
