package cloudapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
)

// hookReceiver records deliveries and answers with status.
type hookReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []*http.Request
	bodies  [][]byte
	status  int
	arrived chan struct{} // signalled whenever a delivery comes in
}

func newHookReceiver(t *testing.T, status int) *hookReceiver {
	h := &hookReceiver{status: status, arrived: make(chan struct{}, 1)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got, h.bodies = append(h.got, r), append(h.bodies, body)
		status := h.status
		h.mu.Unlock()
		select {
		case h.arrived <- struct{}{}:
		default:
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// wait waits up to two minutes until the receiver got n deliveries.
func (h *hookReceiver) wait(t *testing.T, n int) ([]*http.Request, [][]byte) {
	t.Helper()
	timeout := time.NewTimer(2 * time.Minute)
	defer timeout.Stop()
	for {
		h.mu.Lock()
		got, bodies := append([]*http.Request(nil), h.got...), append([][]byte(nil), h.bodies...)
		h.mu.Unlock()
		if len(got) >= n {
			return got, bodies
		}
		select {
		case <-h.arrived:
		case <-timeout.C:
			t.Fatalf("receiver got %d deliveries, want %d", len(got), n)
		}
	}
}

// startDispatcher runs a webhook dispatcher over the environment's store.
func (e *testEnv) startDispatcher() *webhooks.Dispatcher {
	e.t.Helper()
	d, err := webhooks.New(e.cfg.Webhooks, e.db, e.key, nil, prometheus.NewRegistry(), e.clock.Now)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := d.Start(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { d.Close() })
	return d
}

// TestWebhookDeliveryLogAndRedelivery saves settings through the API,
// delivers an event to a real receiver that verifies it with the secret the
// API showed, reads the delivery log and redelivers.
func TestWebhookDeliveryLogAndRedelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, allowPrivate)
	e.startDispatcher()
	org := e.addOrg(e.partnerID, "Fleet")
	dev := e.addDevice(org, 1)
	rc := newHookReceiver(t, http.StatusOK)
	r := e.do("POST", fmt.Sprintf("/v2/organizations/%d/webhook-settings", org), e.partnerToken,
		map[string]any{"eventWebhookUrl": []string{rc.srv.URL + "/events"}, "allowInsecureWebhookUrls": true}).want(http.StatusOK)
	secret := r.str("data.webhookSecret")

	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		return tx.Emit(store.Message{Kind: store.MessageEvent, OrganizationID: org, IMEI: dev,
			Event: &store.EventFact{ID: 5, Type: "accident", Time: e.clock.Now()}})
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs, bodies := rc.wait(t, 1)
	if err := webhooks.Verify(secret, reqs[0].Header, bodies[0], e.clock.Now(), 5*time.Minute); err != nil {
		t.Fatalf("the receiver cannot verify with the secret the API showed: %v", err)
	}
	var env webhooks.Envelope
	if err := json.Unmarshal(bodies[0], &env); err != nil || env.Type != "event" {
		t.Fatalf("body %s", bodies[0])
	}

	log := fmt.Sprintf("/v2/organizations/%d/webhook-deliveries", org)
	var l *response
	storetest.Eventually(t, "the delivery logged as delivered", 2*time.Minute, 5*time.Millisecond, func() bool {
		l = e.do("GET", log, e.partnerToken, nil).want(http.StatusOK)
		return l.str("data.0.status") == "delivered"
	})
	if l.num("metadata.count") != 1 || l.str("data.0.status") != "delivered" || l.num("data.0.attemptLog.0.statusCode") != 200 ||
		l.str("data.0.webhookId") != reqs[0].Header.Get("webhook-id") || l.str("data.0.imei") != dev || l.str("data.0.body.type") != "event" {
		t.Fatalf("delivery log %s", l.raw)
	}
	e.do("GET", log+"?status=sent", e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "status must be one of")
	e.do("GET", log+"?status=pending", e.partnerToken, nil).want(http.StatusOK)

	red := e.do("POST", fmt.Sprintf("%s/%d/redeliver", log, l.id("data.0.id")), e.partnerToken, nil).want(http.StatusCreated)
	if red.id("data.redeliveryOf") != l.id("data.0.id") || red.str("data.status") != "pending" {
		t.Fatalf("redeliver %s", red.raw)
	}
	reqs, _ = rc.wait(t, 2)
	if reqs[1].Header.Get("webhook-id") != reqs[0].Header.Get("webhook-id") {
		t.Fatal("redelivery changed the webhook-id")
	}
	e.do("POST", log+"/999/redeliver", e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound, "delivery 999")

	// A 410 disables the URL; the endpoint list says why; saving the URL enables it.
	rc.mu.Lock()
	rc.status = http.StatusGone
	rc.mu.Unlock()
	e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		return tx.Emit(store.Message{Kind: store.MessageEvent, OrganizationID: org, IMEI: dev, Event: &store.EventFact{ID: 6, Type: "accident"}})
	})
	rc.wait(t, 3)
	eps := fmt.Sprintf("/v2/organizations/%d/webhook-endpoints", org)
	var ep *response
	storetest.Eventually(t, "the endpoint disabled after 410", 2*time.Minute, 5*time.Millisecond, func() bool {
		ep = e.do("GET", eps, e.partnerToken, nil).want(http.StatusOK)
		return ep.get("data.0.disabled") == true
	})
	if ep.get("data.0.disabled") != true || ep.str("data.0.disabledReason") == "" || ep.str("data.0.url") != rc.srv.URL+"/events" {
		t.Fatalf("endpoints %s", ep.raw)
	}
	e.do("PATCH", fmt.Sprintf("/v2/organizations/%d/webhook-settings", org), e.partnerToken,
		map[string]any{"eventWebhookUrl": []string{rc.srv.URL + "/events"}}).want(http.StatusOK)
	if ep = e.do("GET", eps, e.partnerToken, nil).want(http.StatusOK); ep.get("data.0.disabled") != false {
		t.Fatalf("endpoint after saving its URL again: %s", ep.raw)
	}
}

// TestDeliveryLogAfterRetention: the retention purge empties the delivery
// log of deliveries finished more than retention.webhookDeliveryDays ago;
// the log lists only what is left, with a matching count, a pending
// delivery stays whatever its age, and redelivering a purged delivery
// answers 404.
func TestDeliveryLogAfterRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.addOrg(e.partnerID, "Fleet")
	start := e.clock.Now()
	add := func(status string) int64 {
		t.Helper()
		var id int64
		err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
			d := &store.Delivery{OrganizationID: org, URL: "https://hooks.example.com/", Type: store.WebhookTypeEvent, Body: []byte(`{"type":"event"}`)}
			if err := tx.EnqueueDelivery(d); err != nil {
				return err
			}
			id = d.ID
			if status == store.DeliveryPending {
				return nil
			}
			d.Status, d.FinishedAt = status, tx.Now()
			return tx.PutDelivery(d)
		})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	var purged []int64
	for range 3 {
		purged = append(purged, add(store.DeliveryDelivered))
	}
	purged = append(purged, add(store.DeliveryFailed))
	pending := add(store.DeliveryPending)
	e.clock.Set(start.AddDate(0, 0, 20))
	young := add(store.DeliveryDelivered)

	e.clock.Set(start.AddDate(0, 0, 31))
	r := store.NewPurger(e.db, store.PurgerOptions{Batch: 1, WebhookDeliveryDays: e.cfg.Retention.WebhookDeliveryDays})
	res, err := r.RunOnce(context.Background())
	if err != nil || res.Deleted["webhookDeliveries"] != len(purged) {
		t.Fatalf("purge %v %v, want %d deliveries", res.Deleted, err, len(purged))
	}

	e.partnerToken = e.login("partner@example.com", "Secret123") // the first token expired meanwhile
	log := fmt.Sprintf("/v2/organizations/%d/webhook-deliveries", org)
	for _, tc := range []struct {
		query string
		ids   []int64
	}{
		{"", []int64{young, pending}},
		{"?limit=1", []int64{young}},
		{"?status=delivered", []int64{young}},
		{"?status=failed", nil},
		{"?status=pending", []int64{pending}},
	} {
		l := e.do("GET", log+tc.query, e.partnerToken, nil).want(http.StatusOK)
		var got []int64
		for i := range l.list("data") {
			got = append(got, l.id(fmt.Sprintf("data.%d.id", i)))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.ids) {
			t.Errorf("GET %s lists %v, want %v: %s", tc.query, got, tc.ids, l.raw)
		}
		if tc.query == "" && l.num("metadata.count") != 2 {
			t.Errorf("count %v, want 2: %s", l.num("metadata.count"), l.raw)
		}
	}
	for _, id := range purged {
		e.do("POST", fmt.Sprintf("%s/%d/redeliver", log, id), e.partnerToken, nil).
			wantError(http.StatusNotFound, nameNotFound, fmt.Sprintf("delivery %d", id))
	}
	red := e.do("POST", fmt.Sprintf("%s/%d/redeliver", log, young), e.partnerToken, nil).want(http.StatusCreated)
	if red.id("data.redeliveryOf") != young || red.str("data.body.type") != "event" {
		t.Fatalf("redelivery of a kept delivery %s", red.raw)
	}
}

// TestDeliveriesCarrySurfsightSignature checks X-Surfsight-Signature the
// way a receiver written for the public contract does: HMAC-SHA512 keyed
// with the ssoSecret POST /organizations showed, over the body followed by
// the URL as configured, in hex. An organization without an ssoSecret gets
// no such header.
func TestDeliveriesCarrySurfsightSignature(t *testing.T) {
	t.Parallel()
	e := newEnv(t, allowPrivate)
	e.startDispatcher()
	org := e.newOrg(e.partnerToken, "Fleet & Co")
	dev := e.addDevice(org.id, 1)
	rc := newHookReceiver(t, http.StatusOK)
	url := rc.srv.URL + "/events?key=k1&b=%2F"
	r := e.do("POST", fmt.Sprintf("/v2/organizations/%d/webhook-settings", org.id), e.partnerToken,
		map[string]any{"eventWebhookUrl": []string{url}, "allowInsecureWebhookUrls": true}).want(http.StatusOK)
	secret := r.str("data.webhookSecret")

	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		return tx.Emit(store.Message{Kind: store.MessageEvent, OrganizationID: org.id, IMEI: dev,
			Event: &store.EventFact{ID: 5, Type: "accident", Time: e.clock.Now(), Metadata: "été"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs, bodies := rc.wait(t, 1)
	m := hmac.New(sha512.New, []byte(org.secret))
	m.Write(bodies[0])
	m.Write([]byte(url))
	if got, want := reqs[0].Header.Get("X-Surfsight-Signature"), hex.EncodeToString(m.Sum(nil)); got != want {
		t.Fatalf("X-Surfsight-Signature = %q, want %q", got, want)
	}
	if err := webhooks.Verify(secret, reqs[0].Header, bodies[0], e.clock.Now(), 5*time.Minute); err != nil {
		t.Fatalf("the Standard Webhooks signature no longer verifies: %v", err)
	}
	// An organization no partner created through the API has no ssoSecret.
	var bare int64
	err = e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		o, err := tx.CreateOrganization(e.partnerID, "Imported", nil)
		if o != nil {
			bare = o.ID
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	bareDev := e.addDevice(bare, 2)
	e.do("POST", fmt.Sprintf("/v2/organizations/%d/webhook-settings", bare), e.partnerToken,
		map[string]any{"eventWebhookUrl": []string{rc.srv.URL + "/bare"}, "allowInsecureWebhookUrls": true}).want(http.StatusOK)
	err = e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		return tx.Emit(store.Message{Kind: store.MessageEvent, OrganizationID: bare, IMEI: bareDev,
			Event: &store.EventFact{ID: 6, Type: "accident", Time: e.clock.Now()}})
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ = rc.wait(t, 2)
	if h, ok := reqs[1].Header["X-Surfsight-Signature"]; ok {
		t.Fatalf("an organization without an ssoSecret got X-Surfsight-Signature %q", h)
	}
}

// TestRedeliverRefusesPendingDelivery: a delivery is redelivered once it
// finished, and not again while that copy is pending; every refusal is a
// 409 naming the delivery and its status, and queues nothing.
func TestRedeliverRefusesPendingDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, allowPrivate)
	e.startDispatcher()
	org := e.addOrg(e.partnerID, "Fleet")
	dev := e.addDevice(org, 1)
	rc := newHookReceiver(t, http.StatusOK)
	e.do("POST", fmt.Sprintf("/v2/organizations/%d/webhook-settings", org), e.partnerToken,
		map[string]any{"eventWebhookUrl": []string{rc.srv.URL + "/events"}, "allowInsecureWebhookUrls": true}).want(http.StatusOK)
	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		return tx.Emit(store.Message{Kind: store.MessageEvent, OrganizationID: org, IMEI: dev,
			Event: &store.EventFact{ID: 5, Type: "accident", Time: e.clock.Now()}})
	})
	if err != nil {
		t.Fatal(err)
	}
	log := fmt.Sprintf("/v2/organizations/%d/webhook-deliveries", org)
	storetest.Eventually(t, "the delivery logged as delivered", 2*time.Minute, 5*time.Millisecond, func() bool {
		return e.do("GET", log+"?status=delivered", e.partnerToken, nil).want(http.StatusOK).num("metadata.count") == 1
	})
	first := e.do("GET", log, e.partnerToken, nil).want(http.StatusOK).id("data.0.id")

	// From now on the receiver fails, and the test clock does not move, so
	// the redelivery stays pending.
	rc.mu.Lock()
	rc.status = http.StatusInternalServerError
	rc.mu.Unlock()
	redo := func(id int64) *response {
		return e.do("POST", fmt.Sprintf("%s/%d/redeliver", log, id), e.partnerToken, nil)
	}
	copyID := redo(first).want(http.StatusCreated).id("data.id")
	rc.wait(t, 2)

	tests := []struct {
		name string
		id   int64
		want string
	}{
		{"finished, with a pending redelivery", first, fmt.Sprintf("delivery %d is delivered: its message is already queued again as pending delivery %d", first, copyID)},
		{"pending", copyID, fmt.Sprintf("delivery %d is pending", copyID)},
	}
	for _, tc := range tests {
		for range 2 {
			redo(tc.id).wantError(http.StatusConflict, nameConflict, tc.want)
		}
	}
	if n := e.do("GET", log, e.partnerToken, nil).want(http.StatusOK).num("metadata.count"); n != 2 {
		t.Fatalf("the delivery log holds %v deliveries, want the original and one redelivery", n)
	}
	if n := e.do("GET", log+"?status=pending", e.partnerToken, nil).want(http.StatusOK).num("metadata.count"); n != 1 {
		t.Fatalf("%v deliveries pending, want 1", n)
	}
}
