package mqttd

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
)

// The fuzz targets' seeds are under testdata/fuzz/<target>: every packet
// type a client sends, in MQTT 3.1.1 and 5 with every property its type
// may carry (clientPackets), a session of them in a row, AUTH, and the
// packets the targets found. `go test` runs them as tests, `make test` also
// fuzzes each target for seconds and `make fuzz` for longer. An input is a
// protocol version selector (odd: MQTT 5, even: MQTT 3.1.1) and bytes.

// fuzzVersion maps a fuzzed selector to a protocol version.
func fuzzVersion(sel byte) byte {
	if sel%2 == 1 {
		return 5
	}
	return 4
}

// FuzzDecode reads a stream of packets with the server's reader and
// decoder. Each is a packet or a malformed packet, never a panic, and a
// packet that decodes, encoded again, decodes to the same packet.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, sel byte, stream []byte) {
		version := fuzzVersion(sel)
		r := &byteReader{stream}
		for len(r.b) > 0 {
			fh, _, err := readFixedHeader(r)
			if err != nil {
				if !errors.Is(err, packets.ErrMalformedPacket) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("fixed header: %v", err)
				}
				return
			}
			if fh.Remaining > len(r.b) {
				return
			}
			body := r.b[:fh.Remaining]
			r.b = r.b[fh.Remaining:]
			pk, err := decode(fh, version, body)
			if err != nil {
				if !errors.Is(err, packets.ErrMalformedPacket) {
					t.Fatalf("decode %s: %v, want nil or malformed packet", packets.PacketNames[fh.Type], err)
				}
				continue
			}
			roundTrip(t, pk)
		}
	})
}

// roundTrip encodes a decoded packet again and checks that the server
// decodes what the codec encodes: a well-formed packet is never called
// malformed. Packets a client does not send, and values the encoder
// refuses, are left out.
func roundTrip(t *testing.T, pk packets.Packet) {
	t.Helper()
	switch pk.FixedHeader.Type {
	case packets.Connect:
		if pk.ConnectValidate() != packets.CodeSuccess {
			return
		}
	case packets.Publish:
		if pk.PublishValidate(^uint16(0)) != packets.CodeSuccess {
			return
		}
	case packets.Subscribe:
		if pk.SubscribeValidate() != packets.CodeSuccess {
			return
		}
	case packets.Unsubscribe:
		if pk.UnsubscribeValidate() != packets.CodeSuccess {
			return
		}
	case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp, packets.Pingreq, packets.Disconnect:
	default:
		return
	}
	raw, err := mqtttest.Encode(pk, pk.ProtocolVersion)
	if err != nil {
		return
	}
	fh, size, err := readFixedHeader(&byteReader{raw})
	if err != nil || size+fh.Remaining != len(raw) {
		t.Fatalf("%s encoded as % X: fixed header %+v, %v", packets.PacketNames[pk.FixedHeader.Type], raw, fh, err)
	}
	again, err := decode(fh, pk.ProtocolVersion, raw[size:])
	if err != nil {
		t.Fatalf("%s encoded as % X does not decode: %v", packets.PacketNames[pk.FixedHeader.Type], raw, err)
	}
	if again.PacketID != pk.PacketID || again.TopicName != pk.TopicName || string(again.Payload) != string(pk.Payload) ||
		len(again.Filters) != len(pk.Filters) || again.Connect.ClientIdentifier != pk.Connect.ClientIdentifier {
		t.Fatalf("%s decoded again as %+v, was %+v", packets.PacketNames[pk.FixedHeader.Type], again, pk)
	}
}

// FuzzConn sends a connected client's bytes to a running server over
// net.Pipe. Whatever they are, the server must end the connection when the
// client closes it, within a bound, and recover no panic.
func FuzzConn(f *testing.F) {
	srv := New(Options{Log: slog.New(slog.DiscardHandler)}, acceptAll{})
	f.Cleanup(func() { _ = srv.Close() })
	f.Fuzz(func(t *testing.T, sel byte, data []byte) {
		version := fuzzVersion(sel)
		client, server := net.Pipe()
		served := make(chan struct{})
		go func() {
			defer close(served)
			srv.ServeConn("fuzz", server)
		}()
		rc := mqtttest.New(t, client, version)
		if ack := rc.Connect("fuzz", nil); ack.ReasonCode != 0 {
			t.Fatalf("CONNACK reason 0x%02X", ack.ReasonCode)
		}
		go func() { _, _ = io.Copy(io.Discard, client) }()
		_, _ = client.Write(data) // returns once the server has read it all, or has closed
		_ = client.Close()
		select {
		case <-served:
		case <-time.After(patience):
			t.Fatalf("the server still serves a connection %v after its client closed it", patience)
		}
		if n := srv.Info().Panics.Load(); n != 0 {
			t.Fatalf("the server recovered %d panics", n)
		}
	})
}

// acceptAll is a Handler that admits every client and accepts everything.
type acceptAll struct{}

func (acceptAll) Connect(*Conn, *packets.Packet) error { return nil }
func (acceptAll) Online(*Conn)                         {}
func (acceptAll) Ready(*Conn)                          {}
func (acceptAll) Publish(*Conn, *packets.Packet) error { return nil }
func (acceptAll) CanSubscribe(*Conn, string) bool      { return true }
func (acceptAll) Subscribed(*Conn)                     {}
func (acceptAll) Closed(*Conn)                         {}
