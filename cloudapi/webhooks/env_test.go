package webhooks

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
)

// env is a dispatcher over a real bbolt file with one organization.
type env struct {
	t     *testing.T
	path  string
	cfg   configs.Webhooks
	key   []byte
	clock *storetest.Clock
	db    *store.DB
	d     *Dispatcher
	reg   *prometheus.Registry
	org   int64
}

// newEnv opens a store, creates a partner and an organization and starts a
// dispatcher; opts adjust the configuration first.
func newEnv(t *testing.T, opts ...func(*configs.Webhooks)) *env {
	t.Helper()
	cfg := configs.Default().Webhooks
	cfg.Workers = 4
	cfg.RequestTimeout = 2 * time.Second
	cfg.MaxRetryAge = 24 * time.Hour
	cfg.InitialBackoff = time.Second
	cfg.MaxBackoff = time.Minute
	cfg.AllowPrivateTargets = true
	for _, o := range opts {
		o(&cfg)
	}
	e := &env{t: t, path: filepath.Join(t.TempDir(), "fleetcam.db"), cfg: cfg, key: []byte("0123456789abcdef0123456789abcdef"),
		clock: storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	e.open()
	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "Fleet", []byte("salt"))
		e.org = o.ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	e.start()
	t.Cleanup(func() {
		e.d.Close()
		e.db.Close()
	})
	return e
}

func (e *env) open() {
	e.t.Helper()
	db := storetest.Open(e.t, storetest.WithPath(e.path), storetest.WithClock(e.clock.Now))
	e.db = db
}

func (e *env) start() {
	e.t.Helper()
	e.reg = prometheus.NewRegistry()
	d, err := New(e.cfg, e.db, e.key, nil, e.reg, e.clock.Now)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := d.Start(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	e.d = d
}

// restart stops the dispatcher, closes the store, reopens the same file and
// starts a new dispatcher, as a fleetcam restart does.
func (e *env) restart() {
	e.t.Helper()
	e.d.Close()
	if err := e.db.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
	e.start()
}

// advance moves the clock and nudges the scheduler.
func (e *env) advance(d time.Duration) {
	e.clock.Advance(d)
	e.d.Nudge()
}

// update runs fn in a write transaction, failing the test on error.
func (e *env) update(fn func(tx *store.Tx) error) {
	e.t.Helper()
	if err := e.db.Update(e.t.Context(), store.Actor{Source: "test"}, fn); err != nil {
		e.t.Fatal(err)
	}
}

// settings changes the organization's webhook settings.
func (e *env) settings(fn func(s *store.WebhookSettings)) {
	e.t.Helper()
	e.update(func(tx *store.Tx) error {
		s, err := tx.WebhookSettings(e.org)
		if err != nil {
			return err
		}
		fn(s)
		return tx.PutWebhookSettings(s)
	})
}

// emit records a message for the organization whose data object is
// payload, rendered already: a message as fleetcam recorded it before the
// store recorded typed facts, which is sent as it is.
func (e *env) emit(kind, subType, imei string, payload any) {
	e.t.Helper()
	e.update(func(tx *store.Tx) error {
		return tx.Emit(store.Message{Kind: kind, SubType: subType, OrganizationID: e.org, IMEI: imei, Payload: mustJSON(e.t, payload)})
	})
}

// mustJSON encodes v, failing the test on error.
func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// event emits an event message with id n for imei.
func (e *env) event(imei string, n int, eventType string) {
	e.t.Helper()
	e.emit(store.MessageEvent, "", imei, map[string]any{"id": n, "serialNumber": imei, "eventType": eventType,
		"time": e.clock.Now().Unix(), "lat": 32.1, "lon": 34.8, "alt": 12, "speed": 54.5})
}

// gps emits n GPS messages for imei in one transaction.
func (e *env) gps(imei string, n int) {
	e.t.Helper()
	e.update(func(tx *store.Tx) error {
		for i := range n {
			m := store.Message{Kind: store.MessageGPS, OrganizationID: e.org, IMEI: imei}
			m.Payload = mustJSON(e.t, map[string]any{"serialNumber": imei, "n": i})
			if err := tx.Emit(m); err != nil {
				return err
			}
		}
		return nil
	})
}

// messages lists the messages still in the store, oldest first.
func (e *env) messages() []store.Message {
	e.t.Helper()
	var out []store.Message
	err := e.db.View(e.t.Context(), func(tx *store.Tx) error {
		var err error
		out, err = tx.MessagesAfter(0, 0)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// storedCursor is the webhook cursor as committed.
func (e *env) storedCursor() int64 {
	var c int64
	e.db.View(e.t.Context(), func(tx *store.Tx) error { c = tx.WebhookCursor(); return nil })
	return c
}

// secret is the organization's current webhook secret.
func (e *env) secret() string {
	e.t.Helper()
	var sec *store.WebhookSecret
	err := e.db.View(e.t.Context(), func(tx *store.Tx) error {
		var err error
		sec, err = tx.WebhookSecret(e.org)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return Secret(e.key, e.org, sec.Salt)
}

// deliveries lists the organization's deliveries, oldest first.
func (e *env) deliveries(f store.DeliveryFilter) []store.Delivery {
	e.t.Helper()
	var out []store.Delivery
	err := e.db.View(e.t.Context(), func(tx *store.Tx) error {
		var err error
		out, _, err = tx.Deliveries(e.org, f, store.Page{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// waitFor checks cond until it holds, for up to five seconds.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	storetest.Eventually(e.t, what, 2*time.Minute, 2*time.Millisecond, cond)
}

// settle wakes the dispatcher and waits until a pass of its scheduler that
// began after the wake-up has fanned out every message, attempted and
// recorded every delivery due by the test clock, and left nothing in
// flight. What a receiver has not got by then is not going to be sent
// until the clock moves or a message is emitted.
func (e *env) settle() {
	e.t.Helper()
	done := make(chan struct{})
	// A pass ends as soon as it is done; a busy machine may take a while.
	timeout := time.NewTimer(2 * time.Minute)
	defer timeout.Stop()
	select {
	case e.d.settle <- done:
	case <-timeout.C:
		e.t.Fatal("the dispatcher's scheduler is not running")
	}
	select {
	case <-done:
	case <-timeout.C:
		e.t.Fatal("timed out waiting for the dispatcher to settle")
	}
}

// attempted waits until the delivery log holds n attempts in all, and no
// attempt is in flight, so the next clock advance finds every retry scheduled.
func (e *env) attempted(n int) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%d attempts recorded", n), func() bool {
		total := 0
		for _, d := range e.deliveries(store.DeliveryFilter{}) {
			total += d.Attempts
		}
		e.d.mu.Lock()
		idle := len(e.d.inflight) == 0
		e.d.mu.Unlock()
		return total >= n && idle
	})
}

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
	env    Envelope
	status int
}

func (r received) id() string { return r.header.Get(HeaderID) }

// data decodes the envelope's data object.
func (r received) data() map[string]any {
	var m map[string]any
	json.Unmarshal(r.env.Data, &m)
	return m
}

// receiver is a webhook endpoint whose answers a test scripts.
type receiver struct {
	t   *testing.T
	srv *httptest.Server
	mu  sync.Mutex
	got []received
	// answer decides the response to the n-th request (0-based); nil answers 200.
	answer func(n int, r received, w http.ResponseWriter) int
	// arrived is signalled whenever a request comes in.
	arrived chan struct{}
}

func newReceiver(t *testing.T, answer func(n int, r received, w http.ResponseWriter) int) *receiver {
	rc := &receiver{t: t, answer: answer, arrived: make(chan struct{}, 1)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got := received{header: r.Header.Clone(), body: body}
		json.Unmarshal(body, &got.env)
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, got)
		rc.mu.Unlock()
		select {
		case rc.arrived <- struct{}{}:
		default:
		}
		status := http.StatusOK
		if rc.answer != nil {
			status = rc.answer(n, got, w)
		}
		rc.mu.Lock()
		rc.got[n].status = status
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) url(path string) string { return rc.srv.URL + path }

// requests returns what the receiver got so far.
func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// wait waits up to five seconds until the receiver got n requests and
// returns them.
func (rc *receiver) wait(e *env, n int) []received {
	e.t.Helper()
	timeout := time.NewTimer(2 * time.Minute)
	defer timeout.Stop()
	for {
		if rs := rc.requests(); len(rs) >= n {
			return rs
		}
		select {
		case <-rc.arrived:
		case <-timeout.C:
			e.t.Fatalf("timed out waiting for %d requests at %s (got %d)", n, rc.srv.URL, len(rc.requests()))
		}
	}
}

// eventIDs lists data.id of every request, in arrival order, with the path.
func eventIDs(rs []received) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%v:%v", r.data()["serialNumber"], r.data()["id"]))
	}
	return strings.Join(s, " ")
}

// imei returns a valid IMEI ending in n before its check digit.
func imei(n int) string {
	base := fmt.Sprintf("3576601010%04d", n)
	sum := 0
	for i := 0; i < 14; i++ {
		d := int(base[i] - '0')
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return base + fmt.Sprint((10-sum%10)%10)
}
