package mqttd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
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

	closing   atomic.Bool // Close was called
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

// Keepalive is the keepalive interval the client asked for in its
// CONNECT; 0 when it asked for none.
func (c *Conn) Keepalive() time.Duration { return time.Duration(c.keepalive) * time.Second }

// ProtocolVersion is 4 for MQTT 3.1.1 and 5 for MQTT 5.
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
	// cut it short. A write about to start sees closing after setting its
	// own deadline and shortens it (writeLocked).
	c.closing.Store(true)
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
	fh, size, err := readFixedHeader(c.br)
	if err != nil {
		return fh, nil, err
	}
	if size+fh.Remaining > c.s.opts.MaxPacketSize {
		return fh, nil, packets.ErrPacketTooLarge
	}
	body, err := c.readBody(fh.Remaining)
	if err != nil {
		return fh, nil, err
	}
	c.s.info.BytesReceived.Add(int64(size + fh.Remaining))
	return fh, body, nil
}

// readBody reads a packet body of n bytes. A large body's buffer grows as
// its bytes arrive, so a client that announces a large packet, before it
// has even authenticated, holds only as much memory as it sent.
func (c *Conn) readBody(n int) ([]byte, error) {
	if n <= readBufferSize {
		body := make([]byte, n)
		_, err := io.ReadFull(c.br, body)
		return body, err
	}
	var buf bytes.Buffer
	got, err := buf.ReadFrom(io.LimitReader(c.br, int64(n)))
	if err == nil && got < int64(n) {
		err = io.ErrUnexpectedEOF
	}
	return buf.Bytes(), err
}

// fail ends the connection after err. A packets.Code error is a protocol
// error or refusal that an MQTT 5 client is told about, as is a keepalive
// that ran out; anything else is the connection's own end. A malformed
// packet is also logged as a warning: the client or its network is broken.
func (c *Conn) fail(err error) {
	var (
		code    packets.Code
		timeout net.Error
	)
	switch {
	case errors.As(err, &code) && code.Code == packets.ErrMalformedPacket.Code:
		c.warnMalformed(err)
		c.Close(packets.ErrMalformedPacket)
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

// warnMalformed logs, in one line, that the client sent a malformed packet
// and what was wrong with it; the connection is then closed.
func (c *Conn) warnMalformed(err error) {
	c.s.opts.Log.Warn("mqtt malformed packet; connection closed", "client", c.id, "remote", c.remote,
		"listener", c.listener, "error", err)
}

// shut closes the connection without a word to the client.
func (c *Conn) shut() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.closed = true
	_ = c.nc.Close()
}

// finish runs when the connection's goroutine ends, however it ends: a
// panic in packet handling closes this connection only. Packets are
// checked before they are decoded (decode.go), so a recovered panic is a
// bug, counted in Info.Panics, which the tests require to stay zero.
func (c *Conn) finish() {
	if r := recover(); r != nil {
		c.s.info.Panics.Add(1)
		c.s.opts.Log.Error("mqtt packet handling panicked; connection closed", "client", c.id, "remote", c.remote,
			"listener", c.listener, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		c.Close(packets.ErrImplementationSpecificError)
	}
	c.shut()
	if c.admitted {
		if c.sess != nil {
			c.sess.detach(c, c.expiry)
		}
		c.s.info.ClientsConnected.Add(-1)
		c.tellClosed()
	}
	c.s.mu.Lock()
	delete(c.s.conns, c)
	if c.s.ending[c.id] == c {
		delete(c.s.ending, c.id)
	}
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
	case packets.Pubrec:
		err = pk.PubrecEncode(buf)
	case packets.Pubcomp:
		err = pk.PubcompEncode(buf)
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
	if timeout > closeWriteTimeout && c.closing.Load() {
		_ = c.nc.SetWriteDeadline(time.Now().Add(closeWriteTimeout))
	}
	n, err := c.nc.Write(buf.Bytes())
	c.s.info.BytesSent.Add(int64(n))
	if err != nil {
		c.closed = true
		_ = c.nc.Close()
		return err
	}
	return nil
}
