// Package mqtttest is for tests of MQTT servers: a raw client that writes
// the packets a test builds with mochi-mqtt's codec, byte for byte, and
// reads the server's answers one packet at a time, so that a test can check
// the exact wire exchange, speak MQTT 3.1.1 or 5, and send broken input.
package mqtttest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// Patience bounds each read of Read, TryRead and Expect: a server that has
// not answered by then is taken not to answer. A read ends as soon as the
// answer arrives; the bound is for a machine busy with other work as well
// as with the tests under the race detector.
const Patience = time.Minute

// ErrDecode marks a packet that arrived whole but could not be decoded, or
// was of a type a server never sends, as against a connection that ended.
var ErrDecode = errors.New("mqtttest: cannot decode packet")

// Client is one raw MQTT connection to the server under test. It is for
// one goroutine; a failed write or encode ends the test.
type Client struct {
	tb      testing.TB
	conn    net.Conn
	r       *bufio.Reader
	version byte
	sent    int
	recv    int
}

// New speaks MQTT protocol version (4 for 3.1.1, 5) over conn on behalf
// of tb. It writes nothing: the test sends the CONNECT it wants.
func New(tb testing.TB, conn net.Conn, version byte) *Client {
	return &Client{tb: tb, conn: conn, r: bufio.NewReader(conn), version: version}
}

// Conn is the client's connection, for its addresses or to drop it.
func (c *Client) Conn() net.Conn { return c.conn }

// Sent is the number of bytes written to the server so far.
func (c *Client) Sent() int { return c.sent }

// Received is the number of bytes of whole packets read so far.
func (c *Client) Received() int { return c.recv }

// Encode returns the bytes of pk in the client's protocol version. It sets
// the fixed header flags MQTT requires of PUBREL, SUBSCRIBE and UNSUBSCRIBE.
func (c *Client) Encode(pk packets.Packet) []byte {
	c.tb.Helper()
	b, err := Encode(pk, c.version)
	if err != nil {
		c.tb.Fatal(err)
	}
	return b
}

// Encode returns the bytes of a packet a client sends, pk, in protocol
// version, or the codec's refusal to encode it. It sets the fixed header
// flags MQTT requires of PUBREL, SUBSCRIBE and UNSUBSCRIBE.
func Encode(pk packets.Packet, version byte) ([]byte, error) {
	pk.ProtocolVersion = version
	buf := new(bytes.Buffer)
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(buf)
	case packets.Publish:
		err = pk.PublishEncode(buf)
	case packets.Puback:
		err = pk.PubackEncode(buf)
	case packets.Pubrec:
		err = pk.PubrecEncode(buf)
	case packets.Pubrel:
		pk.FixedHeader.Qos = 1
		err = pk.PubrelEncode(buf)
	case packets.Pubcomp:
		err = pk.PubcompEncode(buf)
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
	case packets.Auth:
		err = pk.AuthEncode(buf)
	default:
		err = fmt.Errorf("mqtttest: a client does not send packet type %d", pk.FixedHeader.Type)
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write sends pk encoded in the client's protocol version.
func (c *Client) Write(pk packets.Packet) {
	c.tb.Helper()
	c.WriteBytes(c.Encode(pk))
}

// WriteBytes sends b as it is, for partial and malformed packets.
func (c *Client) WriteBytes(b []byte) {
	c.tb.Helper()
	n, err := c.conn.Write(b)
	c.sent += n
	if err != nil {
		c.tb.Fatal(err)
	}
}

// Read returns the next packet from the server, or ends the test when none
// arrives within Patience, the connection ends or the packet is malformed.
func (c *Client) Read() packets.Packet {
	c.tb.Helper()
	pk, err := c.TryRead()
	if err != nil {
		c.tb.Fatalf("read: %v", err)
	}
	return pk
}

// TryRead returns the next packet from the server, waiting up to Patience.
func (c *Client) TryRead() (packets.Packet, error) {
	return c.ReadWithin(Patience)
}

// ReadWithin returns the next packet from the server, waiting up to d. Its
// error is the connection's (os.ErrDeadlineExceeded when d passed, io.EOF
// when the server closed) or wraps ErrDecode.
func (c *Client) ReadWithin(d time.Duration) (packets.Packet, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(d))
	var pk packets.Packet
	b, err := c.r.ReadByte()
	if err != nil {
		return pk, err
	}
	if err := pk.FixedHeader.Decode(b); err != nil {
		return pk, fmt.Errorf("%w: fixed header: %w", ErrDecode, err)
	}
	n, lenBytes, err := packets.DecodeLength(c.r)
	if err != nil {
		return pk, err
	}
	pk.FixedHeader.Remaining = n
	body := make([]byte, n)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return pk, err
	}
	c.recv += 1 + lenBytes + n
	pk.ProtocolVersion = c.version
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackDecode(body)
	case packets.Publish:
		err = pk.PublishDecode(body)
	case packets.Puback:
		err = pk.PubackDecode(body)
	case packets.Pubrec:
		err = pk.PubrecDecode(body)
	case packets.Pubrel:
		err = pk.PubrelDecode(body)
	case packets.Pubcomp:
		err = pk.PubcompDecode(body)
	case packets.Suback:
		err = pk.SubackDecode(body)
	case packets.Unsuback:
		err = pk.UnsubackDecode(body)
	case packets.Pingresp:
		err = pk.PingrespDecode(body)
	case packets.Disconnect:
		err = pk.DisconnectDecode(body)
	case packets.Auth:
		err = pk.AuthDecode(body)
	default:
		return pk, fmt.Errorf("%w: a server does not send %s", ErrDecode, packets.PacketNames[pk.FixedHeader.Type])
	}
	if err != nil {
		return pk, fmt.Errorf("%w: %s: %w", ErrDecode, packets.PacketNames[pk.FixedHeader.Type], err)
	}
	return pk, nil
}

// Expect reads the next packet and ends the test unless it is of type typ.
func (c *Client) Expect(typ byte) packets.Packet {
	c.tb.Helper()
	pk := c.Read()
	if pk.FixedHeader.Type != typ {
		c.tb.Fatalf("got %s, want %s", packets.PacketNames[pk.FixedHeader.Type], packets.PacketNames[typ])
	}
	return pk
}
