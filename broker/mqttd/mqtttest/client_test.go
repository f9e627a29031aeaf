package mqtttest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// wireCase names one of mochi's packet fixtures: its packet type and case.
type wireCase struct {
	name    string
	typ, id byte
}

// fixture is one of mochi's byte-level packet cases and the protocol
// version it is in.
func fixture(t *testing.T, typ, id byte) (packets.TPacketCase, byte) {
	t.Helper()
	tc := packets.TPacketData[typ].Get(id)
	if tc.Packet == nil {
		t.Fatalf("no fixture %d of %s", id, packets.PacketNames[typ])
	}
	version := tc.Packet.ProtocolVersion
	if version == 0 {
		version = 4
	}
	return tc, version
}

// pipe returns a client on one end of an in-memory connection and the
// server's end.
func pipe(t *testing.T, version byte) (*Client, net.Conn) {
	cli, srv := net.Pipe()
	t.Cleanup(func() { cli.Close(); srv.Close() })
	return New(t, cli, version), srv
}

func TestEncodeMatchesTheWire(t *testing.T) {
	cases := []wireCase{
		{"CONNECT 3.1.1", packets.Connect, packets.TConnectMqtt311},
		{"CONNECT 5", packets.Connect, packets.TConnectMqtt5},
		{"PUBLISH QoS 1", packets.Publish, packets.TPublishQos1Mqtt5},
		{"PUBACK", packets.Puback, packets.TPuback},
		{"PUBACK 5", packets.Puback, packets.TPubackMqtt5},
		{"PUBREC", packets.Pubrec, packets.TPubrecMqtt5},
		{"PUBREL", packets.Pubrel, packets.TPubrelMqtt5},
		{"PUBCOMP", packets.Pubcomp, packets.TPubcompMqtt5},
		{"SUBSCRIBE", packets.Subscribe, packets.TSubscribeMqtt5},
		{"UNSUBSCRIBE", packets.Unsubscribe, packets.TUnsubscribeMqtt5},
		{"PINGREQ", packets.Pingreq, packets.TPingreq},
		{"DISCONNECT", packets.Disconnect, packets.TDisconnectMqtt5},
		{"AUTH", packets.Auth, packets.TAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx, version := fixture(t, tc.typ, tc.id)
			want := fx.RawBytes
			if len(fx.ActualBytes) > 0 {
				want = fx.ActualBytes
			}
			c, srv := pipe(t, version)
			got := make(chan []byte, 1)
			go func() {
				b := make([]byte, len(want))
				_, _ = io.ReadFull(srv, b)
				got <- b
			}()
			c.Write(*fx.Packet)
			if b := <-got; !bytes.Equal(b, want) {
				t.Fatalf("wrote % X, want % X", b, want)
			}
			if c.Sent() != len(want) {
				t.Errorf("Sent = %d, want %d", c.Sent(), len(want))
			}
		})
	}
}

func TestReadDecodesWhatServersSend(t *testing.T) {
	cases := []wireCase{
		{"CONNACK 3.1.1", packets.Connack, packets.TConnackAcceptedNoSession},
		{"CONNACK 5", packets.Connack, packets.TConnackAcceptedMqtt5},
		{"PUBLISH QoS 1", packets.Publish, packets.TPublishQos1Mqtt5},
		{"PUBACK", packets.Puback, packets.TPubackMqtt5},
		{"PUBREC", packets.Pubrec, packets.TPubrecMqtt5},
		{"PUBREL", packets.Pubrel, packets.TPubrelMqtt5},
		{"PUBCOMP", packets.Pubcomp, packets.TPubcompMqtt5},
		{"SUBACK", packets.Suback, packets.TSubackMqtt5},
		{"UNSUBACK", packets.Unsuback, packets.TUnsubackMqtt5},
		{"PINGRESP", packets.Pingresp, packets.TPingresp},
		{"DISCONNECT", packets.Disconnect, packets.TDisconnectMqtt5},
		{"AUTH", packets.Auth, packets.TAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx, version := fixture(t, tc.typ, tc.id)
			c, srv := pipe(t, version)
			go func() { _, _ = srv.Write(fx.RawBytes) }()
			got, want := c.Expect(tc.typ), fx.Packet
			if got.PacketID != want.PacketID || got.ReasonCode != want.ReasonCode || got.TopicName != want.TopicName ||
				!bytes.Equal(got.Payload, want.Payload) || !bytes.Equal(got.ReasonCodes, want.ReasonCodes) ||
				got.Properties.ReasonString != want.Properties.ReasonString {
				t.Fatalf("read %+v, want %+v", got, *want)
			}
			if c.Received() != len(fx.RawBytes) {
				t.Errorf("Received = %d, want %d", c.Received(), len(fx.RawBytes))
			}
		})
	}
}

func TestReadRefusesWhatOnlyClientsSend(t *testing.T) {
	fx, version := fixture(t, packets.Pingreq, packets.TPingreq)
	c, srv := pipe(t, version)
	go func() { _, _ = srv.Write(fx.RawBytes) }()
	if _, err := c.TryRead(); !errors.Is(err, ErrDecode) {
		t.Fatalf("reading a PINGREQ: %v, want ErrDecode", err)
	}
}

func TestEndedReturnsWhatCameBeforeTheClose(t *testing.T) {
	fx, version := fixture(t, packets.Disconnect, packets.TDisconnectMqtt5)
	c, srv := pipe(t, version)
	c.Silent(10 * time.Millisecond)
	go func() {
		_, _ = srv.Write(fx.RawBytes)
		srv.Close()
	}()
	got := c.Ended()
	if len(got) != 1 || got[0].FixedHeader.Type != packets.Disconnect || got[0].ReasonCode != fx.Packet.ReasonCode {
		t.Fatalf("ended after %+v, want the one DISCONNECT", got)
	}
}
