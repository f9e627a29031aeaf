package devicesim

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// testMaster is the factory master key the test cloud and devices share.
var testMaster = []byte("fleetcam test factory master key")

// fakeCloud is a real mochi-mqtt broker on 127.0.0.1:0 with a small
// auth/ACL hook that imitates the device contract: a valid bootstrap proof
// is accepted and answered with a TokenGrant once the device subscribed;
// afterwards only the latest token is; legacy firmware needs no token; a
// device reaches only its own topics. It records connections and messages.
type fakeCloud struct {
	mqtt.HookBase
	t    *testing.T
	srv  *mqtt.Server
	addr string
	// stop closes the server, once: the end of the test, or a test's
	// broker that goes away.
	stop func()

	mu       sync.Mutex
	tokens   map[string]string // imei → current token
	grant    map[string]bool   // imei → bootstrapped, token due after SUBSCRIBE
	connects []connectRecord
	msgs     []cloudMsg
	changed  chan struct{}
	denied   []string                          // topics refused by the ACL
	push     map[string]protocol.DesiredConfig // sent to the device on every SUBSCRIBE
	// hold, when set for a topic suffix, keeps the PUBACK of messages on
	// it until the channel is closed (they are recorded at once).
	hold map[string]chan struct{}
}

type connectRecord struct {
	IMEI     string
	Password string
	Kind     string // bootstrap, token, legacy
	Accepted bool
	Version  byte
	Clean    bool
}

type cloudMsg struct {
	IMEI        string
	Suffix      string
	Payload     []byte
	Correlation []byte
	Version     byte
}

func newFakeCloud(t *testing.T) *fakeCloud {
	t.Helper()
	c := &fakeCloud{t: t, tokens: map[string]string{}, grant: map[string]bool{}, changed: make(chan struct{})}
	c.srv = mqtt.New(&mqtt.Options{InlineClient: true, Logger: slog.New(slog.DiscardHandler)})
	if err := c.srv.AddHook(c, nil); err != nil {
		t.Fatal(err)
	}
	l := listeners.NewTCP(listeners.Config{ID: "t", Address: "127.0.0.1:0"})
	if err := c.srv.AddListener(l); err != nil {
		t.Fatal(err)
	}
	if err := c.srv.Serve(); err != nil {
		t.Fatal(err)
	}
	c.addr = "tcp://" + l.Address()
	c.stop = sync.OnceFunc(func() { _ = c.srv.Close() })
	t.Cleanup(c.stop)
	return c
}

func (c *fakeCloud) ID() string { return "fake-cloud" }

func (c *fakeCloud) Provides(b byte) bool {
	return bytes.Contains([]byte{mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnSubscribed,
		mqtt.OnSessionEstablished, mqtt.OnPublish}, []byte{b})
}

func (c *fakeCloud) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	imei, pw := string(pk.Connect.Username), string(pk.Connect.Password)
	rec := connectRecord{IMEI: imei, Password: pw, Version: pk.ProtocolVersion, Clean: pk.Connect.Clean}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() { c.connects = append(c.connects, rec); c.notifyLocked() }()
	if imei != cl.ID || !ValidIMEI(imei) {
		return false
	}
	switch {
	case strings.HasPrefix(pw, protocol.BootstrapPrefix):
		rec.Kind = "bootstrap"
		err := protocol.VerifyBootstrap(pw, protocol.FactoryKey(testMaster, imei), imei, time.Now(), 10*time.Minute)
		rec.Accepted = err == nil
		if rec.Accepted {
			c.grant[imei] = true
		}
	case strings.HasPrefix(pw, protocol.LegacyPrefix):
		rec.Kind = "legacy"
		rec.Accepted = protocol.FirmwareBelow(strings.TrimPrefix(pw, protocol.LegacyPrefix), protocol.MinTokenFirmware)
	default:
		rec.Kind = "token"
		tok := c.tokens[imei]
		rec.Accepted = tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(pw)) == 1
	}
	return rec.Accepted
}

func (c *fakeCloud) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	own := protocol.Prefix + "/" + cl.ID + "/"
	ok := strings.HasPrefix(topic, own+"down/")
	if write {
		ok = strings.HasPrefix(topic, own+"up/")
	}
	if !ok {
		c.mu.Lock()
		c.denied = append(c.denied, topic)
		c.mu.Unlock()
	}
	return ok
}

// OnSubscribed delivers what waits for a device once it listens.
func (c *fakeCloud) OnSubscribed(cl *mqtt.Client, pk packets.Packet, codes []byte) { c.deliver(cl) }

// OnSessionEstablished delivers at once to a resumed session, which already
// holds the subscription (the device does not subscribe again).
func (c *fakeCloud) OnSessionEstablished(cl *mqtt.Client, pk packets.Packet) {
	if _, ok := cl.State.Subscriptions.Get(protocol.DownFilter(cl.ID)); ok {
		c.deliver(cl)
	}
}

// deliver issues the token of a bootstrapped device and pushes its config.
func (c *fakeCloud) deliver(cl *mqtt.Client) {
	c.mu.Lock()
	due := c.grant[cl.ID]
	var tok string
	if due {
		delete(c.grant, cl.ID)
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		tok = hex.EncodeToString(b)
		c.tokens[cl.ID] = tok // any older token stops working
	}
	cfg, push := c.push[cl.ID]
	c.mu.Unlock()
	if due {
		raw, _ := json.Marshal(protocol.TokenGrant{Token: tok, IssuedAt: time.Now().Unix()})
		go func() { _ = c.srv.Publish(protocol.Topic(cl.ID, protocol.TopicToken), raw, false, 1) }()
	}
	if push {
		// As the broker does: the desired configuration on every connect, at once.
		raw, _ := json.Marshal(cfg)
		_ = c.srv.Publish(protocol.Topic(cl.ID, protocol.TopicConfig), raw, false, 1)
	}
}

func (c *fakeCloud) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if cl.Net.Inline {
		return pk, nil
	}
	imei, suffix, ok := protocol.SplitTopic(pk.TopicName)
	if ok {
		c.mu.Lock()
		c.msgs = append(c.msgs, cloudMsg{IMEI: imei, Suffix: suffix, Payload: append([]byte(nil), pk.Payload...),
			Correlation: append([]byte(nil), pk.Properties.CorrelationData...), Version: cl.Properties.ProtocolVersion})
		c.notifyLocked()
		hold := c.hold[suffix]
		c.mu.Unlock()
		if hold != nil {
			<-hold
		}
	}
	return pk, nil
}

func (c *fakeCloud) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitFor returns the first recorded item from index from on that match
// accepts, waiting up to 10s for it.
func waitFor[T any](t *testing.T, c *fakeCloud, list func() []T, match func(T) bool) T {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		c.mu.Lock()
		items := list()
		ch := c.changed
		c.mu.Unlock()
		for _, it := range items {
			if match(it) {
				return it
			}
		}
		select {
		case <-ch:
		case <-deadline:
			var zero T
			t.Fatalf("timed out waiting; have %d items", len(items))
			return zero
		}
	}
}

// msg waits for a message from imei on suffix that match accepts (nil: any).
func (c *fakeCloud) msg(t *testing.T, imei, suffix string, match func(cloudMsg) bool) cloudMsg {
	t.Helper()
	return waitFor(t, c, func() []cloudMsg { return append([]cloudMsg(nil), c.msgs...) }, func(m cloudMsg) bool {
		return m.IMEI == imei && m.Suffix == suffix && (match == nil || match(m))
	})
}

// connect waits for the n-th (1-based) connection attempt of imei.
func (c *fakeCloud) connect(t *testing.T, imei string, n int) connectRecord {
	t.Helper()
	return waitFor(t, c, func() []connectRecord {
		var out []connectRecord
		for _, r := range c.connects {
			if r.IMEI == imei {
				out = append(out, r)
			}
		}
		if len(out) >= n {
			return out[n-1 : n]
		}
		return nil
	}, func(connectRecord) bool { return true })
}

// count returns how many messages imei sent on suffix.
func (c *fakeCloud) count(imei, suffix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.msgs {
		if m.IMEI == imei && m.Suffix == suffix {
			n++
		}
	}
	return n
}

// token returns the current token of imei.
func (c *fakeCloud) token(imei string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tokens[imei]
}

// send publishes v to the device topic suffix of imei at QoS 1.
func (c *fakeCloud) send(t *testing.T, imei, suffix string, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.srv.Publish(protocol.Topic(imei, suffix), raw, false, 1); err != nil {
		t.Fatal(err)
	}
}

var cmdSeq sync.Mutex
var cmdN int

// command sends a Command to imei and waits for its Reply. With MQTT 5 the
// command carries a response topic and correlation data, and the reply must
// echo the correlation data; with 3.1.1 the reply is matched by its id.
func (c *fakeCloud) command(t *testing.T, imei string, v5 bool, name string, args any) (protocol.Reply, cloudMsg) {
	t.Helper()
	cmdSeq.Lock()
	cmdN++
	n := cmdN
	cmdSeq.Unlock()
	id := "cmd-" + strconv.Itoa(n)
	cmd := protocol.Command{ID: id, Name: name, IssuedAt: time.Now().Unix()}
	if args != nil {
		raw, _ := json.Marshal(args)
		cmd.Args = raw
	}
	raw, _ := json.Marshal(cmd)
	corr := []byte("corr-" + id)
	pk := packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1},
		TopicName:   protocol.Topic(imei, protocol.TopicCommand),
		Payload:     raw,
		PacketID:    uint16(n%65000 + 1),
	}
	if v5 {
		pk.Properties = packets.Properties{ResponseTopic: protocol.Topic(imei, protocol.TopicReply), CorrelationData: corr}
	}
	inline, ok := c.srv.Clients.Get(mqtt.InlineClientId)
	if !ok {
		t.Fatal("no inline client")
	}
	if err := c.srv.InjectPacket(inline, pk); err != nil {
		t.Fatal(err)
	}
	m := c.msg(t, imei, protocol.TopicReply, func(m cloudMsg) bool {
		var r protocol.Reply
		return json.Unmarshal(m.Payload, &r) == nil && r.ID == id
	})
	var r protocol.Reply
	_ = json.Unmarshal(m.Payload, &r)
	if v5 && !bytes.Equal(m.Correlation, corr) {
		t.Fatalf("%s reply correlation data %q, want %q", name, m.Correlation, corr)
	}
	if !v5 && len(m.Correlation) != 0 {
		t.Fatalf("%s 3.1.1 reply carries correlation data %q", name, m.Correlation)
	}
	return r, m
}

// startDevice runs a device until the test ends.
func startDevice(t *testing.T, o Options) *Device {
	t.Helper()
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Error("device did not stop")
		}
	})
	return d
}

// testOptions are fast options for a device of the cloud.
func testOptions(c *fakeCloud, imei string) Options {
	return Options{
		IMEI: imei, BrokerURL: c.addr, FactoryMasterKey: testMaster,
		ReconnectDelay: 20 * time.Millisecond, RebootDelay: 50 * time.Millisecond,
		FrameWidth: 160, FrameHeight: 96,
	}
}

// mustIMEI returns the n-th test IMEI.
func mustIMEI(t *testing.T, n int) string {
	t.Helper()
	imeis, err := IMEIs("35693810000000", n+1)
	if err != nil {
		t.Fatal(err)
	}
	return imeis[n]
}
