package cloudapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
	"golang.org/x/crypto/bcrypt"
)

// testEnv is the whole API over a real bbolt file, served by httptest.
type testEnv struct {
	t     *testing.T
	cfg   configs.Config
	db    *store.DB
	api   *Server
	srv   *httptest.Server
	clock *storetest.Clock
	key   []byte
	cmd   Commander
	// partnerToken is a token of the first partner's user.
	partnerID    int64
	partnerToken string
	// violations are the answers that broke the reference contract; trySend
	// may run on other goroutines, so they are reported when the test ends.
	violationsMu sync.Mutex
	violations   []string
}

type envOption func(*configs.Config, *Deps)

// newEnv starts the API with one partner (partner@example.com / Secret123).
func newEnv(t *testing.T, opts ...envOption) *testEnv {
	t.Helper()
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := storetest.Open(t, storetest.WithClock(clock.Now))
	cfg := configs.Default()
	cfg.Auth.BcryptCost = bcrypt.MinCost
	// The test clock stands still, so buckets never refill; the rate limit
	// has its own test.
	cfg.HTTP.RateLimit = 0
	cfg.DataDir = t.TempDir()
	// The listener exists before the API so that signed media URLs carry its address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.PublicURL = "http://" + ln.Addr().String()
	d := Deps{Config: cfg, Store: db, Key: bytes.Repeat([]byte("k"), 32), Now: clock.Now,
		Logger: slog.New(slog.NewTextHandler(failureLog(t), &slog.HandlerOptions{Level: slog.LevelWarn}))}
	for _, o := range opts {
		o(&d.Config, &d)
	}
	api, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(api.Handler())
	srv.Listener.Close()
	srv.Listener = ln
	recordRoutes(api.Routes())
	e := &testEnv{t: t, cfg: d.Config, db: db, api: api, srv: srv, clock: clock, key: d.Key, cmd: d.Commander}
	// Registered before srv.Close, so it runs after every answer is in.
	t.Cleanup(e.reportViolations)
	srv.Start()
	t.Cleanup(srv.Close)
	e.partnerID = e.addPartner("First partner", "partner@example.com", "Secret123")
	e.partnerToken = e.login("partner@example.com", "Secret123")
	return e
}

// failureLog is where the API logs its warnings and errors in a test: they
// are shown when the test fails (a 500 names no cause in its answer; the
// log does), and dropped otherwise.
func failureLog(t *testing.T) io.Writer {
	l := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			if s := l.String(); s != "" {
				t.Logf("the API's log:\n%s", s)
			}
		}
	})
	return l
}

// lockedBuffer is a bytes.Buffer that several goroutines may write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// testHashes are the bcrypt hashes (of the lowest cost) of the passwords
// the tests store, made once per password: under the race detector each
// takes about as long as a small request.
var testHashes sync.Map

// testHash returns the bcrypt hash of password that the tests store.
func testHash(password string) []byte {
	if h, ok := testHashes.Load(password); ok {
		return h.([]byte)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		panic(err) // only a password over 72 bytes fails
	}
	h2, _ := testHashes.LoadOrStore(password, h)
	return h2.([]byte)
}

// addPartner creates a partner with one user directly in the store.
func (e *testEnv) addPartner(name, email, password string) int64 {
	e.t.Helper()
	hash := testHash(password)
	var id int64
	err := e.db.Update(e.t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner(name)
		if err != nil {
			return err
		}
		id = p.ID
		return tx.CreateUser(&store.User{Email: email, PasswordHash: hash, PartnerID: p.ID, AccessLevel: store.AccessEditor})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// addOrgUser creates an organization user directly in the store.
func (e *testEnv) addOrgUser(orgID int64, email, password, level string) {
	e.t.Helper()
	hash := testHash(password)
	err := e.db.Update(e.t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		o, err := tx.Organization(orgID)
		if err != nil {
			return err
		}
		return tx.CreateUser(&store.User{Email: email, PasswordHash: hash, OrganizationID: orgID, PartnerID: o.PartnerID, AccessLevel: level})
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// login returns a user token, failing the test on anything but 200.
func (e *testEnv) login(email, password string) string {
	e.t.Helper()
	r := e.do("POST", "/v2/authenticate", "", map[string]any{"email": email, "password": password})
	r.want(http.StatusOK)
	return r.str("data.token")
}

// response is a decoded API answer.
type response struct {
	t      *testing.T
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends a request; body is JSON-encoded unless it is a string (sent raw).
func (e *testEnv) do(method, path, token string, body any) *response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.send(req)
}

// send sends req to the API and reads the answer.
func (e *testEnv) send(req *http.Request) *response {
	e.t.Helper()
	r, err := e.trySend(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// trySend is send for goroutines other than the test's: it returns the
// error instead of failing the test.
func (e *testEnv) trySend(req *http.Request) (*response, error) {
	res, err := e.srv.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if _, err := checkContract(req, res.StatusCode, res.Header, raw); err != nil {
		e.violationsMu.Lock()
		e.violations = append(e.violations, fmt.Sprintf("%s %s: %v; body %.300s", req.Method, req.URL.Path, err, raw))
		e.violationsMu.Unlock()
	}
	r := &response{t: e.t, status: res.StatusCode, header: res.Header, raw: raw}
	json.Unmarshal(raw, &r.body)
	return r, nil
}

// reportViolations fails the test for each answer that broke the reference contract.
func (e *testEnv) reportViolations() {
	e.violationsMu.Lock()
	defer e.violationsMu.Unlock()
	for _, v := range e.violations {
		e.t.Errorf("reference contract: %s", v)
	}
}

// want fails the test unless the status is code.
func (r *response) want(code int) *response {
	r.t.Helper()
	if r.status != code {
		r.t.Fatalf("status %d, want %d; body %s", r.status, code, r.raw)
	}
	return r
}

// wantError fails the test unless the answer is the error name with status code
// and the message contains every fragment.
func (r *response) wantError(code int, name string, fragments ...string) *response {
	r.t.Helper()
	r.want(code)
	if got := r.str("error"); got != name {
		r.t.Fatalf("error %q, want %q; body %s", got, name, r.raw)
	}
	if r.str("requestId") == "" {
		r.t.Fatalf("error without requestId: %s", r.raw)
	}
	for _, f := range fragments {
		if !strings.Contains(r.str("message"), f) {
			r.t.Fatalf("message %q does not mention %q", r.str("message"), f)
		}
	}
	return r
}

// get returns the value at a dotted path ("data.items.0.id").
func (r *response) get(path string) any {
	var v any = r.body
	for _, part := range strings.Split(path, ".") {
		switch n := v.(type) {
		case map[string]any:
			v = n[part]
		case []any:
			i := 0
			for _, ch := range part {
				i = i*10 + int(ch-'0')
			}
			if i >= len(n) {
				return nil
			}
			v = n[i]
		default:
			return nil
		}
	}
	return v
}

func (r *response) str(path string) string {
	s, _ := r.get(path).(string)
	return s
}

func (r *response) num(path string) float64 {
	f, _ := r.get(path).(float64)
	return f
}

func (r *response) id(path string) int64 { return int64(r.num(path)) }

// text decodes the JSON text the answer gives as a string at path (an audit
// entry's value) into a response of its own; its body is empty when the
// string is not a JSON object.
func (r *response) text(path string) *response {
	out := &response{t: r.t, status: r.status, raw: []byte(r.str(path))}
	json.Unmarshal(out.raw, &out.body)
	return out
}

// strID is an id the answer gives as a string ("12"); 0 when it is not one.
func (r *response) strID(path string) int64 {
	n, _ := strconv.ParseInt(r.str(path), 10, 64)
	return n
}

func (r *response) list(path string) []any {
	l, _ := r.get(path).([]any)
	return l
}
