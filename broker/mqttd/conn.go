package mqttd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// readBufferSize is each connection's read buffer. Device packets are
// small; a larger body is read into a buffer of its own.
const readBufferSize = 512

// Conn is one client connection.
type Conn struct {
	s        *Server
	nc       net.Conn
	br       *bufio.Reader
	listener string
	remote   string
	done     chan struct{}

	// Set while the CONNECT is handled, then read-only.
	id           string
	version      byte
	keepalive    uint16
	receiveMax   uint16 // the client's receive maximum (0: not given)
	maxOut       uint32 // the client's maximum packet size (0: not given)
	noProblems   bool   // the client asked for no reason strings
	sess         *session
	admitted     bool
	expiry       time.Duration // session expiry; a DISCONNECT may change it
	topicAliases []string      // inbound topic aliases, allocated on first use

	wmu       sync.Mutex
	connacked bool // a successful CONNACK was written
	closed    bool
}

func newConn(s *Server, listener string, nc net.Conn) *Conn {
	return &Conn{s: s, nc: nc, br: bufio.NewReaderSize(nc, readBufferSize), listener: listener,
		remote: nc.RemoteAddr().String(), done: make(chan struct{})}
}

// ID is the client identifier from the CONNECT.
func (c *Conn) ID() string { return c.id }

// Remote is the client's network address.
func (c *Conn) Remote() string { return c.remote }

// Listener is the id of the listener that accepted the connection.
func (c *Conn) Listener() string { return c.listener }

// ProtocolVersion is 4 for MQTT 3.1.1 and 5 for MQTT 5 (3 for MQTT 3.1).
func (c *Conn) ProtocolVersion() byte { return c.version }

// Done is closed once the connection ended and Handler.Closed returned.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Closed reports whether the connection is closed or closing.
func (c *Conn) Closed() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.closed
}

// closeWriteTimeout bounds the DISCONNECT that Close sends, and any write
// in progress when Close is called.
const closeWriteTimeout = time.Second

// Close ends the connection, first telling an MQTT 5 client why with a
// DISCONNECT carrying code. It does not wait for the connection's goroutine.
func (c *Conn) Close(code packets.Code) {
	// A write blocked on a client that reads nothing holds the write lock:
	// cut it short.
	_ = c.nc.SetWriteDeadline(time.Now().Add(closeWriteTimeout))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return
	}
	if c.version == 5 && c.connacked {
		pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}, ReasonCode: code.Code}
		if code.Code >= packets.ErrUnspecifiedError.Code {
			pk.Properties.ReasonString = code.Reason
		}
		_ = c.writeLocked(&pk, closeWriteTimeout)
	}
	c.closed = true
	_ = c.nc.Close()
}

// quota is the most messages in flight to the client at a time.
func (c *Conn) quota() int {
	if c.receiveMax == 0 {
		return c.s.opts.MaxInflight
	}
	return min(int(c.receiveMax), c.s.opts.MaxInflight)
}

// serve runs the connection. While it waits for a packet, only serve and
// next are on the goroutine's stack, both with small frames: the packet
// handlers, which hold whole packets, return before the next read.
func (c *Conn) serve() {
	defer c.finish()
	_ = c.nc.SetReadDeadline(time.Now().Add(c.s.opts.ConnectTimeout))
	if !c.open() {
		return
	}
	for {
		c.refreshDeadline()
		fh, body, err := c.next()
		if err == nil {
			err = c.handle(fh, body)
		}
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// refreshDeadline gives the client one and a half keepalive intervals
// for its next packet.
func (c *Conn) refreshDeadline() {
	var d time.Time
	if c.keepalive > 0 {
		d = time.Now().Add(time.Duration(c.keepalive) * 1500 * time.Millisecond)
	}
	_ = c.nc.SetReadDeadline(d)
}

// next reads one packet: its fixed header and its body.
func (c *Conn) next() (packets.FixedHeader, []byte, error) {
	var fh packets.FixedHeader
	b, err := c.br.ReadByte()
	if err != nil {
		return fh, nil, err
	}
	if err := fh.Decode(b); err != nil {
		return fh, nil, packets.ErrMalformedPacket
	}
	n, lenBytes, err := packets.DecodeLength(c.br)
	if err != nil {
		if errors.As(err, new(packets.Code)) {
			return fh, nil, packets.ErrMalformedPacket
		}
		return fh, nil, err
	}
	if 1+lenBytes+n > c.s.opts.MaxPacketSize {
		return fh, nil, packets.ErrPacketTooLarge
	}
	fh.Remaining = n
	body := make([]byte, n)
	if _, err := io.ReadFull(c.br, body); err != nil {
		return fh, nil, err
	}
	c.s.info.BytesReceived.Add(int64(1 + lenBytes + n))
	return fh, body, nil
}

// fail ends the connection after err. A packets.Code error is a protocol
// error or refusal that an MQTT 5 client is told about, as is a keepalive
// that ran out; anything else is the connection's own end.
func (c *Conn) fail(err error) {
	var (
		code    packets.Code
		timeout net.Error
	)
	switch {
	case errors.As(err, &code) && code.Code >= packets.ErrUnspecifiedError.Code:
		c.s.opts.Log.Debug("mqtt connection closed", "client", c.id, "remote", c.remote, "code", code.Code, "reason", code.Reason)
		c.Close(code)
	case errors.As(err, &timeout) && timeout.Timeout():
		c.Close(packets.ErrKeepAliveTimeout)
	default:
		if !errors.Is(err, errClientDisconnect) && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			c.s.opts.Log.Debug("mqtt connection ended", "client", c.id, "remote", c.remote, "error", err)
		}
		c.shut()
	}
}

// shut closes the connection without a word to the client.
func (c *Conn) shut() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.closed = true
	_ = c.nc.Close()
}

// finish runs when the connection's goroutine ends, however it ends: a
// panic in packet handling closes this connection only.
func (c *Conn) finish() {
	if r := recover(); r != nil {
		c.s.info.Panics.Add(1)
		c.s.opts.Log.Error("mqtt packet handling panicked; connection closed", "client", c.id, "remote", c.remote,
			"listener", c.listener, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		c.Close(packets.ErrImplementationSpecificError)
	}
	c.shut()
	if c.admitted {
		// The Handler hears of the end while the session still holds this
		// connection: a connection taking over waits for done, and one
		// that finds the session free must not be told Online before this
		// one's Closed.
		c.s.info.ClientsConnected.Add(-1)
		c.tellClosed()
		if c.sess != nil {
			c.sess.detach(c, c.expiry)
		}
	}
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	close(c.done)
}

// tellClosed tells the Handler that the connection ended. A panic there is
// logged and counted like one in packet handling, and ends nothing else.
func (c *Conn) tellClosed() {
	defer func() {
		if r := recover(); r != nil {
			c.s.info.Panics.Add(1)
			c.s.opts.Log.Error("mqtt connection end handling panicked", "client", c.id, "remote", c.remote,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	c.s.h.Closed(c)
}

// open handles the CONNECT: it validates and authenticates it, attaches
// the session, answers with a CONNACK and sends what the session holds.
func (c *Conn) open() bool {
	fh, body, err := c.next()
	if err != nil || fh.Type != packets.Connect {
		return false
	}
	pk := packets.Packet{FixedHeader: fh}
	if err := pk.ConnectDecode(body); err != nil {
		return false
	}
	c.wmu.Lock() // Close, from any goroutine, reads it
	c.version = pk.ProtocolVersion
	c.wmu.Unlock()
	code := pk.ConnectValidate()
	switch {
	case code == packets.ErrProtocolViolationProtocolVersion:
		code = packets.ErrUnsupportedProtocolVersion
	case code != packets.CodeSuccess:
	case pk.Connect.WillFlag && pk.Connect.WillQos > 1:
		code = packets.ErrQosNotSupported
	case pk.Connect.WillRetain:
		code = packets.ErrRetainNotSupported
	}
	if code != packets.CodeSuccess {
		c.refuse(code)
		return false
	}
	c.id, c.keepalive = pk.Connect.ClientIdentifier, pk.Connect.Keepalive
	props := &pk.Properties
	if c.version == 5 {
		c.receiveMax, c.maxOut = props.ReceiveMaximum, props.MaximumPacketSize
		c.noProblems = props.RequestProblemInfoFlag && props.RequestProblemInfo == 0
	}
	if err := c.s.h.Connect(c, &pk); err != nil {
		if !errors.As(err, &code) || code.Code < packets.ErrUnspecifiedError.Code {
			code = packets.ErrServerUnavailable
		}
		c.refuse(code)
		return false
	}
	c.admitted = true
	c.s.info.ClientsConnected.Add(1)

	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connack}}
	limit := c.s.opts.MaxSessionExpiry
	switch {
	case c.version < 5 && !pk.Connect.Clean:
		c.expiry = limit
	case c.version == 5 && props.SessionExpiryIntervalFlag:
		c.expiry = time.Duration(props.SessionExpiryInterval) * time.Second
		if props.SessionExpiryInterval == math.MaxUint32 || c.expiry > limit {
			c.expiry = limit
			ack.Properties.SessionExpiryInterval = uint32(limit / time.Second)
			ack.Properties.SessionExpiryIntervalFlag = true
		}
	}
	ss, present, err := c.s.attach(c, pk.Connect.Clean)
	if err != nil {
		c.s.opts.Log.Warn("mqtt session not attached", "client", c.id, "error", err)
		c.refuse(packets.ErrServerUnavailable)
		return false
	}
	c.sess = ss
	c.s.h.Online(c)

	ack.SessionPresent = present
	ack.Properties.ReceiveMaximum = uint16(c.s.opts.MaxInflight)
	ack.Properties.MaximumQos, ack.Properties.MaximumQosFlag = 1, true
	ack.Properties.RetainAvailable, ack.Properties.RetainAvailableFlag = 0, true
	ack.Properties.SharedSubAvailable, ack.Properties.SharedSubAvailableFlag = 0, true
	ack.Properties.SubIDAvailable, ack.Properties.SubIDAvailableFlag = 0, true
	ack.Properties.MaximumPacketSize = uint32(c.s.opts.MaxPacketSize)
	ack.Properties.TopicAliasMaximum = c.s.opts.TopicAliasMaximum
	c.wmu.Lock()
	err = c.writeLocked(&ack, c.s.opts.WriteTimeout)
	c.connacked = err == nil
	c.wmu.Unlock()
	if err != nil {
		return false
	}
	ss.resume(c)
	c.s.h.Ready(c)
	return true
}

// refuse answers a CONNECT with a refusing CONNACK; MQTT 3.1.1 clients get
// the return code that says the same.
func (c *Conn) refuse(code packets.Code) {
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connack}, ReasonCode: code.Code}
	if c.version < 5 {
		ack.ReasonCode = v3ReturnCode(code)
	} else {
		ack.Properties.ReasonString = code.Reason
	}
	_ = c.write(&ack)
}

// v3ReturnCode maps an MQTT 5 CONNACK reason code to MQTT 3.1.1's.
func v3ReturnCode(code packets.Code) byte {
	switch code.Code {
	case packets.ErrUnsupportedProtocolVersion.Code:
		return 0x01
	case packets.ErrClientIdentifierNotValid.Code:
		return 0x02
	case packets.ErrBadUsernameOrPassword.Code, packets.ErrMalformedUsername.Code, packets.ErrMalformedPassword.Code:
		return 0x04
	case packets.ErrNotAuthorized.Code, packets.ErrBanned.Code:
		return 0x05
	}
	return 0x03 // server unavailable
}

// errClientDisconnect ends a connection whose client sent DISCONNECT.
var errClientDisconnect = errors.New("mqttd: client disconnected")

// handle acts on one packet from a connected client.
func (c *Conn) handle(fh packets.FixedHeader, body []byte) error {
	switch fh.Type {
	case packets.Publish:
		return c.onPublish(fh, body)
	case packets.Puback:
		pk := packets.Packet{FixedHeader: fh, ProtocolVersion: c.version}
		if err := pk.PubackDecode(body); err != nil {
			return packets.ErrMalformedPacket
		}
		c.sess.acked(pk.PacketID)
		return nil
	case packets.Subscribe:
		return c.onSubscribe(fh, body)
	case packets.Unsubscribe:
		return c.onUnsubscribe(fh, body)
	case packets.Pingreq:
		return c.write(&packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingresp}})
	case packets.Disconnect:
		return c.onDisconnect(fh, body)
	case packets.Pubrec, packets.Pubrel, packets.Pubcomp:
		// The server sends no QoS 2 and acknowledges a QoS 2 PUBLISH with a
		// PUBACK (it handles it as QoS 1): there is no exchange to continue.
		return nil
	}
	return packets.ErrProtocolViolation
}

// onPublish hands a client's message to the Handler and acknowledges it.
func (c *Conn) onPublish(fh packets.FixedHeader, body []byte) error {
	pk := packets.Packet{FixedHeader: fh, ProtocolVersion: c.version}
	if err := pk.PublishDecode(body); err != nil {
		return packets.ErrMalformedPacket
	}
	c.s.info.MessagesReceived.Add(1)
	if code := pk.PublishValidate(c.s.opts.TopicAliasMaximum); code != packets.CodeSuccess {
		return code
	}
	topic := pk.TopicName
	if alias := pk.Properties.TopicAlias; pk.Properties.TopicAliasFlag {
		if c.topicAliases == nil {
			c.topicAliases = make([]string, c.s.opts.TopicAliasMaximum)
		}
		if topic != "" {
			c.topicAliases[alias-1] = topic
		} else if topic = c.topicAliases[alias-1]; topic == "" {
			return packets.ErrTopicAliasInvalid
		}
	}
	pk.TopicName = topic
	code := packets.CodeSuccess
	if err := c.s.h.Publish(c, &pk); err != nil {
		if !errors.As(err, &code) || code.Code < packets.ErrUnspecifiedError.Code {
			return packets.ErrImplementationSpecificError
		}
	}
	if fh.Qos == 0 {
		return nil
	}
	if c.version < 5 && code.Code >= packets.ErrUnspecifiedError.Code {
		if code.Code == packets.ErrNotAuthorized.Code {
			return code
		}
		code = packets.CodeSuccess
	}
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pk.PacketID, ReasonCode: code.Code}
	if code.Code >= packets.ErrUnspecifiedError.Code {
		ack.Properties.ReasonString = code.Reason
	}
	return c.write(&ack)
}

// sharePrefix starts a shared subscription's filter, which the server
// does not support.
const sharePrefix = "$share/"

// onSubscribe grants the filters the Handler allows, at QoS 1 at most.
func (c *Conn) onSubscribe(fh packets.FixedHeader, body []byte) error {
	pk := packets.Packet{FixedHeader: fh, ProtocolVersion: c.version}
	if err := pk.SubscribeDecode(body); err != nil {
		return packets.ErrMalformedPacket
	}
	if code := pk.SubscribeValidate(); code != packets.CodeSuccess {
		return code
	}
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Suback}, PacketID: pk.PacketID,
		ReasonCodes: make([]byte, len(pk.Filters))}
	inUse := c.sess.inFlight(pk.PacketID)
	if inUse {
		ack.Properties.ReasonString = packets.ErrPacketIdentifierInUse.Reason
	}
	granted := false
	for i, sub := range pk.Filters {
		var code byte
		switch {
		case inUse:
			code = packets.ErrPacketIdentifierInUse.Code
		case !validFilter(sub.Filter):
			code = packets.ErrTopicFilterInvalid.Code
		case strings.HasPrefix(sub.Filter, sharePrefix):
			code = packets.ErrSharedSubscriptionsNotSupported.Code
		case !c.s.h.CanSubscribe(c, sub.Filter):
			code = packets.ErrNotAuthorized.Code
		default:
			code = min(sub.Qos, 1)
			c.sess.subscribe(sub.Filter, code)
			granted = true
		}
		if c.version < 5 && code >= packets.ErrUnspecifiedError.Code {
			code = 0x80 // MQTT 3.1.1 has a single failure code
		}
		ack.ReasonCodes[i] = code
	}
	if err := c.write(&ack); err != nil {
		return err
	}
	if granted {
		c.s.h.Subscribed(c)
	}
	return nil
}

// onUnsubscribe removes filters from the session.
func (c *Conn) onUnsubscribe(fh packets.FixedHeader, body []byte) error {
	pk := packets.Packet{FixedHeader: fh, ProtocolVersion: c.version}
	if err := pk.UnsubscribeDecode(body); err != nil {
		return packets.ErrMalformedPacket
	}
	if code := pk.UnsubscribeValidate(); code != packets.CodeSuccess {
		return code
	}
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsuback}, PacketID: pk.PacketID,
		ReasonCodes: make([]byte, len(pk.Filters))}
	inUse := c.sess.inFlight(pk.PacketID)
	for i, sub := range pk.Filters {
		switch {
		case inUse:
			ack.ReasonCodes[i] = packets.ErrPacketIdentifierInUse.Code
		case c.sess.unsubscribe(sub.Filter):
			ack.ReasonCodes[i] = packets.CodeSuccess.Code
		default:
			ack.ReasonCodes[i] = packets.CodeNoSubscriptionExisted.Code
		}
	}
	return c.write(&ack)
}

// onDisconnect ends the connection at the client's request; an MQTT 5
// client may change its session expiry, but not from zero.
func (c *Conn) onDisconnect(fh packets.FixedHeader, body []byte) error {
	pk := packets.Packet{FixedHeader: fh, ProtocolVersion: c.version}
	if err := pk.DisconnectDecode(body); err != nil {
		return packets.ErrMalformedPacket
	}
	if p := pk.Properties; p.SessionExpiryIntervalFlag {
		if c.expiry == 0 && p.SessionExpiryInterval > 0 {
			return packets.ErrProtocolViolationZeroNonZeroExpiry
		}
		c.expiry = min(time.Duration(p.SessionExpiryInterval)*time.Second, c.s.opts.MaxSessionExpiry)
	}
	return errClientDisconnect
}

// errTooLargeForClient is a packet above the client's maximum packet size.
var errTooLargeForClient = errors.New("mqttd: packet exceeds the client's maximum packet size")

// writePublish writes a message at qos: 1 for a message in flight, 0 for
// one sent at most once.
func (c *Conn) writePublish(m *message, qos byte, dup bool) error {
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos, Dup: dup},
		TopicName: m.topic, Payload: m.payload}
	if qos > 0 {
		pk.PacketID = m.id
	}
	pk.Properties.ResponseTopic, pk.Properties.CorrelationData = m.responseTopic, m.correlation
	err := c.write(&pk)
	if err == nil {
		c.s.info.MessagesSent.Add(1)
	}
	return err
}

func (c *Conn) write(pk *packets.Packet) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(pk, c.s.opts.WriteTimeout)
}

var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeLocked encodes pk and writes it within timeout. A failed write
// closes the connection. The caller holds c.wmu.
func (c *Conn) writeLocked(pk *packets.Packet, timeout time.Duration) error {
	if c.closed {
		return net.ErrClosed
	}
	pk.ProtocolVersion = c.version
	pk.Mods.MaxSize = c.maxOut
	pk.Mods.DisallowProblemInfo = c.noProblems
	pk.Mods.AllowResponseInfo = pk.FixedHeader.Type != packets.Connack
	buf := buffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 64<<10 {
			buffers.Put(buf)
		}
	}()
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackEncode(buf)
	case packets.Publish:
		err = pk.PublishEncode(buf)
	case packets.Puback:
		err = pk.PubackEncode(buf)
	case packets.Suback:
		err = pk.SubackEncode(buf)
	case packets.Unsuback:
		err = pk.UnsubackEncode(buf)
	case packets.Pingresp:
		err = pk.PingrespEncode(buf)
	case packets.Disconnect:
		err = pk.DisconnectEncode(buf)
	default:
		err = fmt.Errorf("mqttd: cannot write packet type %d", pk.FixedHeader.Type)
	}
	if err != nil {
		return err
	}
	if c.maxOut > 0 && buf.Len() > int(c.maxOut) {
		return errTooLargeForClient
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
	n, err := c.nc.Write(buf.Bytes())
	c.s.info.BytesSent.Add(int64(n))
	if err != nil {
		c.closed = true
		_ = c.nc.Close()
		return err
	}
	return nil
}
