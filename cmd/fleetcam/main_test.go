package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
)

// env is a fake process environment for run.
type env map[string]string

func (e env) get(k string) string { return e[k] }

func testEnv(dir string) env {
	return env{
		"FLEETCAM_DATA_DIR":  dir,
		"FLEETCAM_HTTP_ADDR": "127.0.0.1:0",
		"FLEETCAM_MQTT_ADDR": "127.0.0.1:0",
		"FLEETCAM_LOG_LEVEL": "info",
	}
}

// logSink collects run's log lines and hands over the HTTP address it reports.
type logSink struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
	rest []byte
}

func newLogSink() *logSink { return &logSink{addr: make(chan string, 1)} }

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	l.rest = append(l.rest, p...)
	for {
		i := bytes.IndexByte(l.rest, '\n')
		if i < 0 {
			break
		}
		var line struct {
			Msg  string `json:"msg"`
			HTTP string `json:"http"`
		}
		if json.Unmarshal(l.rest[:i], &line) == nil && line.Msg == "fleetcam started" {
			l.addr <- line.HTTP
		}
		l.rest = l.rest[i+1:]
	}
	return len(p), nil
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func TestRunFirstStartAndShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := testEnv(dir)
	e["FLEETCAM_PARTNER_EMAIL"] = "ops@fleet.example"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := newLogSink()
	exit := make(chan int, 1)
	go func() { exit <- run(ctx, nil, e.get, io.Discard, logs) }()

	var addr string
	select {
	case addr = <-logs.addr:
	case code := <-exit:
		t.Fatalf("run exited with %d: %s", code, logs)
	case <-time.After(patience):
		t.Fatalf("fleetcam did not start: %s", logs)
	}

	pwFile := filepath.Join(dir, initialPasswordFile)
	for _, f := range []string{pwFile, filepath.Join(dir, signingKeyFile)} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v", f, st.Mode().Perm())
		}
	}
	raw, _ := os.ReadFile(pwFile)
	password := strings.TrimSpace(string(raw))
	if len(password) < 16 || strings.Count(logs.String(), password) != 1 {
		t.Fatalf("generated password %q is not logged exactly once", password)
	}

	c := client{t: t, base: "http://" + addr}
	tok := c.login("ops@fleet.example", password)
	if status, me := c.call("GET", "/v2/me", tok, nil); status != 200 || me["data"].(map[string]any)["entity"] != "partner" {
		t.Fatalf("/v2/me: %d %v", status, me)
	}
	if status, _ := c.call("GET", "/readyz", "", nil); status != 200 {
		t.Fatalf("readyz %d", status)
	}
	res, err := http.Get(c.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"go_goroutines", `fleetcam_http_requests_total{method="POST",route="/v2/authenticate",status="200"} 1`, "process_"} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}

	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("run exited with %d: %s", code, logs)
		}
	case <-time.After(patience):
		t.Fatal("fleetcam did not shut down")
	}
	if _, err := http.Get(c.base + "/healthz"); err == nil {
		t.Fatal("HTTP still served after shutdown")
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Fatalf("no shutdown log: %s", logs)
	}

	// A second start over the same data keeps the partner and its password.
	a := startApp(t, e)
	client{t: t, base: "http://" + a.httpAddr.String()}.login("ops@fleet.example", password)
}

// startApp starts fleetcam with the environment and stops it when the test
// ends. Passwords are hashed at bcrypt's lowest cost, as in startEnv: the
// tests that start fleetcam through run keep the default cost.
func startApp(t *testing.T, e env) *app {
	t.Helper()
	cfg, err := configs.Load("", e.get)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth.BcryptCost = 4
	a, err := start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.stop(5 * time.Second) })
	return a
}

func TestRunConfiguredPartnerPassword(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := testEnv(dir)
	e["FLEETCAM_PARTNER_EMAIL"] = "boss@fleet.example"
	e["FLEETCAM_PARTNER_PASSWORD"] = "Configured1"
	a := startApp(t, e)
	client{t: t, base: "http://" + a.httpAddr.String()}.login("boss@fleet.example", "Configured1")
	if _, err := os.Stat(filepath.Join(dir, initialPasswordFile)); !os.IsNotExist(err) {
		t.Fatalf("password file written for a configured password: %v", err)
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	t.Parallel()
	e := testEnv(t.TempDir())
	e["FLEETCAM_HTTP_ADDR"] = "nowhere"
	var stderr bytes.Buffer
	if code := run(context.Background(), nil, e.get, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "http.addr") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// runCmd runs a subcommand and returns its exit code and output.
func runCmd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := run(context.Background(), args, env{}.get, &out, &out)
	return code, out.String()
}

var createdRE = regexp.MustCompile(`created user (\d+) \(([^)]+)\) for partner (\d+)`)

func TestAdminSubcommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out := runCmd(t, "partner", "add", "-data", dir, "--create", "--name", "Acme Telematics", "--email", "ops@acme.example", "--password", "Passw0rdA")
	m := createdRE.FindStringSubmatch(out)
	if code != 0 || m == nil || m[2] != "ops@acme.example" {
		t.Fatalf("partner add: %d %s", code, out)
	}
	partnerID := m[3]
	code, out = runCmd(t, "user", "add", "-data", dir, "--email", "sales@acme.example", "--partner", partnerID, "--access-level", "viewer")
	pw := regexp.MustCompile(`password: (\S+)`).FindStringSubmatch(out)
	if code != 0 || pw == nil || !strings.Contains(out, "for partner "+partnerID) {
		t.Fatalf("user add: %d %s", code, out)
	}

	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"partner without name", []string{"partner", "add", "-data", dir, "--email", "x@acme.example"}, "--name is required"},
		{"bad email", []string{"partner", "add", "-data", dir, "--name", "X", "--email", "nope"}, "--email"},
		{"user without owner", []string{"user", "add", "-data", dir, "--email", "x@acme.example"}, "exactly one of --partner and --organization"},
		{"bad access level", []string{"user", "add", "-data", dir, "--email", "x@acme.example", "--partner", partnerID, "--access-level", "root"}, "--access-level"},
		{"unknown partner", []string{"user", "add", "-data", dir, "--email", "x@acme.example", "--partner", "99"}, "partner 99"},
		{"duplicate email", []string{"user", "add", "-data", dir, "--email", "OPS@acme.example", "--partner", partnerID}, "already exists"},
		{"unknown verb", []string{"partner", "remove"}, "usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, out := runCmd(t, tc.args...); code != 1 || !strings.Contains(out, tc.msg) {
				t.Fatalf("exit %d: %s", code, out)
			}
		})
	}

	// The server starts on the data dir without creating another partner;
	// both users log in; the partner creates an organization.
	e := testEnv(dir)
	a := startApp(t, e)
	c := client{t: t, base: "http://" + a.httpAddr.String()}
	tok := c.login("ops@acme.example", "Passw0rdA")
	viewer := c.login("sales@acme.example", pw[1])
	if status, me := c.call("GET", "/v2/me", viewer, nil); status != 200 || me["data"].(map[string]any)["me"].(map[string]any)["accessLevel"] != "viewer" {
		t.Fatalf("viewer /me: %d %v", status, me)
	}
	if _, err := os.Stat(filepath.Join(dir, initialPasswordFile)); !os.IsNotExist(err) {
		t.Fatal("a bootstrap partner was created although partners exist")
	}
	status, org := c.call("POST", "/v2/organizations", tok, map[string]any{"name": "Acme Fleet"})
	if status != 200 {
		t.Fatalf("create organization %d %v", status, org)
	}
	orgID := int64(org["organizationId"].(float64))

	// The store is locked while the server runs; an organization user is added once it stops.
	a.stop(5 * time.Second)
	code, out = runCmd(t, "user", "add", "-data", dir, "--email", "driver@acme.example", "--organization", itoa(orgID), "--password", "Passw0rdB")
	if code != 0 || !strings.Contains(out, "organization "+itoa(orgID)) {
		t.Fatalf("organization user add: %d %s", code, out)
	}
	a = startApp(t, e)
	c = client{t: t, base: "http://" + a.httpAddr.String()}
	user := c.login("driver@acme.example", "Passw0rdB")
	if status, me := c.call("GET", "/v2/me", user, nil); status != 200 || me["data"].(map[string]any)["me"].(map[string]any)["organizationId"] != float64(orgID) {
		t.Fatalf("organization user /me: %d %v", status, me)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
