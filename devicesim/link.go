package devicesim

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// link is one MQTT connection of a device, MQTT 5 or 3.1.1. Every publish
// is QoS 1 and returns when the broker acknowledged it.
type link interface {
	// publish sends payload to topic; correlation is MQTT 5 correlation data
	// (ignored by 3.1.1).
	publish(ctx context.Context, topic string, payload []byte, correlation []byte) error
	// done is closed when the connection is gone.
	done() <-chan struct{}
	// disconnect sends DISCONNECT and closes the connection.
	disconnect()
	// abort drops the network connection without DISCONNECT, like a lost signal.
	abort()
	// sessionPresent reports whether the broker resumed a session.
	sessionPresent() bool
}

// inbound is one message the broker sent the device.
type inbound struct {
	Topic         string
	Payload       []byte
	ResponseTopic string
	Correlation   []byte
}

// dialConfig is what a link needs to connect and subscribe.
type dialConfig struct {
	URL           *url.URL
	TLS           *tls.Config
	ClientID      string
	Username      string
	Password      string
	Clean         bool
	SessionExpiry time.Duration
	KeepAlive     time.Duration
	ReceiveMax    uint16
	Timeout       time.Duration
	Filter        string
	OnMessage     func(inbound)
}

// RefusedError is a CONNACK or SUBACK failure reason code from the broker.
type RefusedError struct {
	Code byte
	// Name is what the code means in the MQTT version spoken.
	Name string
	// Reason is the broker's MQTT 5 Reason String, which names the cause
	// (e.g. "imei is in no organization's inventory"), or what was refused
	// ("subscribe …"); empty when there is neither.
	Reason string
}

// Error reads "devicesim: broker refused: not authorized (0x87): <reason>".
func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("devicesim: broker refused: %s (0x%02x)", e.Name, e.Code)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// refused5 is the RefusedError of an MQTT 5 reason code.
func refused5(code byte, reason string) *RefusedError {
	name := reasonNames5[code]
	if name == "" {
		name = "reason code"
	}
	return &RefusedError{Code: code, Name: name, Reason: reason}
}

// reasonNames5 are the MQTT 5 failure reason codes a CONNACK or SUBACK carries.
var reasonNames5 = map[byte]string{
	0x80: "unspecified error", 0x81: "malformed packet", 0x82: "protocol error", 0x83: "implementation specific error",
	0x84: "unsupported protocol version", 0x85: "client identifier not valid", 0x86: "bad user name or password",
	0x87: "not authorized", 0x88: "server unavailable", 0x89: "server busy", 0x8A: "banned",
	0x8C: "bad authentication method", 0x8F: "topic filter invalid", 0x91: "packet identifier in use",
	0x95: "packet too large", 0x97: "quota exceeded", 0x99: "payload format invalid", 0x9A: "retain not supported",
	0x9B: "QoS not supported", 0x9C: "use another server", 0x9D: "server moved",
	0x9E: "shared subscriptions not supported", 0x9F: "connection rate exceeded",
	0xA1: "subscription identifiers not supported", 0xA2: "wildcard subscriptions not supported",
}

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// parseBrokerURL accepts tcp, mqtt, tls, ssl and mqtts URLs with a host and port.
func parseBrokerURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("devicesim: broker url %q must look like tcp://host:port: %w", s, ErrInvalidOptions)
	}
	switch strings.ToLower(u.Scheme) {
	case "tcp", "mqtt", "tls", "ssl", "mqtts":
	default:
		return nil, fmt.Errorf("devicesim: broker url scheme %q must be tcp, mqtt, tls, ssl or mqtts: %w", u.Scheme, ErrInvalidOptions)
	}
	if u.Port() == "" {
		return nil, fmt.Errorf("devicesim: broker url %q must name a port: %w", s, ErrInvalidOptions)
	}
	return u, nil
}

// dialNet opens the network connection the URL names.
func dialNet(ctx context.Context, c dialConfig) (net.Conn, error) {
	var d net.Dialer
	switch strings.ToLower(c.URL.Scheme) {
	case "tls", "ssl", "mqtts":
		cfg := c.TLS
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		td := tls.Dialer{NetDialer: &d, Config: cfg}
		return td.DialContext(ctx, "tcp", c.URL.Host)
	default:
		return d.DialContext(ctx, "tcp", c.URL.Host)
	}
}

// link5 is an MQTT 5 connection through paho.
type link5 struct {
	cli     *paho.Client
	conn    net.Conn
	present bool
	alive   context.Context // cancelled when the connection is gone
}

// dial5 connects with MQTT 5 and subscribes to c.Filter at QoS 1.
func dial5(ctx context.Context, c dialConfig) (link, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	conn, err := dialNet(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("devicesim: dial %s: %w", c.URL.Host, err)
	}
	cli := paho.NewClient(paho.ClientConfig{
		ClientID:      c.ClientID,
		Conn:          conn,
		PacketTimeout: c.Timeout,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			m := inbound{Topic: pr.Packet.Topic, Payload: pr.Packet.Payload}
			if p := pr.Packet.Properties; p != nil {
				m.ResponseTopic = p.ResponseTopic
				m.Correlation = p.CorrelationData
			}
			c.OnMessage(m)
			return true, nil
		}},
	})
	recv := c.ReceiveMax
	cp := &paho.Connect{
		ClientID:     c.ClientID,
		KeepAlive:    uint16(c.KeepAlive / time.Second),
		CleanStart:   c.Clean,
		Username:     c.Username,
		UsernameFlag: true,
		Password:     []byte(c.Password),
		PasswordFlag: true,
		Properties:   &paho.ConnectProperties{ReceiveMaximum: &recv, RequestProblemInfo: true},
	}
	if !c.Clean {
		exp := uint32(c.SessionExpiry / time.Second)
		cp.Properties.SessionExpiryInterval = &exp
	}
	ca, err := cli.Connect(ctx, cp)
	if err != nil {
		_ = conn.Close()
		if ca != nil && ca.ReasonCode >= 0x80 {
			reason := ""
			if ca.Properties != nil {
				reason = ca.Properties.ReasonString
			}
			return nil, refused5(ca.ReasonCode, reason)
		}
		return nil, fmt.Errorf("devicesim: connect: %w", err)
	}
	alive, gone := context.WithCancel(context.Background())
	go func() { <-cli.Done(); gone() }()
	l := &link5{cli: cli, conn: conn, present: ca.SessionPresent, alive: alive}
	if ca.SessionPresent {
		// The resumed session holds the subscription; subscribing again could
		// collide with the packet identifier of a message the cloud resends.
		return l, nil
	}
	sa, err := cli.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: c.Filter, QoS: 1}}})
	if err != nil {
		l.abort()
		if sa != nil && len(sa.Reasons) > 0 && sa.Reasons[0] >= 0x80 {
			return nil, refused5(sa.Reasons[0], "subscribe "+c.Filter)
		}
		return nil, fmt.Errorf("devicesim: subscribe %s: %w", c.Filter, err)
	}
	if len(sa.Reasons) != 1 || sa.Reasons[0] >= 0x80 {
		l.abort()
		code := byte(0x80)
		if len(sa.Reasons) > 0 {
			code = sa.Reasons[0]
		}
		return nil, refused5(code, "subscribe "+c.Filter)
	}
	return l, nil
}

func (l *link5) publish(ctx context.Context, topic string, payload, correlation []byte) error {
	p := &paho.Publish{QoS: 1, Topic: topic, Payload: payload}
	if len(correlation) > 0 {
		p.Properties = &paho.PublishProperties{CorrelationData: correlation, ContentType: "application/json"}
	}
	// paho keeps waiting for the PUBACK of a lost connection until ctx ends;
	// a device gives up with the connection.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(l.alive, cancel)()
	_, err := l.cli.Publish(ctx, p)
	if err != nil && l.alive.Err() != nil {
		return fmt.Errorf("%w: %v", errLinkClosed, err)
	}
	return err
}

func (l *link5) done() <-chan struct{} { return l.cli.Done() }
func (l *link5) sessionPresent() bool  { return l.present }
func (l *link5) abort()                { _ = l.conn.Close() }
func (l *link5) disconnect() {
	_ = l.cli.Disconnect(&paho.Disconnect{ReasonCode: 0})
}

// queue is an unbounded FIFO of inbound messages. Connection readers push
// without ever blocking, so a device handling a message can wait for its own
// PUBACKs on the same connection.
type queue struct {
	mu    sync.Mutex
	items []inbound
	ready chan struct{}
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(m inbound) {
	q.mu.Lock()
	q.items = append(q.items, m)
	q.mu.Unlock()
	signal(q.ready)
}

// pop returns the oldest message, waiting until one arrives or ctx ends.
func (q *queue) pop(ctx context.Context) (inbound, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			m := q.items[0]
			q.items[0] = inbound{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return m, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return inbound{}, false
		}
	}
}
