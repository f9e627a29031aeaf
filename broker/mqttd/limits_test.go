package mqttd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

func TestPacketTooLarge(t *testing.T) {
	for _, version := range []byte{5, 4} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := newEnv(t, Options{MaxPacketSize: 256})
			rc, _ := e.rawConnect(version, "cam", nil)
			// Exactly MaxPacketSize is accepted: 1 + 2 (length) + 3 (topic "t") + 250.
			whole := rc.Encode(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish},
				TopicName: "t", Payload: bytes.Repeat([]byte("x"), 250-map[byte]int{5: 1, 4: 0}[version])})
			if len(whole) != 256 {
				t.Fatalf("test packet has %d bytes, want 256", len(whole))
			}
			rc.WriteBytes(whole)
			if got := rc.Sync(); len(got) != 0 {
				t.Fatalf("a packet of MaxPacketSize answered with %d packets", len(got))
			}
			e.h.await(t, "publish", "cam", 1)
			// One byte more is not: the fixed header says so, the body need not come.
			rc.WriteBytes([]byte{0x30, 0xFE, 0x01}) // PUBLISH, remaining length 254: 257 bytes
			rc.EndedWith(packets.ErrPacketTooLarge)
			e.h.await(t, "closed", "cam", 1)
			if n := len(e.h.all("publish", "cam")); n != 1 {
				t.Errorf("handler saw %d messages, want 1", n)
			}
		})
	}

	// The limit covers the CONNECT too.
	e := newEnv(t, Options{MaxPacketSize: 256})
	rc := e.raw(5)
	rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, ClientIdentifier: strings.Repeat("c", 300)}})
	if got := rc.Ended(); len(got) != 0 {
		t.Errorf("an oversized CONNECT was answered with %d packets", len(got))
	}
	e.settle(0)
	if n := len(e.h.log()); n != 0 {
		t.Errorf("the handler was called %d times", n)
	}
}

func TestMalformedOrIllegalPacket(t *testing.T) {
	cases := []struct {
		name  string
		bytes []byte
		code  packets.Code
	}{
		{"publish qos 3", []byte{0x36, 0x03, 0x00, 0x01, 't'}, packets.ErrMalformedPacket},
		{"dup at qos 0", []byte{0x38, 0x03, 0x00, 0x01, 't'}, packets.ErrMalformedPacket},
		{"subscribe flags", []byte{0x80, 0x06, 0x00, 0x01, 0x00, 0x01, 't', 0x01}, packets.ErrMalformedPacket},
		{"length without end", []byte{0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, packets.ErrMalformedPacket},
		{"truncated topic", []byte{0x30, 0x02, 0x00, 0x05}, packets.ErrMalformedPacket},
		{"short puback", []byte{0x40, 0x01, 0x00}, packets.ErrMalformedPacket},
		{"reserved type 0", []byte{0x00, 0x00}, packets.ErrProtocolViolation},
		{"auth", []byte{0xF0, 0x00}, packets.ErrProtocolViolation},
		{"wildcard topic", []byte{0x30, 0x05, 0x00, 0x03, 'a', '/', '+'}, packets.ErrProtocolViolation},
		{"qos 1 without packet id", []byte{0x32, 0x05, 0x00, 0x01, 't', 0x00, 0x00}, packets.ErrProtocolViolation},
		{"subscribe without filters", []byte{0x82, 0x02, 0x00, 0x01}, packets.ErrProtocolViolation},
	}
	for _, tc := range cases {
		for _, version := range []byte{5, 4} {
			t.Run(fmt.Sprintf("%s/v%d", tc.name, version), func(t *testing.T) {
				b := tc.bytes
				if version == 5 {
					b = v5Body(t, b)
				}
				e := newEnv(t, Options{})
				rc, _ := e.rawConnect(version, "cam", nil)
				rc.WriteBytes(b)
				rc.EndedWith(tc.code)
				e.h.await(t, "closed", "cam", 1)
				if n := len(e.h.all("publish", "cam")); n != 0 {
					t.Errorf("handler got %d messages", n)
				}
				if e.srv.Info().Panics.Load() != 0 {
					t.Error("handling the packet panicked")
				}
			})
		}
	}
}

// v5Body adds the empty property section an MQTT 5 PUBLISH, PUBACK and
// SUBSCRIBE carry after their variable header; other packets are as given.
func v5Body(t *testing.T, b []byte) []byte {
	t.Helper()
	var at int // where the properties go, in the body
	switch b[0] >> 4 {
	case packets.Publish:
		if b[1]&0x80 != 0 || len(b) < 4 {
			return b
		}
		topicEnd := 4 + (int(b[2])<<8 | int(b[3]))
		at = topicEnd
		if (b[0]>>1)&3 > 0 {
			at += 2
		}
	case packets.Subscribe:
		at = 4
	default:
		return b
	}
	if at > len(b) {
		return b // truncated: the properties are beside the point
	}
	out := append(append(append([]byte{}, b[:at]...), 0x00), b[at:]...)
	out[1]++
	return out
}

func TestKeepalive(t *testing.T) {
	for _, version := range []byte{5, 4} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, Options{})
			// From before the CONNECT, so that however long the machine
			// takes to send it and read the CONNACK, the connection may not
			// end sooner than one and a half intervals after began. How much
			// later it ends depends on how busy the machine is, so that is
			// only bounded by patience (EndedWith).
			began := time.Now()
			rc, _ := e.rawConnect(version, "cam", func(pk *packets.Packet) { pk.Connect.Keepalive = 1 })
			rc.EndedWith(packets.ErrKeepAliveTimeout)
			if d := time.Since(began); d < 1500*time.Millisecond {
				t.Errorf("disconnected after %v, want one and a half keepalive intervals", d)
			}
			e.h.await(t, "closed", "cam", 1)
		})
	}
	t.Run("refreshed by packets", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, Options{})
		rc, _ := e.rawConnect(5, "cam", func(pk *packets.Packet) { pk.Connect.Keepalive = 1 })
		for range 2 {
			rc.Silent(800 * time.Millisecond)
			if len(rc.Sync()) != 0 {
				t.Fatal("unexpected packets")
			}
		}
		// 1.6 s after the CONNECT, the connection is still there.
		if n := len(e.h.all("closed", "cam")); n != 0 {
			t.Fatal("a client that sent packets in time was disconnected")
		}
	})
}

func TestWriteTimeout(t *testing.T) {
	e := newEnv(t, Options{WriteTimeout: 200 * time.Millisecond})
	rc, _ := e.rawConnect(5, "cam", nil)
	rc.Subscribe(1, "cam/down")
	// The client reads no more: the server's writes fill the socket
	// buffers, and the one that waits longer than WriteTimeout ends the
	// connection.
	done := e.flood("cam", "cam/down")
	e.h.await(t, "closed", "cam", 1)
	if n := e.srv.Info().ClientsConnected.Load(); n != 0 {
		t.Errorf("ClientsConnected = %d, want 0", n)
	}
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("Publish still blocked after the connection ended")
	}
}

func TestBodyBufferGrowsWithWhatArrives(t *testing.T) {
	c := &Conn{br: bufio.NewReader(strings.NewReader("only ten b"))}
	body, err := c.readBody(100_000) // a large packet announced, ten bytes sent
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("readBody error %v, want unexpected EOF", err)
	}
	if cap(body) > 4096 {
		t.Errorf("ten bytes received hold a %d-byte buffer", cap(body))
	}
	c = &Conn{br: bufio.NewReader(strings.NewReader(strings.Repeat("x", 5000) + "next packet"))}
	if body, err := c.readBody(5000); err != nil || len(body) != 5000 || strings.Trim(string(body), "x") != "" {
		t.Fatalf("readBody(5000) = %d bytes, %v", len(body), err)
	}
	if rest, _ := io.ReadAll(c.br); string(rest) != "next packet" {
		t.Errorf("readBody read past its body: %q left", rest)
	}
}
