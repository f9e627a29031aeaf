package webhooks

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

var (
	devX = imei(1)
	devY = imei(2)
)

func TestDeliveryIsSignedAndVerifiable(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, nil)
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/events")} })
	e.event(devX, 7, "accident")
	r := rc.wait(e, 1)[0]

	if err := Verify(e.secret(), r.header, r.body, e.clock.Now(), 5*time.Minute); err != nil {
		t.Fatalf("receiver cannot verify: %v (headers %v)", err, r.header)
	}
	if !strings.HasPrefix(r.id(), "msg_") || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", r.header)
	}
	if r.env.Type != "event" || r.env.MediaAvailable == nil || *r.env.MediaAvailable {
		t.Fatalf("envelope %s: want type event with mediaAvailable false", r.body)
	}
	if d := r.data(); d["id"] != float64(7) || d["serialNumber"] != devX || d["eventType"] != "accident" {
		t.Fatalf("data %s", r.env.Data)
	}
	tampered := append([]byte(nil), r.body...)
	tampered[len(tampered)-2] = ' '
	if err := Verify(e.secret(), r.header, tampered, e.clock.Now(), 5*time.Minute); err != ErrBadSignature {
		t.Fatalf("tampered body verified: %v", err)
	}

	// The follow-up once the event's media is in the cloud.
	e.emit(store.MessageMediaUploaded, "", devX, map[string]any{"id": 7, "serialNumber": devX, "eventType": "accident"})
	r = rc.wait(e, 2)[1]
	if r.env.Type != "event" || r.env.MediaAvailable == nil || !*r.env.MediaAvailable {
		t.Fatalf("follow-up %s: want mediaAvailable true", r.body)
	}
	e.waitFor("both delivered", func() bool {
		return len(e.deliveries(store.DeliveryFilter{Status: store.DeliveryDelivered})) == 2
	})
}

func TestBeepEventsAreNotSent(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, nil)
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/")} })
	for i, typ := range []string{"cell_phone_use_beep", "smokingBeep", "cellPhoneUse", "virtual_event"} {
		e.event(devX, i+1, typ)
	}
	e.settle()
	if got := eventIDs(rc.requests()); got != devX+":3 "+devX+":4" {
		t.Fatalf("received %s; beeps must not be sent", got)
	}
}

func TestRetriesWithBackoffUntilSuccess(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, func(n int, _ received, _ http.ResponseWriter) int {
		if n < 2 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/")} })
	e.event(devX, 1, "accident")
	rc.wait(e, 1)
	e.attempted(1)

	// Nothing happens until the backoff has passed by the dispatcher's clock.
	e.settle()
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("%d requests before the backoff elapsed", n)
	}
	e.advance(e.cfg.MaxBackoff)
	rc.wait(e, 2)
	e.attempted(2)
	e.advance(e.cfg.MaxBackoff)
	rs := rc.wait(e, 3)
	e.waitFor("delivered", func() bool {
		return len(e.deliveries(store.DeliveryFilter{Status: store.DeliveryDelivered})) == 1
	})
	for _, r := range rs {
		if r.id() != rs[0].id() {
			t.Fatalf("webhook-id changed across retries: %s then %s", rs[0].id(), r.id())
		}
		if err := Verify(e.secret(), r.header, r.body, e.clock.Now(), 5*time.Minute); err != nil {
			t.Fatalf("retry not verifiable: %v", err)
		}
	}
	d := e.deliveries(store.DeliveryFilter{})[0]
	if d.Attempts != 3 || len(d.Log) != 3 || d.Log[0].StatusCode != 500 || d.Log[2].StatusCode != 204 {
		t.Fatalf("attempt log %+v", d.Log)
	}
}

func TestBackoffGrowsWithJitterAndCaps(t *testing.T) {
	e := newEnv(t, func(c *configs.Webhooks) { c.InitialBackoff, c.MaxBackoff = time.Second, 30*time.Second })
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 6: 30 * time.Second, 40: 30 * time.Second} {
		for range 20 {
			got := e.d.backoff(n)
			if got < want/2 || got > want {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, got, want/2, want)
			}
		}
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value func(now time.Time) string
		wait  time.Duration
	}{
		{"seconds", func(time.Time) string { return "120" }, 120 * time.Second},
		{"HTTP date", func(now time.Time) string { return now.Add(10 * time.Minute).Format(http.TimeFormat) }, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			rc := newReceiver(t, func(n int, _ received, w http.ResponseWriter) int {
				if n == 0 {
					w.Header().Set("Retry-After", tc.value(e.clock.Now()))
					return http.StatusTooManyRequests
				}
				return http.StatusOK
			})
			e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/")} })
			e.event(devX, 1, "accident")
			rc.wait(e, 1)
			e.attempted(1)
			e.clock.Advance(tc.wait - 2*time.Second) // past any backoff, short of Retry-After
			e.settle()
			if n := len(rc.requests()); n != 1 {
				t.Fatalf("retried before Retry-After (%d requests)", n)
			}
			// 429 holds the whole endpoint: another device's message waits too.
			e.event(devY, 2, "accident")
			e.settle()
			if n := len(rc.requests()); n != 1 {
				t.Fatalf("endpoint not held back after 429 (%d requests)", n)
			}
			e.advance(3 * time.Second)
			rs := rc.wait(e, 3)
			if got := eventIDs(rs[1:]); got != devX+":1 "+devY+":2" {
				t.Fatalf("after Retry-After got %s", got)
			}
		})
	}
}

func TestTimeoutIsRetried(t *testing.T) {
	e := newEnv(t, func(c *configs.Webhooks) { c.RequestTimeout = 150 * time.Millisecond })
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, _ received, _ http.ResponseWriter) int {
		if n == 0 {
			<-release
		}
		return http.StatusOK
	})
	defer close(release)
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/")} })
	e.event(devX, 1, "accident")
	e.attempted(1)
	d := e.deliveries(store.DeliveryFilter{})[0]
	if d.Status != store.DeliveryPending || d.LastError != "timed out" {
		t.Fatalf("after a timeout: status %s, error %q", d.Status, d.LastError)
	}
	e.advance(e.cfg.MaxBackoff)
	rs := rc.wait(e, 2)
	if rs[0].id() != rs[1].id() {
		t.Fatal("webhook-id changed after a timeout")
	}
	e.waitFor("delivered", func() bool {
		return len(e.deliveries(store.DeliveryFilter{Status: store.DeliveryDelivered})) == 1
	})
}

func TestGoneDisablesEndpoint(t *testing.T) {
	e := newEnv(t)
	gone := newReceiver(t, func(int, received, http.ResponseWriter) int { return http.StatusGone })
	ok := newReceiver(t, nil)
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{gone.url("/"), ok.url("/")} })
	e.event(devX, 1, "accident")
	gone.wait(e, 1)
	ok.wait(e, 1)
	e.attempted(2)
	var ep *store.WebhookEndpoint
	e.db.View(t.Context(), func(tx *store.Tx) error { ep, _ = tx.WebhookEndpoint(e.org, gone.url("/")); return nil })
	if !ep.Disabled || !strings.Contains(ep.DisabledReason, "410") {
		t.Fatalf("endpoint after 410: %+v", ep)
	}
	e.event(devX, 2, "accident")
	ok.wait(e, 2)
	e.settle()
	if n := len(gone.requests()); n != 1 {
		t.Fatalf("disabled endpoint got %d requests", n)
	}
	if d := e.deliveries(store.DeliveryFilter{URL: gone.url("/")}); len(d) != 1 || d[0].Status != store.DeliveryFailed {
		t.Fatalf("deliveries to the disabled URL: %+v", d)
	}
	// Saving the URL again enables it.
	e.settings(func(s *store.WebhookSettings) {})
	e.event(devX, 3, "accident")
	gone.wait(e, 2)
}

func TestGivesUpAfterMaxRetryAge(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, func(int, received, http.ResponseWriter) int { return http.StatusBadGateway })
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/")} })
	e.event(devX, 1, "accident")
	n := 1
	e.attempted(n)
	for e.deliveries(store.DeliveryFilter{})[0].Status == store.DeliveryPending {
		e.advance(e.cfg.MaxBackoff * 30)
		n++
		e.attempted(n)
		if n > 100 {
			t.Fatal("never given up")
		}
	}
	d := e.deliveries(store.DeliveryFilter{})[0]
	if d.Status != store.DeliveryFailed || !strings.Contains(d.LastError, "given up") {
		t.Fatalf("delivery %+v", d)
	}
	if age := d.FinishedAt.Sub(d.CreatedAt); age < 24*time.Hour {
		t.Fatalf("given up after %v, want at least 24h", age)
	}
}

func TestOrderedPerDeviceAndURL(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	failedOnce := false
	rc := newReceiver(t, func(n int, r received, _ http.ResponseWriter) int {
		mu.Lock()
		defer mu.Unlock()
		if r.data()["serialNumber"] == devX && r.data()["id"] == float64(1) && !failedOnce {
			failedOnce = true
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/")} })
	e.event(devX, 1, "accident")
	rc.wait(e, 1)
	e.attempted(1)
	for i := 2; i <= 4; i++ {
		e.event(devX, i, "accident")
	}
	e.event(devY, 1, "accident")
	e.event(devY, 2, "accident")
	// Device Y is not held back by device X's failure; X's later events are.
	rc.wait(e, 3)
	e.settle()
	if got := eventIDs(rc.requests()); got != devX+":1 "+devY+":1 "+devY+":2" {
		t.Fatalf("before the retry got %s", got)
	}
	e.advance(e.cfg.MaxBackoff)
	rs := rc.wait(e, 7)
	if got := eventIDs(rs[3:]); got != devX+":1 "+devX+":2 "+devX+":3 "+devX+":4" {
		t.Fatalf("device X after the retry: %s", got)
	}
}

func TestDeadURLDoesNotDelayOthers(t *testing.T) {
	e := newEnv(t, func(c *configs.Webhooks) { c.Workers = 4 })
	release := make(chan struct{})
	dead := newReceiver(t, func(int, received, http.ResponseWriter) int {
		<-release
		return http.StatusOK
	})
	healthy := newReceiver(t, nil)
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{dead.url("/"), healthy.url("/")} })
	for i := range 12 {
		e.event(imei(10+i), 1, "accident") // twelve devices: twelve chains at the dead URL
	}
	healthy.wait(e, 12)
	if n := len(dead.requests()); n > e.cfg.Workers/2 {
		t.Fatalf("the hanging URL holds %d requests, more than half the workers", n)
	}
	close(release)
	dead.wait(e, 12)
}

func TestPrivateTargetRefusedAtDelivery(t *testing.T) {
	e := newEnv(t, func(c *configs.Webhooks) { c.AllowPrivateTargets = false })
	rc := newReceiver(t, nil)
	// Saved straight into the store, past the API's save-time check, as a
	// name that later resolves to an internal address would be.
	localhost := strings.Replace(rc.url("/"), "127.0.0.1", "localhost", 1)
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/"), localhost} })
	e.event(devX, 1, "accident")
	e.attempted(2)
	for _, d := range e.deliveries(store.DeliveryFilter{}) {
		if d.Status != store.DeliveryPending || !strings.Contains(d.LastError, "loopback") {
			t.Fatalf("delivery to %s: status %s, error %q", d.URL, d.Status, d.LastError)
		}
	}
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("a loopback receiver got %d requests", n)
	}
}

func TestRedeliverSendsSameWebhookID(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, nil)
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/")} })
	e.event(devX, 1, "accident")
	rc.wait(e, 1)
	e.attempted(1)
	first := e.deliveries(store.DeliveryFilter{})[0]
	e.update(func(tx *store.Tx) error { _, err := tx.Redeliver(e.org, first.ID); return err })
	rs := rc.wait(e, 2)
	if rs[1].id() != rs[0].id() || string(rs[1].body) != string(rs[0].body) {
		t.Fatalf("redelivery differs: %s %s", rs[0].id(), rs[1].id())
	}
	e.waitFor("both delivered", func() bool {
		return len(e.deliveries(store.DeliveryFilter{Status: store.DeliveryDelivered})) == 2
	})
}

func TestSecretRotationSignsWithBothDuringGrace(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, nil)
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/")} })
	e.event(devX, 1, "accident")
	rc.wait(e, 1)
	old := e.secret()
	e.update(func(tx *store.Tx) error { _, err := tx.RotateWebhookSecret(e.org, NewSalt(), SecretGrace); return err })
	if e.secret() == old {
		t.Fatal("rotation kept the secret")
	}
	e.event(devX, 2, "accident")
	r := rc.wait(e, 2)[1]
	for _, sec := range []string{old, e.secret()} {
		if err := Verify(sec, r.header, r.body, e.clock.Now(), time.Minute); err != nil {
			t.Fatalf("during the grace period: %v", err)
		}
	}
	e.clock.Advance(SecretGrace + time.Second)
	e.event(devX, 3, "accident")
	r = rc.wait(e, 3)[2]
	if err := Verify(old, r.header, r.body, e.clock.Now(), time.Minute); err != ErrBadSignature {
		t.Fatalf("old secret after the grace period: %v", err)
	}
	if err := Verify(e.secret(), r.header, r.body, e.clock.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
}

// TestMessagesWithoutURLsAreSkipped checks that messages no URL wants are
// passed over without queueing anything, and stay passed over after a restart.
func TestMessagesWithoutURLsAreSkipped(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, nil)
	for i := range 5 {
		e.emit(store.MessageGPS, "", devX, map[string]any{"id": i})
	}
	e.settle()
	e.d.Close() // stop to read the cursor safely; it is written down on close
	var cursor int64
	e.db.View(t.Context(), func(tx *store.Tx) error { cursor = tx.WebhookCursor(); return nil })
	if cursor != 5 {
		t.Fatalf("cursor %d after fanning out five GPS messages nobody wants, want 5", cursor)
	}
	e.start()
	e.settings(func(s *store.WebhookSettings) { s.GPSURLs = []string{rc.url("/gps")} })
	e.emit(store.MessageGPS, "", devX, map[string]any{"id": "new"})
	rs := rc.wait(e, 1)
	e.attempted(1)
	e.restart()
	e.settle()
	if n := len(rc.requests()); n != 1 || rs[0].data()["id"] != "new" {
		t.Fatalf("%d GPS webhooks (first %s); only the message after the settings should go", n, rs[0].body)
	}
	if n := len(e.deliveries(store.DeliveryFilter{})); n != 1 {
		t.Fatalf("%d deliveries queued, want 1", n)
	}
}

// TestManyMessagesKeepDeviceOrder sends messages of many devices to two URLs
// with flaky answers and checks each URL sees every device's messages in order.
func TestManyMessagesKeepDeviceOrder(t *testing.T) {
	e := newEnv(t, func(c *configs.Webhooks) { c.Workers = 8 })
	var mu sync.Mutex
	flaky := map[string]bool{}
	answer := func(_ int, r received, _ http.ResponseWriter) int {
		mu.Lock()
		defer mu.Unlock()
		if id := r.id(); !flaky[id] && len(id)%3 == 0 { // a third of the messages fail once
			flaky[id] = true
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	u1, u2 := newReceiver(t, answer), newReceiver(t, answer)
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{u1.url("/"), u2.url("/")} })
	const devices, perDevice = 20, 15
	e.update(func(tx *store.Tx) error {
		for n := 1; n <= perDevice; n++ {
			for dv := range devices {
				err := tx.Emit(store.Message{Kind: store.MessageEvent, OrganizationID: e.org, IMEI: imei(dv),
					Event: &store.EventFact{ID: int64(n), Type: "accident"}})
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	// Each pass settles every attempt due, then the clock makes the retries due.
	for pass := 0; len(e.deliveries(store.DeliveryFilter{Status: store.DeliveryDelivered})) < 2*devices*perDevice; pass++ {
		if pass == 100 {
			t.Fatalf("%d of %d delivered after %d passes", len(e.deliveries(store.DeliveryFilter{Status: store.DeliveryDelivered})), 2*devices*perDevice, pass)
		}
		e.settle()
		e.clock.Advance(e.cfg.MaxBackoff)
	}
	for _, rc := range []*receiver{u1, u2} {
		last := map[string]float64{}
		for _, r := range rc.requests() {
			if r.status != http.StatusOK {
				continue
			}
			dev, n := r.data()["serialNumber"].(string), r.data()["id"].(float64)
			if n != last[dev]+1 {
				t.Fatalf("%s got %s:%v after %v", rc.srv.URL, dev, n, last[dev])
			}
			last[dev] = n
		}
		if len(last) != devices {
			t.Fatalf("%s heard from %d devices", rc.srv.URL, len(last))
		}
	}
}
