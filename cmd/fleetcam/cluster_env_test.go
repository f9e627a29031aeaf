package main

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/cluster/natstest"
	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// The cluster environment: three fleetcam nodes in this process, each with
// its own data directory and HTTP and MQTT listeners on 127.0.0.1:0, over
// one PostgreSQL database of the test binary's throwaway server
// (store/pgtest) and one NATS server in the process (natstest), with the
// bootstrap partner logged in and one organization.
//
// Every cluster test, here and with node processes (cluster_proc_test.go),
// has a database, a NATS server and listeners of its own, so they run in
// parallel with each other (t.Parallel): most of their time is spent
// waiting for nodes, jobs and devices, not computing. A test that changes
// a package variable (lifeWait) does not.

// clusterSigningKey is the API signing key every node of the test cluster shares.
const clusterSigningKey = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"

// clusterEnv is a running test cluster.
type clusterEnv struct {
	t     *testing.T
	nats  *natstest.Server
	pg    string // the database URL
	media string // the media directory every node shares
	nodes []*member
	tok   string // the partner's token, good on every node
	orgID int64
	org   string // the organization's API path
}

// member is one node of the test cluster.
type member struct {
	id   string
	cfg  configs.Config
	a    *app
	c    client
	stop func() // stops the node, once
}

// startCluster starts n nodes (node-a, node-b, …); tune adjusts every
// node's configuration.
func startCluster(t *testing.T, n int, tune func(*configs.Config)) *clusterEnv {
	t.Helper()
	return startClusterOn(t, n, pgtest.Database(t, ""), tune)
}

// startClusterOn starts n nodes as startCluster does, over the database at pg.
func startClusterOn(t *testing.T, n int, pg string, tune func(*configs.Config)) *clusterEnv {
	t.Helper()
	e := &clusterEnv{t: t, nats: natstest.Start(t), pg: pg, media: t.TempDir()}
	for i := range n {
		e.nodes = append(e.nodes, e.startNode(i, tune))
	}
	e.tok = e.nodes[0].c.login(partnerEmail, partnerPassword)
	status, out := e.nodes[0].c.call("POST", "/v2/organizations", e.tok, map[string]any{"name": "Northwind Haulage"})
	if status != http.StatusOK {
		t.Fatalf("create organization: %d %v", status, out)
	}
	e.orgID = int64(dig(out, "data", "organizationId").(float64))
	e.org = "/v2/organizations/" + strconv.FormatInt(e.orgID, 10)
	return e
}

// nodeConfig is the configuration of node i of the test cluster.
func (e *clusterEnv) nodeConfig(i int, tune func(*configs.Config)) configs.Config {
	cfg := configs.Default()
	cfg.DataDir = e.t.TempDir()
	cfg.HTTP.Addr, cfg.MQTT.Addr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Bootstrap.PartnerEmail, cfg.Bootstrap.PartnerPassword = partnerEmail, partnerPassword
	cfg.Auth.BcryptCost = 4
	cfg.Auth.SigningKey = clusterSigningKey
	cfg.Store.PostgresURL, cfg.Store.MaxConns = e.pg, testMaxConns
	cfg.Cluster.NATSURL = e.nats.URL()
	cfg.Media.Dir = e.media
	cfg.Cluster.NodeID = "node-" + string(rune('a'+i))
	cfg.Cluster.JobLockRetry = 100 * time.Millisecond
	cfg.MQTT.CommandTimeout = 5 * time.Second
	if tune != nil {
		tune(&cfg)
	}
	return cfg
}

// startNode starts node i, or fails the test.
func (e *clusterEnv) startNode(i int, tune func(*configs.Config)) *member {
	e.t.Helper()
	cfg := e.nodeConfig(i, tune)
	a, err := startNodeApp(cfg)
	if err != nil {
		e.t.Fatalf("start %s: %v", cfg.Cluster.NodeID, err)
	}
	m := &member{id: cfg.Cluster.NodeID, cfg: cfg, a: a, c: client{t: e.t, base: "http://" + a.httpAddr.String()}}
	stopped := false
	m.stop = func() {
		if !stopped {
			stopped = true
			a.stop(5 * time.Second)
		}
	}
	e.t.Cleanup(m.stop)
	return m
}

// startNodeApp starts fleetcam with cfg, its log discarded.
func startNodeApp(cfg configs.Config) (*app, error) {
	var w io.Writer = io.Discard
	if os.Getenv("FLEETCAM_TEST_LOG") != "" {
		w = os.Stderr
	}
	return start(context.Background(), cfg, slog.New(slog.NewTextHandler(w, nil)).With("node", cfg.Cluster.NodeID), io.Discard)
}

// addDevice adds the device devicesim derives from imeiBody to the
// organization, through node 0.
func (e *clusterEnv) addDevice(imeiBody, name string) string {
	e.t.Helper()
	imei := testIMEIs(e.t, imeiBody, 1)[0]
	if status, out := e.nodes[0].c.call("POST", e.org+"/devices", e.tok, map[string]any{"imei": imei, "name": name}); status != http.StatusOK {
		e.t.Fatalf("add device: %d %v", status, out)
	}
	return imei
}

// simulate runs a simulated dashcam of imei against node i's broker,
// keeping its token in dir, until stop or the end of the test.
func (e *clusterEnv) simulate(i int, imei, dir string) (dev *devicesim.Device, stop func()) {
	e.t.Helper()
	return e.simulateWith(i, imei, dir, nil)
}

// simulateWith is simulate with tune adjusting the dashcam's options.
func (e *clusterEnv) simulateWith(i int, imei, dir string, tune func(*devicesim.Options)) (dev *devicesim.Device, stop func()) {
	e.t.Helper()
	master, _ := hex.DecodeString(e.nodes[i].cfg.Devices.FactoryMasterKey)
	return simulateAt(e.t, "tcp://"+e.nodes[i].a.broker.Addr(), imei, master, dir, tune)
}

// rawDevice connects imei to node i's broker as MQTT 5 legacy firmware
// (no token), with a persistent session and its down subscription, and
// returns the connection: a dashcam that does nothing but what the test
// reads from it.
func (e *clusterEnv) rawDevice(i int, imei string) *mqtttest.Client {
	e.t.Helper()
	conn, err := net.Dial("tcp", e.nodes[i].a.broker.Addr())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	rc := mqtttest.New(e.t, conn, 5)
	ack := rc.Connect(imei, legacyLogin(imei))
	if ack.ReasonCode != 0 {
		e.t.Fatalf("connect %s to %s: reason 0x%02X", imei, e.nodes[i].id, ack.ReasonCode)
	}
	rc.Subscribe(1, protocol.DownFilter(imei))
	return rc
}

// legacyLogin makes a CONNECT one of firmware 3.10, which connects
// without a token, asking for a persistent session.
func legacyLogin(imei string) func(*packets.Packet) {
	return func(pk *packets.Packet) {
		pk.Connect.UsernameFlag, pk.Connect.Username = true, []byte(imei)
		pk.Connect.PasswordFlag, pk.Connect.Password = true, []byte(protocol.LegacyPrefix+"3.10")
		pk.Properties.SessionExpiryInterval, pk.Properties.SessionExpiryIntervalFlag = 300, true
	}
}

// dialDevice sends node i a CONNECT of imei as rawDevice does and waits
// for the first answer, the CONNACK or the connection's end, without
// failing the test: for goroutines of a test, and connections that may be
// taken over before they are answered.
func (e *clusterEnv) dialDevice(i int, imei string) error {
	conn, err := net.Dial("tcp", e.nodes[i].a.broker.Addr())
	if err != nil {
		return err
	}
	e.t.Cleanup(func() { conn.Close() })
	rc := mqtttest.New(e.t, conn, 5)
	if _, err := conn.Write(rc.Encode(mqtttest.ConnectPacket(imei, legacyLogin(imei)))); err != nil {
		return err
	}
	// A connection taken over before its CONNACK went out ends unanswered.
	if _, err = rc.ReadWithin(patience); errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return err
}

// disconnectedWith reads what node i sends rc until a DISCONNECT, within
// d, and reports its reason code; a connection that ends or stays silent
// reports -1.
func disconnectedWith(rc *mqtttest.Client, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		pk, err := rc.ReadWithin(time.Until(deadline))
		if err != nil {
			return -1
		}
		if pk.FixedHeader.Type == packets.Disconnect {
			return int(pk.ReasonCode)
		}
	}
}

// holder is the node whose broker holds imei, or "".
func (e *clusterEnv) holder(imei string) string {
	held := ""
	for _, m := range e.nodes {
		if m.a.broker.Online(imei) {
			held += m.id
		}
	}
	return held
}

// stateDir is a directory for a simulated dashcam's token.
func stateDir(t *testing.T) string { return filepath.Join(t.TempDir(), "sim") }

// pgQuery runs a query of one row on the database at url into dst.
func pgQuery(t *testing.T, url, query string, dst ...any) error {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		return err
	}
	defer conn.Close(t.Context())
	return conn.QueryRow(t.Context(), query).Scan(dst...)
}
