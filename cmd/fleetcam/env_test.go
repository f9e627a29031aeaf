package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/alarmmail/smtptest"
	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/store/pgtest"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// The end-to-end environment this package's tests share: fleetcam on
// loopback over a real bbolt file in t.TempDir(), the bootstrap partner
// logged in, one organization, and what a test adds to it (devices, a
// webhook receiver, simulated dashcams on the real broker).

// The bootstrap partner every end-to-end test logs in as.
const (
	partnerEmail    = "ops@fleet.example"
	partnerPassword = "Partner123"
)

// fleetEnv is a running fleetcam seen through its API: the bootstrap
// partner's session and one organization of it.
type fleetEnv struct {
	t     *testing.T
	dir   string         // the data directory
	cfg   configs.Config // as fleetcam started; zero for a child process
	a     *app           // nil for a child process
	c     client
	tok   string // the partner's token
	orgID int64
	org   string // the organization's API path

	imei string            // the device added last
	dev  *devicesim.Device // its simulated dashcam, once connected
	rcv  *receiver         // the webhook receiver, with withWebhooks
	smtp *smtptest.Server  // the SMTP stand-in, with withSMTP

	// setup runs after the organization is created, in option order.
	setup []func()
}

// envOption adds to an environment started by startEnv.
type envOption func(*fleetEnv)

// withConfig changes the configuration fleetcam starts with.
// onEveryEngine runs fn once per storage engine, as the subtests bbolt
// and postgres; fn hands engine to startEnv.
func onEveryEngine(t *testing.T, fn func(t *testing.T, engine envOption)) {
	t.Run("bbolt", func(t *testing.T) { fn(t, func(*fleetEnv) {}) })
	t.Run("postgres", func(t *testing.T) { fn(t, withPostgres()) })
}

// withPostgres keeps fleetcam's records in a new database of the test
// binary's PostgreSQL server (store/pgtest), as store.postgresURL does in
// production.
func withPostgres() envOption {
	return func(e *fleetEnv) {
		e.cfg.Store.PostgresURL, e.cfg.Store.MaxConns = pgtest.Database(e.t, ""), testMaxConns
	}
}

// testMaxConns is store.maxConns of the servers the tests start on
// PostgreSQL: a server opens and warms its pools in full as it starts
// (store/postgres/warm.go), and the tests' loads are served as well by
// six connections as by the twenty of the default, for a third of the
// start.
const testMaxConns = 6

func withConfig(tune func(*configs.Config)) envOption {
	return func(e *fleetEnv) { tune(&e.cfg) }
}

// withSMTP starts an SMTP stand-in and sends fleetcam's alarm mail to it.
func withSMTP() envOption {
	return func(e *fleetEnv) {
		e.smtp = smtptest.Start(e.t)
		e.cfg.SMTP.Addr = e.smtp.Addr()
		e.cfg.SMTP.PollInterval = 50 * time.Millisecond
	}
}

// withDevice adds the device whose IMEI devicesim derives from imeiBody to
// the organization as name.
func withDevice(imeiBody, name string) envOption {
	return func(e *fleetEnv) {
		e.setup = append(e.setup, func() { e.addDevice(testIMEIs(e.t, imeiBody, 1)[0], name) })
	}
}

// withWebhooks starts a verifying webhook receiver and saves the
// organization's webhook settings that settings makes of its base URL.
func withWebhooks(settings func(base string) map[string]any) envOption {
	return func(e *fleetEnv) {
		e.setup = append(e.setup, func() { e.receiveWebhooks(settings) })
	}
}

// startEnv starts fleetcam in this process with both listeners on
// 127.0.0.1:0, logs the bootstrap partner in, creates an organization and
// applies opts; fleetcam stops when the test ends.
func startEnv(t *testing.T, opts ...envOption) *fleetEnv {
	t.Helper()
	dir := t.TempDir()
	e := &fleetEnv{t: t, dir: dir, cfg: configs.Default()}
	e.cfg.DataDir = dir
	e.cfg.HTTP.Addr = "127.0.0.1:0"
	e.cfg.MQTT.Addr = "127.0.0.1:0"
	e.cfg.Bootstrap.PartnerEmail = partnerEmail
	e.cfg.Bootstrap.PartnerPassword = partnerPassword
	e.cfg.Auth.BcryptCost = 4
	e.cfg.Webhooks.AllowPrivateTargets = true // the receivers listen on loopback
	for _, o := range opts {
		o(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := start(ctx, e.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); a.stop(5 * time.Second) })
	// Runs before fleetcam stops, after the test's devices have.
	t.Cleanup(func() { checkNoMQTTPanics(t, a) })
	e.a = a
	e.open("http://" + a.httpAddr.String())
	for _, s := range e.setup {
		s()
	}
	return e
}

// checkNoMQTTPanics fails the test if fleetcam's MQTT server recovered a
// panic: the server closes the connection and goes on, so only the counter
// tells, and every panic in packet handling is a bug.
func checkNoMQTTPanics(t *testing.T, a *app) {
	t.Helper()
	addr := a.httpAddr.String()
	if a.metricsAddr != "" {
		addr = a.metricsAddr
	}
	status, body := scrape(t, addr)
	if status != http.StatusOK {
		t.Fatalf("/metrics: status %d", status)
	}
	if n := gauge(t, body, "fleetcam_mqtt_connection_panics_total"); n != 0 {
		t.Errorf("the MQTT server recovered %v panics", n)
	}
}

// openEnv is the environment of a fleetcam serving at base that the test
// runs some other way (a child process).
func openEnv(t *testing.T, base string) *fleetEnv {
	t.Helper()
	e := &fleetEnv{t: t}
	e.open(base)
	return e
}

// open logs the bootstrap partner in at base and creates an organization.
func (e *fleetEnv) open(base string) {
	e.t.Helper()
	e.c = client{t: e.t, base: base}
	e.tok = e.c.login(partnerEmail, partnerPassword)
	status, out := e.c.call("POST", "/v2/organizations", e.tok, map[string]any{"name": "Northwind Haulage"})
	if status != http.StatusOK {
		e.t.Fatalf("create organization: %d %v", status, out)
	}
	e.orgID = int64(dig(out, "data", "organizationId").(float64))
	e.org = "/v2/organizations/" + strconv.FormatInt(e.orgID, 10)
}

// testIMEIs returns n valid IMEIs from imeiBody on.
func testIMEIs(t *testing.T, imeiBody string, n int) []string {
	t.Helper()
	imeis, err := devicesim.IMEIs(imeiBody, n)
	if err != nil {
		t.Fatal(err)
	}
	return imeis
}

// addDevice adds imei to the organization's inventory as name.
func (e *fleetEnv) addDevice(imei, name string) {
	e.t.Helper()
	if status, out := e.c.call("POST", e.org+"/devices", e.tok, map[string]any{"imei": imei, "name": name}); status != http.StatusOK {
		e.t.Fatalf("add device: %d %v", status, out)
	}
	e.imei = imei
}

// putWebhookSettings saves the organization's webhook settings and returns
// the webhook secret the answer shows. The test receivers serve plain http,
// so the organization opts in to it.
func (e *fleetEnv) putWebhookSettings(settings map[string]any) string {
	e.t.Helper()
	settings["allowInsecureWebhookUrls"] = true
	status, out := e.c.call("POST", e.org+"/webhook-settings", e.tok, settings)
	if status != http.StatusOK {
		e.t.Fatalf("webhook settings: %d %v", status, out)
	}
	secret, _ := dig(out, "data", "webhookSecret").(string)
	if secret == "" {
		e.t.Fatalf("no webhook secret in %v", out)
	}
	return secret
}

// receiveWebhooks starts a receiver that verifies deliveries with the
// organization's secret and saves the settings made of its base URL.
func (e *fleetEnv) receiveWebhooks(settings func(base string) map[string]any) {
	e.t.Helper()
	e.rcv = newReceiver(e.t)
	secret := e.putWebhookSettings(settings(e.rcv.srv.URL))
	e.rcv.mu.Lock()
	e.rcv.secret = secret
	e.rcv.mu.Unlock()
}

// connect runs the simulated dashcam of the device added last, with the
// factory credential of fleetcam's configuration, until the test ends;
// tune adjusts its options.
func (e *fleetEnv) connect(tune func(*devicesim.Options)) *devicesim.Device {
	e.t.Helper()
	master, _ := hex.DecodeString(e.cfg.Devices.FactoryMasterKey)
	o := devicesim.Options{IMEI: e.imei, BrokerURL: "tcp://" + e.a.broker.Addr(),
		FactoryMasterKey: master, StateDir: filepath.Join(e.dir, "sim")}
	if tune != nil {
		tune(&o)
	}
	dev, err := devicesim.New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); dev.Run(ctx) }()
	e.t.Cleanup(func() { stop(); <-done }) // runs before fleetcam stops
	e.dev = dev
	return dev
}

// waitOnline waits until the API lists the device added last as online.
func (e *fleetEnv) waitOnline() {
	e.t.Helper()
	// The API says online from the CONNECT on, while the device subscribes
	// to its commands only after it; the simulated device counts itself
	// connected once the broker has acknowledged that subscription, from
	// when commands reach it.
	eventually(e.t, "the device to be online and subscribed", func() bool {
		_, out := e.c.call("GET", "/v2/devices/"+e.imei, e.tok, nil)
		return dig(out, "data", "status") == "online" && (e.dev == nil || e.dev.Connected())
	})
}

// webhook waits for a verified delivery of type typ that match accepts.
func (e *fleetEnv) webhook(what, typ string, match func(map[string]any) bool) map[string]any {
	e.t.Helper()
	var got map[string]any
	eventually(e.t, what, func() bool {
		got = e.rcv.find(func(b map[string]any) bool { return b["type"] == typ && match(b) })
		return got != nil
	})
	return got
}

// checkSignatures fails the test if any delivery failed verification.
func (e *fleetEnv) checkSignatures() {
	e.t.Helper()
	e.rcv.mu.Lock()
	defer e.rcv.mu.Unlock()
	if e.rcv.badSigns != 0 {
		e.t.Fatalf("%d webhook deliveries failed signature verification", e.rcv.badSigns)
	}
}

// patience bounds every wait of these tests for a condition: long enough
// for a machine whose two cores are busy with other work as well as with
// the tests under the race detector. A wait ends as soon as its condition
// holds, so on a quiet machine the bound costs nothing; no test depends
// on how fast the machine is.
const patience = 3 * time.Minute

// eventually checks cond until it holds, for up to patience.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	storetest.Eventually(t, what, patience, 20*time.Millisecond, cond)
}

// dig returns the value at keys in nested JSON objects, nil when absent.
func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// client talks to a running fleetcam.
type client struct {
	t    *testing.T
	base string
}

// call makes one API request with an optional bearer token and JSON body
// and returns the status and the decoded answer.
func (c client) call(method, path, token string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// login authenticates and returns the token, failing the test otherwise.
func (c client) login(email, password string) string {
	c.t.Helper()
	status, out := c.call("POST", "/v2/authenticate", "", map[string]any{"email": email, "password": password})
	if status != http.StatusOK {
		c.t.Fatalf("login %s: %d %v", email, status, out)
	}
	return out["data"].(map[string]any)["token"].(string)
}

// receiver is a partner's webhook endpoint that verifies every delivery.
type receiver struct {
	mu       sync.Mutex
	secret   string
	bodies   []map[string]any
	badSigns int
	srv      *httptest.Server
}

// newReceiver starts a receiver on 127.0.0.1:0 until the test ends; it
// answers 401 until secret is set.
func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := webhooks.Verify(r.secret, req.Header, body, time.Now(), 5*time.Minute); err != nil {
			r.badSigns++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var m map[string]any
		json.Unmarshal(body, &m)
		r.bodies = append(r.bodies, m)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// find returns the first verified delivery for which match holds.
func (r *receiver) find(match func(map[string]any) bool) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bodies {
		if match(b) {
			return b
		}
	}
	return nil
}
