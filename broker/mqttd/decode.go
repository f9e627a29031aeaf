package mqttd

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/mochi-mqtt/server/v2/packets"
)

// A client's packet is checked against MQTT's structure before mochi's
// codec decodes it. The codec trusts some of the lengths it is given (an
// MQTT 5 SUBSCRIBE's options byte, a property section that ends inside a
// property) and indexes past the end of a truncated body. checkBody walks
// every length first, so that whatever a client sends is a packet or a
// malformed packet (0x81), never a panic.

// maxLengthBytes is the most bytes of a Variable Byte Integer (MQTT 1.5.5).
const maxLengthBytes = 4

// readFixedHeader reads a packet's fixed header: its type and flags, and its
// remaining length, which it sets as fh.Remaining. size is the header's
// length in bytes. A header that breaks MQTT's rules is ErrMalformedPacket.
func readFixedHeader(r io.ByteReader) (fh packets.FixedHeader, size int, err error) {
	b, err := r.ReadByte()
	if err != nil {
		return fh, 0, err
	}
	if err := fh.Decode(b); err != nil {
		return fh, 1, malformed(fh.Type, "fixed header flags 0x%X: %v", b&0x0F, err)
	}
	n, lenBytes, err := readVarint(r)
	if err != nil {
		return fh, 1 + lenBytes, err
	}
	fh.Remaining = n
	return fh, 1 + lenBytes, nil
}

// readVarint reads a Variable Byte Integer of at most four bytes.
func readVarint(r io.ByteReader) (n, size int, err error) {
	for shift := 0; size < maxLengthBytes; shift += 7 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, size, err
		}
		size++
		n |= int(b&0x7F) << shift
		if b&0x80 == 0 {
			return n, size, nil
		}
	}
	return 0, size, fmt.Errorf("%w: a variable byte integer longer than %d bytes", packets.ErrMalformedPacket, maxLengthBytes)
}

// decode checks and decodes the body of a packet a client sent, in protocol
// version (a CONNECT carries its own). Its error is ErrMalformedPacket,
// wrapped with what is wrong. Packet types a client does not send are
// returned with their header only.
func decode(fh packets.FixedHeader, version byte, body []byte) (packets.Packet, error) {
	fh.Remaining = len(body)
	pk := packets.Packet{FixedHeader: fh, ProtocolVersion: version}
	if err := checkBody(fh, version, body); err != nil {
		return pk, err
	}
	var err error
	switch fh.Type {
	case packets.Connect:
		err = pk.ConnectDecode(body)
	case packets.Publish:
		err = pk.PublishDecode(body)
	case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp:
		err = pk.PubackDecode(body) // the four share one layout
	case packets.Subscribe:
		err = pk.SubscribeDecode(body)
	case packets.Unsubscribe:
		err = pk.UnsubscribeDecode(body)
	case packets.Disconnect:
		err = pk.DisconnectDecode(body)
	}
	if err != nil {
		return pk, malformed(fh.Type, "%v", err)
	}
	return pk, nil
}

// malformed is ErrMalformedPacket saying what is wrong with a packet of typ.
func malformed(typ byte, format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s", packets.ErrMalformedPacket, packets.PacketNames[typ], fmt.Sprintf(format, a...))
}

// checkBody checks that body has the fields of a packet of fh's type in
// protocol version, each within the body, and nothing after the last. It
// checks lengths and structure only: values are the decoder's to judge.
func checkBody(fh packets.FixedHeader, version byte, body []byte) error {
	r := &fields{typ: fh.Type, b: body}
	switch fh.Type {
	case packets.Connect:
		r.lengthPrefixed("protocol name")
		v := r.byte("protocol level")
		flags := r.byte("connect flags")
		r.skip(2, "keepalive")
		if v == 5 {
			r.properties("properties")
		}
		r.lengthPrefixed("client identifier")
		if flags&0x04 != 0 {
			if v == 5 {
				r.properties("will properties")
			}
			r.lengthPrefixed("will topic")
			r.lengthPrefixed("will payload")
		}
		if flags&0x80 != 0 {
			r.lengthPrefixed("user name")
		}
		if flags&0x40 != 0 {
			r.lengthPrefixed("password")
		}
		r.end()
	case packets.Publish:
		r.lengthPrefixed("topic name")
		if fh.Qos > 0 {
			r.skip(2, "packet identifier")
		}
		if version == 5 {
			r.properties("properties")
		}
		// The rest is the payload.
	case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp:
		r.skip(2, "packet identifier")
		if version == 5 && r.left() > 0 {
			r.byte("reason code")
			if r.left() > 0 {
				r.properties("properties")
			}
		}
		r.end()
	case packets.Subscribe:
		r.skip(2, "packet identifier")
		if version == 5 {
			r.properties("properties")
		}
		for i := 1; r.err == nil && r.left() > 0; i++ {
			r.lengthPrefixed(fmt.Sprintf("topic filter %d", i))
			r.byte(fmt.Sprintf("subscription options of filter %d", i))
		}
	case packets.Unsubscribe:
		r.skip(2, "packet identifier")
		if version == 5 {
			r.properties("properties")
		}
		for i := 1; r.err == nil && r.left() > 0; i++ {
			r.lengthPrefixed(fmt.Sprintf("topic filter %d", i))
		}
	case packets.Pingreq:
		r.end()
	case packets.Disconnect:
		if version == 5 && r.left() > 0 {
			r.byte("reason code")
			if r.left() > 0 {
				r.properties("properties")
			}
		}
		r.end()
	}
	return r.err
}

// fields walks a packet body field by field. The first field that does not
// fit sets err, after which every step does nothing.
type fields struct {
	typ byte
	b   []byte
	off int
	err error
}

func (r *fields) left() int { return len(r.b) - r.off }

func (r *fields) fail(format string, a ...any) {
	if r.err == nil {
		r.err = malformed(r.typ, format, a...)
	}
}

// skip steps over a field of n bytes.
func (r *fields) skip(n int, what string) {
	if r.err != nil {
		return
	}
	if n > r.left() {
		r.fail("%s needs %d bytes at offset %d, %d left", what, n, r.off, r.left())
		return
	}
	r.off += n
}

func (r *fields) byte(what string) byte {
	r.skip(1, what)
	if r.err != nil {
		return 0
	}
	return r.b[r.off-1]
}

// lengthPrefixed steps over a two-byte length and as many bytes (a UTF-8
// string or binary data).
func (r *fields) lengthPrefixed(what string) {
	r.skip(2, what+" length")
	if r.err != nil {
		return
	}
	r.skip(int(binary.BigEndian.Uint16(r.b[r.off-2:])), what)
}

func (r *fields) varint(what string) int {
	if r.err != nil {
		return 0
	}
	n, size, err := readVarint(&byteReader{r.b[r.off:]})
	if err != nil {
		r.fail("%s at offset %d: not a variable byte integer of at most %d bytes", what, r.off, maxLengthBytes)
		return 0
	}
	r.off += size
	return n
}

// end checks that the body has no bytes after its last field.
func (r *fields) end() {
	if r.err == nil && r.left() > 0 {
		r.fail("%d bytes after the last field", r.left())
	}
}

// properties steps over an MQTT 5 property section: its length, then
// properties that fill exactly that length.
func (r *fields) properties(what string) {
	n := r.varint(what + " length")
	if r.err != nil {
		return
	}
	if n > r.left() {
		r.fail("%s of %d bytes at offset %d, %d left", what, n, r.off, r.left())
		return
	}
	p := &fields{typ: r.typ, b: r.b[r.off : r.off+n]}
	for p.err == nil && p.left() > 0 {
		id := p.byte("property identifier")
		name := fmt.Sprintf("property 0x%02X", id)
		switch id {
		case packets.PropPayloadFormat, packets.PropRequestProblemInfo, packets.PropRequestResponseInfo,
			packets.PropMaximumQos, packets.PropRetainAvailable, packets.PropWildcardSubAvailable,
			packets.PropSubIDAvailable, packets.PropSharedSubAvailable:
			p.skip(1, name)
		case packets.PropServerKeepAlive, packets.PropReceiveMaximum, packets.PropTopicAliasMaximum, packets.PropTopicAlias:
			p.skip(2, name)
		case packets.PropMessageExpiryInterval, packets.PropSessionExpiryInterval, packets.PropWillDelayInterval,
			packets.PropMaximumPacketSize:
			p.skip(4, name)
		case packets.PropSubscriptionIdentifier:
			p.varint(name)
		case packets.PropContentType, packets.PropResponseTopic, packets.PropCorrelationData,
			packets.PropAssignedClientID, packets.PropAuthenticationMethod, packets.PropAuthenticationData,
			packets.PropResponseInfo, packets.PropServerReference, packets.PropReasonString:
			p.lengthPrefixed(name)
		case packets.PropUser:
			p.lengthPrefixed(name + " key")
			p.lengthPrefixed(name + " value")
		default:
			p.fail("unknown property identifier 0x%02X", id)
		}
	}
	if p.err != nil {
		r.err = p.err
		return
	}
	r.off += n
}

// byteReader reads a byte slice one byte at a time, without the
// allocation of a bytes.Reader.
type byteReader struct{ b []byte }

func (br *byteReader) ReadByte() (byte, error) {
	if len(br.b) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	c := br.b[0]
	br.b = br.b[1:]
	return c, nil
}
