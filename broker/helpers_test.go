package broker

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/prometheus/client_golang/prometheus"
)

// env is a running broker on 127.0.0.1:0 over a real bbolt file.
type env struct {
	t      *testing.T
	cfg    configs.Config
	db     *store.DB
	srv    *Server
	clock  *storetest.Clock
	reg    *prometheus.Registry
	org    *store.Organization
	master []byte
}

// newEnv starts a broker; tweak, when set, adjusts the configuration first.
func newEnv(t *testing.T, tweak func(*configs.Config)) *env {
	t.Helper()
	return newEnvWith(t, tweak, nil)
}

// newEnvWith is newEnv with before, when set, run on the environment after
// the broker is built and before it starts.
func newEnvWith(t *testing.T, tweak func(*configs.Config), before func(*env)) *env {
	t.Helper()
	return newEnvOn(t, tweak, before, func(now func() time.Time) *store.DB { return storetest.Open(t, storetest.WithClock(now)) })
}

// newEnvOn is newEnvWith over the store open returns, given the test clock.
func newEnvOn(t *testing.T, tweak func(*configs.Config), before func(*env), open func(now func() time.Time) *store.DB) *env {
	t.Helper()
	cfg := configs.Default()
	cfg.MQTT.Addr = "127.0.0.1:0"
	cfg.MQTT.CommitDelay = time.Millisecond
	cfg.MQTT.CommandTimeout = 5 * time.Second
	if tweak != nil {
		tweak(&cfg)
	}
	clock := storetest.NewClock(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	db := open(clock.Now)
	e := &env{t: t, cfg: cfg, db: db, clock: clock, reg: prometheus.NewRegistry()}
	e.master, _ = hex.DecodeString(cfg.Devices.FactoryMasterKey)
	err := db.Update(t.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		e.org, err = tx.CreateOrganization(p.ID, "Fleet", []byte("salt"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("FLEETCAM_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(&testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e.srv, err = New(cfg, db, log, e.reg, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(e)
	}
	if err := e.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Runs after the broker closed: a recovered panic anywhere in the
		// MQTT path is a bug, and fails the test that provoked it.
		if n := e.srv.mqtt.Info().Panics.Load(); n != 0 {
			t.Errorf("the MQTT server recovered %d panics", n)
		}
	})
	t.Cleanup(func() { e.srv.Close() })
	return e
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// imei returns a valid IMEI (Luhn check digit) for n.
func imei(n int) string { return storetest.IMEI(fmt.Sprintf("35%012d", n)) }

// addDevice puts a device into the test organization's inventory.
func (e *env) addDevice(n int) string {
	e.t.Helper()
	id := imei(n)
	err := e.db.Update(e.t.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		return tx.AddDevice(&store.Device{IMEI: id, Name: "cam " + id, OrganizationID: e.org.ID, PartnerID: e.org.PartnerID})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// bootstrapPassword builds a fresh bootstrap proof, moving the clock on a
// second so that every proof of a test is new.
func (e *env) bootstrapPassword(imei string) string {
	e.clock.Advance(time.Second)
	return protocol.BootstrapPassword(protocol.FactoryKey(e.master, imei), imei, e.clock.Now())
}

// dev is a paho device client that records what it receives.
type dev struct {
	t    *testing.T
	imei string
	c    *paho.Client
	ack  *paho.Connack

	mu     sync.Mutex
	got    []*paho.Publish
	notify chan struct{}
	// reply, when set, answers each command the device receives.
	reply func(cmd protocol.Command, p *paho.Publish) *protocol.Reply
}

type connectOpts struct {
	clean     bool  // clean start (default true through connect)
	expiry    int64 // session expiry seconds; 0 ends the session with the connection
	subscribe bool  // subscribe to the down filter after connecting
	conn      net.Conn
	reply     func(cmd protocol.Command, p *paho.Publish) *protocol.Reply
}

// connect dials the broker as imei with password; it returns the CONNACK
// error for refusals.
func (e *env) connect(imei, password string, o connectOpts) (*dev, error) {
	e.t.Helper()
	conn := o.conn
	if conn == nil {
		var err error
		if conn, err = net.Dial("tcp", e.srv.Addr()); err != nil {
			e.t.Fatal(err)
		}
	}
	d := &dev{t: e.t, imei: imei, notify: make(chan struct{}, 1), reply: o.reply}
	d.c = paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){d.receive}})
	recvMax, expiry := uint16(32), uint32(o.expiry)
	ctx, cancel := context.WithTimeout(context.Background(), exchangeWait)
	defer cancel()
	ack, err := d.c.Connect(ctx, &paho.Connect{
		ClientID: imei, Username: imei, UsernameFlag: true, Password: []byte(password), PasswordFlag: password != "",
		KeepAlive: 30, CleanStart: o.clean,
		Properties: &paho.ConnectProperties{ReceiveMaximum: &recvMax, SessionExpiryInterval: &expiry, RequestProblemInfo: true},
	})
	d.ack = ack
	if err != nil {
		return d, err
	}
	e.t.Cleanup(d.close)
	if o.subscribe {
		d.subscribe(protocol.DownFilter(imei))
	}
	return d, nil
}

// mustConnect connects with a clean session and the down subscription.
func (e *env) mustConnect(imei, password string) *dev {
	e.t.Helper()
	d, err := e.connect(imei, password, connectOpts{clean: true, subscribe: true})
	if err != nil {
		e.t.Fatalf("connect %s: %v (connack %+v)", imei, err, d.ack)
	}
	return d
}

// bootstrap connects imei with a bootstrap proof and returns the token it was granted.
func (e *env) bootstrap(imei string) (*dev, string) {
	e.t.Helper()
	d := e.mustConnect(imei, e.bootstrapPassword(imei))
	var g protocol.TokenGrant
	d.decode(d.next(protocol.TopicToken, 1), &g)
	if g.Token == "" {
		e.t.Fatal("empty token grant")
	}
	return d, g.Token
}

func (d *dev) close() {
	_ = d.c.Disconnect(&paho.Disconnect{ReasonCode: 0})
	select {
	case <-d.c.Done():
	case <-time.After(5 * time.Second):
	}
}

func (d *dev) receive(pr paho.PublishReceived) (bool, error) {
	p := pr.Packet
	if d.reply != nil && strings.HasSuffix(p.Topic, "/"+protocol.TopicCommand) {
		var cmd protocol.Command
		if err := json.Unmarshal(p.Payload, &cmd); err == nil {
			if r := d.reply(cmd, p); r != nil {
				go d.publishReply(*r, p)
			}
		}
	}
	d.mu.Lock()
	d.got = append(d.got, p)
	d.mu.Unlock()
	select {
	case d.notify <- struct{}{}:
	default:
	}
	return true, nil
}

// publishReply answers a command the MQTT 5 way: to its response topic with its correlation data.
func (d *dev) publishReply(r protocol.Reply, cmd *paho.Publish) {
	payload, _ := json.Marshal(r)
	topic := protocol.Topic(d.imei, protocol.TopicReply)
	props := &paho.PublishProperties{}
	if cmd.Properties != nil {
		if cmd.Properties.ResponseTopic != "" {
			topic = cmd.Properties.ResponseTopic
		}
		props.CorrelationData = cmd.Properties.CorrelationData
	}
	ctx, cancel := context.WithTimeout(context.Background(), exchangeWait)
	defer cancel()
	_, _ = d.c.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: payload, Properties: props})
}

func (d *dev) subscribe(filter string) (*paho.Suback, error) {
	ctx, cancel := context.WithTimeout(context.Background(), exchangeWait)
	defer cancel()
	return d.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}})
}

// publish sends v as JSON at QoS 1 on the device's up topic suffix.
func (d *dev) publish(suffix string, v any) (*paho.PublishResponse, error) {
	payload, ok := v.([]byte)
	if !ok {
		payload, _ = json.Marshal(v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), exchangeWait)
	defer cancel()
	return d.c.Publish(ctx, &paho.Publish{Topic: protocol.Topic(d.imei, suffix), QoS: 1, Payload: payload})
}

// received returns the messages received so far on the down topic suffix.
func (d *dev) received(suffix string) []*paho.Publish {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*paho.Publish
	for _, p := range d.got {
		if strings.HasSuffix(p.Topic, "/"+suffix) {
			out = append(out, p)
		}
	}
	return out
}

// next waits for the n-th message (from 1) on suffix.
func (d *dev) next(suffix string, n int) *paho.Publish {
	d.t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		if got := d.received(suffix); len(got) >= n {
			return got[n-1]
		}
		select {
		case <-d.notify:
		case <-deadline:
			d.t.Fatalf("device %s: no message %d on %s (got %d)", d.imei, n, suffix, len(d.received(suffix)))
		}
	}
}

func (d *dev) decode(p *paho.Publish, v any) {
	d.t.Helper()
	if err := json.Unmarshal(p.Payload, v); err != nil {
		d.t.Fatalf("decode %s: %v", p.Topic, err)
	}
}

// waitFor checks cond until it holds, for up to two minutes: it ends as
// soon as cond holds, and the bound is for a machine busy with other work.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	storetest.Eventually(t, what, 2*time.Minute, 5*time.Millisecond, cond)
}

// link reads the stored link state of imei.
func (e *env) link(imei string) store.DeviceLink {
	e.t.Helper()
	var dl store.DeviceLink
	err := e.db.View(e.t.Context(), func(tx *store.Tx) error {
		l, err := tx.DeviceLink(imei)
		if err == nil {
			dl = *l
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return dl
}

// metric returns the value of a counter or gauge (summed over labels
// matching want) from the test registry.
func (e *env) metric(name string, want map[string]string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				total += m.GetCounter().GetValue()
			case m.Gauge != nil:
				total += m.GetGauge().GetValue()
			case m.Histogram != nil:
				total += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total
}

// rawConnect dials the broker as a raw client of protocol version (4 or
// 5), sends a CONNECT for clientID with username and password (each left
// out when empty) and returns the client and the CONNACK.
func (e *env) rawConnect(version byte, clientID, username, password string) (*mqtttest.Client, packets.Packet) {
	e.t.Helper()
	return e.rawConnectWith(version, clientID, username, password, nil)
}

// rawConnectWith is rawConnect with tweak applied to the CONNECT (when set).
func (e *env) rawConnectWith(version byte, clientID, username, password string, tweak func(*packets.Packet)) (*mqtttest.Client, packets.Packet) {
	e.t.Helper()
	conn, err := net.Dial("tcp", e.srv.Addr())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	rc := mqtttest.New(e.t, conn, version)
	return rc, rc.Connect(clientID, func(pk *packets.Packet) {
		pk.Connect.UsernameFlag, pk.Connect.Username = username != "", []byte(username)
		pk.Connect.PasswordFlag, pk.Connect.Password = password != "", []byte(password)
		if tweak != nil {
			tweak(pk)
		}
	})
}

// exchangeWait bounds one exchange with the broker (a CONNECT, a publish
// and its PUBACK, a SUBSCRIBE): it ends with the answer, and the bound is
// for a machine busy with other work.
const exchangeWait = time.Minute

// ctxT is a context that ends with a deadline well inside the test timeout.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), exchangeWait)
	t.Cleanup(cancel)
	return ctx
}

// pahoPublish is a QoS 1 publish of v as JSON on topic.
func pahoPublish(topic string, v any) *paho.Publish {
	payload, _ := json.Marshal(v)
	return &paho.Publish{Topic: topic, QoS: 1, Payload: payload}
}

// enqueue queues command name for imei in a write of its own, as the API
// does in the write that causes the command.
func (e *env) enqueue(imei, name string, args any) {
	e.t.Helper()
	err := e.db.Update(e.t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error { return e.srv.Enqueue(tx, imei, name, args) })
	if err != nil {
		e.t.Fatal(err)
	}
}
