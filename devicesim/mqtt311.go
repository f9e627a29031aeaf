package devicesim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// paho.golang speaks MQTT 5 only, so MQTT 3.1.1 devices use this small
// client built on the packet codec of mochi-mqtt (already a dependency). It
// does what a dashcam needs: CONNECT, one QoS 1 SUBSCRIBE, QoS 1 PUBLISH in
// both directions, keep-alive pings and DISCONNECT.

const v311 = 4 // protocol level of MQTT 3.1.1

var errLinkClosed = errors.New("devicesim: connection closed")

// link311 is an MQTT 3.1.1 connection.
type link311 struct {
	conn      net.Conn
	r         *bufio.Reader
	keepalive time.Duration
	onMessage func(inbound)
	present   bool

	wmu       sync.Mutex // serialises writes
	lastWrite atomic.Int64

	mu      sync.Mutex
	nextID  uint16
	waiting map[uint16]chan packets.Packet

	closeOnce sync.Once
	closed    chan struct{}
}

// dial311 connects with MQTT 3.1.1 and subscribes to c.Filter at QoS 1.
func dial311(ctx context.Context, c dialConfig) (link, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	conn, err := dialNet(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("devicesim: dial %s: %w", c.URL.Host, err)
	}
	l := &link311{
		conn:      conn,
		r:         bufio.NewReaderSize(conn, 4096),
		keepalive: c.KeepAlive,
		onMessage: c.OnMessage,
		waiting:   map[uint16]chan packets.Packet{},
		closed:    make(chan struct{}),
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	connect := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: v311,
		Connect: packets.ConnectParams{
			ProtocolName:     []byte("MQTT"),
			Clean:            c.Clean,
			Keepalive:        uint16(c.KeepAlive / time.Second),
			ClientIdentifier: c.ClientID,
			UsernameFlag:     true,
			Username:         []byte(c.Username),
			PasswordFlag:     true,
			Password:         []byte(c.Password),
		},
	}
	if err := l.write(&connect, (*packets.Packet).ConnectEncode); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("devicesim: connect: %w", err)
	}
	ack, err := l.read()
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("devicesim: connack: %w", err)
	}
	if ack.FixedHeader.Type != packets.Connack {
		_ = conn.Close()
		return nil, fmt.Errorf("devicesim: expected CONNACK, got packet type %d", ack.FixedHeader.Type)
	}
	if ack.ReasonCode != 0 {
		_ = conn.Close()
		name := connack311Reasons[ack.ReasonCode]
		if name == "" {
			name = "return code"
		}
		return nil, &RefusedError{Code: ack.ReasonCode, Name: name}
	}
	l.present = ack.SessionPresent
	_ = conn.SetDeadline(time.Time{})
	go l.readLoop()
	go l.pingLoop()
	if l.present {
		// The resumed session holds the subscription.
		return l, nil
	}

	sub := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
		ProtocolVersion: v311,
		Filters:         packets.Subscriptions{{Filter: c.Filter, Qos: 1}},
	}
	suback, err := l.request(ctx, &sub, (*packets.Packet).SubscribeEncode)
	if err != nil {
		l.abort()
		return nil, fmt.Errorf("devicesim: subscribe %s: %w", c.Filter, err)
	}
	if len(suback.ReasonCodes) != 1 || suback.ReasonCodes[0] >= 0x80 {
		l.abort()
		return nil, &RefusedError{Code: 0x80, Name: "failure", Reason: "subscribe " + c.Filter}
	}
	return l, nil
}

var connack311Reasons = map[byte]string{
	1: "unacceptable protocol version", 2: "identifier rejected", 3: "server unavailable",
	4: "bad user name or password", 5: "not authorized",
}

// write encodes pk with enc and writes it in one call.
func (l *link311) write(pk *packets.Packet, enc func(*packets.Packet, *bytes.Buffer) error) error {
	var buf bytes.Buffer
	if err := enc(pk, &buf); err != nil {
		return err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	_, err := l.conn.Write(buf.Bytes())
	l.lastWrite.Store(time.Now().UnixNano())
	return err
}

// read reads one packet from the connection.
func (l *link311) read() (packets.Packet, error) {
	pk := packets.Packet{ProtocolVersion: v311}
	b, err := l.r.ReadByte()
	if err != nil {
		return pk, err
	}
	if err := pk.FixedHeader.Decode(b); err != nil {
		return pk, err
	}
	n, _, err := packets.DecodeLength(l.r)
	if err != nil {
		return pk, err
	}
	pk.FixedHeader.Remaining = n
	buf := make([]byte, n)
	if _, err := io.ReadFull(l.r, buf); err != nil {
		return pk, err
	}
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackDecode(buf)
	case packets.Publish:
		err = pk.PublishDecode(buf)
	case packets.Puback:
		err = pk.PubackDecode(buf)
	case packets.Suback:
		err = pk.SubackDecode(buf)
	case packets.Pingresp:
	case packets.Disconnect:
	default:
		err = fmt.Errorf("devicesim: unexpected packet type %d", pk.FixedHeader.Type)
	}
	return pk, err
}

// readLoop dispatches packets until the connection fails.
func (l *link311) readLoop() {
	defer l.abort()
	for {
		if l.keepalive > 0 {
			_ = l.conn.SetReadDeadline(time.Now().Add(l.keepalive * 3 / 2))
		}
		pk, err := l.read()
		if err != nil {
			return
		}
		switch pk.FixedHeader.Type {
		case packets.Publish:
			l.onMessage(inbound{Topic: pk.TopicName, Payload: pk.Payload})
			if pk.FixedHeader.Qos > 0 {
				ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, ProtocolVersion: v311, PacketID: pk.PacketID}
				if l.write(&ack, (*packets.Packet).PubackEncode) != nil {
					return
				}
			}
		case packets.Puback, packets.Suback:
			l.mu.Lock()
			ch := l.waiting[pk.PacketID]
			delete(l.waiting, pk.PacketID)
			l.mu.Unlock()
			if ch != nil {
				ch <- pk
			}
		case packets.Disconnect:
			return
		}
	}
}

// pingLoop keeps the connection alive when nothing else is written.
func (l *link311) pingLoop() {
	if l.keepalive <= 0 {
		return
	}
	t := time.NewTicker(l.keepalive / 2)
	defer t.Stop()
	for {
		select {
		case <-l.closed:
			return
		case <-t.C:
			if time.Since(time.Unix(0, l.lastWrite.Load())) < l.keepalive/2 {
				continue
			}
			ping := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}, ProtocolVersion: v311}
			if l.write(&ping, (*packets.Packet).PingreqEncode) != nil {
				l.abort()
				return
			}
		}
	}
}

// request sends a packet that carries a packet id and waits for its acknowledgement.
func (l *link311) request(ctx context.Context, pk *packets.Packet, enc func(*packets.Packet, *bytes.Buffer) error) (packets.Packet, error) {
	ch := make(chan packets.Packet, 1)
	l.mu.Lock()
	for i := 0; ; i++ {
		if i == 65535 {
			l.mu.Unlock()
			return packets.Packet{}, errors.New("devicesim: no free packet id")
		}
		l.nextID++
		if l.nextID == 0 {
			l.nextID = 1
		}
		if _, used := l.waiting[l.nextID]; !used {
			break
		}
	}
	pk.PacketID = l.nextID
	l.waiting[pk.PacketID] = ch
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if l.waiting[pk.PacketID] == ch {
			delete(l.waiting, pk.PacketID)
		}
		l.mu.Unlock()
	}
	if err := l.write(pk, enc); err != nil {
		release()
		l.abort()
		return packets.Packet{}, err
	}
	select {
	case ack := <-ch:
		return ack, nil
	case <-l.closed:
		release()
		return packets.Packet{}, errLinkClosed
	case <-ctx.Done():
		release()
		return packets.Packet{}, ctx.Err()
	}
}

func (l *link311) publish(ctx context.Context, topic string, payload, _ []byte) error {
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Publish, Qos: 1},
		ProtocolVersion: v311,
		TopicName:       topic,
		Payload:         payload,
	}
	_, err := l.request(ctx, &pk, (*packets.Packet).PublishEncode)
	return err
}

func (l *link311) done() <-chan struct{} { return l.closed }
func (l *link311) sessionPresent() bool  { return l.present }

func (l *link311) abort() {
	l.closeOnce.Do(func() {
		_ = l.conn.Close()
		close(l.closed)
	})
}

func (l *link311) disconnect() {
	dis := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}, ProtocolVersion: v311}
	_ = l.write(&dis, (*packets.Packet).DisconnectEncode)
	l.abort()
}
