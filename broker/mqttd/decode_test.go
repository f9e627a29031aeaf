package mqttd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
)

// clientPacket is a packet a client may send, with the properties its type
// may carry in MQTT 5.
type clientPacket struct {
	name string
	pk   packets.Packet
}

// clientPackets returns a packet of every type a client sends, as version
// (4 or 5) encodes it: MQTT 3.1.1 leaves out what it cannot carry.
func clientPackets(version byte) []clientPacket {
	user := []packets.UserProperty{{Key: "k", Val: "v"}, {Key: "fleet", Val: "cam"}}
	connect := mqtttest.ConnectPacket("350000000000000", func(pk *packets.Packet) {
		pk.Connect.UsernameFlag, pk.Connect.Username = true, []byte("350000000000000")
		pk.Connect.PasswordFlag, pk.Connect.Password = true, []byte("token")
		pk.Connect.WillFlag, pk.Connect.WillQos = true, 1
		pk.Connect.WillTopic, pk.Connect.WillPayload = "fleetcam/v1/350000000000000/up/status", []byte(`{"state":"offline"}`)
		pk.Properties = packets.Properties{SessionExpiryInterval: 3600, SessionExpiryIntervalFlag: true,
			ReceiveMaximum: 10, MaximumPacketSize: 65536, TopicAliasMaximum: 4,
			RequestProblemInfo: 1, RequestProblemInfoFlag: true, RequestResponseInfo: 1, User: user}
		pk.Connect.WillProperties = packets.Properties{WillDelayInterval: 5, PayloadFormat: 1, PayloadFormatFlag: true,
			MessageExpiryInterval: 60, ContentType: "application/json", ResponseTopic: "r",
			CorrelationData: []byte{1, 2}, User: user}
	})
	connect.ProtocolVersion = version
	publish := func(qos byte, alias uint16) packets.Packet {
		pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos},
			TopicName: "fleetcam/v1/350000000000000/up/gps", Payload: []byte(`{"samples":[]}`)}
		if qos > 0 {
			pk.PacketID = 7
		}
		pk.Properties = packets.Properties{PayloadFormat: 1, PayloadFormatFlag: true, MessageExpiryInterval: 30,
			ContentType: "application/json", ResponseTopic: "fleetcam/v1/350000000000000/down/command",
			CorrelationData: []byte("cmd-1"), TopicAlias: alias, TopicAliasFlag: alias > 0, User: user}
		return pk
	}
	ack := func(typ byte) packets.Packet {
		return packets.Packet{FixedHeader: packets.FixedHeader{Type: typ}, PacketID: 7, ReasonCode: 0x80,
			Properties: packets.Properties{ReasonString: "not today", User: user}}
	}
	return []clientPacket{
		{"connect", connect},
		{"publish qos 0", publish(0, 0)},
		{"publish qos 1", publish(1, 2)},
		{"publish qos 2", publish(2, 0)},
		{"puback", ack(packets.Puback)},
		{"pubrec", ack(packets.Pubrec)},
		{"pubrel", ack(packets.Pubrel)},
		{"pubcomp", ack(packets.Pubcomp)},
		{"subscribe", packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe}, PacketID: 8,
			Properties: packets.Properties{SubscriptionIdentifier: []int{3}, User: user},
			Filters: packets.Subscriptions{{Filter: "fleetcam/v1/350000000000000/down/#", Qos: 1},
				{Filter: "a/+/b", Qos: 0, NoLocal: true, RetainAsPublished: true, RetainHandling: 2}}}},
		{"unsubscribe", packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe}, PacketID: 9,
			Properties: packets.Properties{User: user},
			Filters:    packets.Subscriptions{{Filter: "fleetcam/v1/350000000000000/down/#"}, {Filter: "a/+/b"}}}},
		{"pingreq", packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}}},
		{"disconnect", packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}, ReasonCode: 0x04,
			Properties: packets.Properties{SessionExpiryInterval: 0, SessionExpiryIntervalFlag: true,
				ReasonString: "bye", User: user}}},
	}
}

// encode returns pk's bytes in version.
func encode(tb testing.TB, version byte, pk packets.Packet) []byte {
	tb.Helper()
	return mqtttest.New(tb, nil, version).Encode(pk)
}

// split reads one packet of raw with the server's reader.
func split(t *testing.T, raw []byte) (packets.FixedHeader, []byte) {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(raw))
	fh, size, err := readFixedHeader(br)
	if err != nil || size+fh.Remaining != len(raw) {
		t.Fatalf("fixed header of % X: %+v, %d bytes, %v", raw, fh, size, err)
	}
	return fh, raw[size:]
}

// decodedFields are the fields of a decoded packet that must survive a
// round trip through the codec.
func decodedFields(pk packets.Packet) []any {
	return []any{pk.FixedHeader.Type, pk.FixedHeader.Qos, pk.PacketID, pk.TopicName, string(pk.Payload),
		pk.Filters, pk.ReasonCode, pk.Properties.User, pk.Properties.CorrelationData,
		pk.Properties.TopicAlias, pk.Properties.SubscriptionIdentifier, pk.Properties.ReasonString,
		pk.Connect.ClientIdentifier, string(pk.Connect.Username), string(pk.Connect.Password),
		pk.Connect.WillTopic, string(pk.Connect.WillPayload), pk.Connect.WillProperties.User}
}

func TestDecodeClientPackets(t *testing.T) {
	for _, version := range []byte{4, 5} {
		for _, cp := range clientPackets(version) {
			t.Run(fmt.Sprintf("%s/v%d", cp.name, version), func(t *testing.T) {
				raw := encode(t, version, cp.pk)
				fh, body := split(t, raw)
				got, err := decode(fh, version, body)
				if err != nil {
					t.Fatalf("decode % X: %v", raw, err)
				}
				want := packets.Packet{FixedHeader: fh, ProtocolVersion: version}
				if err := decodeWithMochi(&want, body); err != nil {
					t.Fatalf("mochi decodes % X: %v", raw, err)
				}
				if g, w := decodedFields(got), decodedFields(want); !reflect.DeepEqual(g, w) {
					t.Errorf("decoded\n%v\nwant\n%v", g, w)
				}
				if cp.pk.FixedHeader.Type == packets.Publish && got.TopicName != cp.pk.TopicName {
					t.Errorf("topic %q, want %q", got.TopicName, cp.pk.TopicName)
				}
			})
		}
	}
}

// decodeWithMochi decodes body with the codec alone, as the reference for
// a well-formed packet.
func decodeWithMochi(pk *packets.Packet, body []byte) error {
	pk.FixedHeader.Remaining = len(body)
	switch pk.FixedHeader.Type {
	case packets.Connect:
		return pk.ConnectDecode(body)
	case packets.Publish:
		return pk.PublishDecode(body)
	case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp:
		return pk.PubackDecode(body)
	case packets.Subscribe:
		return pk.SubscribeDecode(body)
	case packets.Unsubscribe:
		return pk.UnsubscribeDecode(body)
	case packets.Disconnect:
		return pk.DisconnectDecode(body)
	}
	return nil
}

// Every prefix of every client packet's body is a packet or a malformed
// packet: the codec, left to itself, indexes past some of them.
func TestDecodeTruncatedPackets(t *testing.T) {
	for _, version := range []byte{4, 5} {
		for _, cp := range clientPackets(version) {
			t.Run(fmt.Sprintf("%s/v%d", cp.name, version), func(t *testing.T) {
				fh, body := split(t, encode(t, version, cp.pk))
				for cut := range len(body) {
					_, err := decode(fh, version, body[:cut])
					if err != nil && !errors.Is(err, packets.ErrMalformedPacket) {
						t.Errorf("body cut to %d of %d bytes: %v, want nil or malformed packet", cut, len(body), err)
					}
				}
			})
		}
	}
}

func TestMalformedPacketIsOneWarning(t *testing.T) {
	cases := []struct {
		name  string
		bytes []byte
	}{
		// The SUBSCRIBE of issue 12: packet id 0x3030, no properties,
		// filter "000" and no options byte.
		{"subscribe without options", []byte{0x82, 0x08, 0x30, 0x30, 0x00, 0x00, 0x03, 0x30, 0x30, 0x30}},
		{"subscribe with a property cut short", []byte{0x82, 0x08, 0x00, 0x01, 0x02, 0x0B, 0x80, 0x00, 0x01, 't'}},
		// A topic alias takes two bytes, not the one the section holds.
		{"property past its section", []byte{0x30, 0x08, 0x00, 0x01, 't', 0x01, 0x23, 0x00, 0x01, 'x'}},
		{"unknown property", []byte{0x30, 0x06, 0x00, 0x01, 't', 0x01, 0x7F, 'x'}},
		{"bytes after a puback", []byte{0x40, 0x05, 0x00, 0x01, 0x00, 0x00, 0xFF}},
		{"remaining length over four bytes", []byte{0xC0, 0x80, 0x80, 0x80, 0x80, 0x80}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var lb logBuffer
			e := newEnv(t, Options{Log: lb.newLog()})
			b := e.bystander()
			rc, _ := e.rawConnect(5, "cam", nil)
			rc.WriteBytes(tc.bytes)
			rc.EndedWith(packets.ErrMalformedPacket)
			e.h.await(t, "closed", "cam", 1)
			b.check(1)
			var warnings []string
			for _, line := range lb.lines() {
				if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
					warnings = append(warnings, line)
				}
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], "level=WARN") ||
				!strings.Contains(warnings[0], "malformed packet") || strings.Contains(warnings[0], "stack") {
				t.Errorf("log warnings and errors %q, want one WARN line naming the malformed packet, without a stack", warnings)
			}
			if n := len(e.h.all("publish", "cam")); n != 0 {
				t.Errorf("handler got %d messages", n)
			}
		})
	}
}

func TestMalformedConnectIsOneWarning(t *testing.T) {
	var lb logBuffer
	e := newEnv(t, Options{Log: lb.newLog()})
	rc := e.raw(5)
	raw := rc.Encode(mqtttest.ConnectPacket("cam", nil))
	bad := append(bytes.Clone(raw), 0x00) // a byte after the last field
	bad[1]++
	rc.WriteBytes(bad)
	if got := rc.Ended(); len(got) != 0 {
		t.Fatalf("got %d packets for a malformed CONNECT, want none", len(got))
	}
	e.settle(0)
	if n := strings.Count(strings.Join(lb.lines(), "\n"), "level=WARN msg=\"mqtt malformed packet"); n != 1 {
		t.Errorf("%d warnings about the malformed CONNECT, want 1:\n%s", n, strings.Join(lb.lines(), "\n"))
	}
}
