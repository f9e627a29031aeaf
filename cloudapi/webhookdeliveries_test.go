package cloudapi

import (
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

// wait waits up to five seconds until the receiver got n deliveries.
func (h *hookReceiver) wait(t *testing.T, n int) ([]*http.Request, [][]byte) {
	t.Helper()
	timeout := time.NewTimer(5 * time.Second)
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
	e := newEnv(t, allowPrivate)
	e.startDispatcher()
	org := e.addOrg(e.partnerID, "Fleet")
	dev := e.addDevice(org, 1)
	rc := newHookReceiver(t, http.StatusOK)
	r := e.do("POST", fmt.Sprintf("/v2/organizations/%d/webhook-settings", org), e.partnerToken,
		map[string]any{"eventWebhookUrl": []string{rc.srv.URL + "/events"}}).want(http.StatusOK)
	secret := r.str("data.webhookSecret")

	err := e.db.Update(store.Actor{Source: "test"}, func(tx *store.Tx) error {
		return tx.Emit(store.Message{Kind: store.MessageEvent, OrganizationID: org, IMEI: dev},
			map[string]any{"id": 5, "serialNumber": dev, "eventType": "accident", "time": e.clock.Now().Unix()})
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
	storetest.Eventually(t, "the delivery logged as delivered", 5*time.Second, 5*time.Millisecond, func() bool {
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
	e.db.Update(store.Actor{Source: "test"}, func(tx *store.Tx) error {
		return tx.Emit(store.Message{Kind: store.MessageEvent, OrganizationID: org, IMEI: dev}, map[string]any{"id": 6, "eventType": "accident"})
	})
	rc.wait(t, 3)
	eps := fmt.Sprintf("/v2/organizations/%d/webhook-endpoints", org)
	var ep *response
	storetest.Eventually(t, "the endpoint disabled after 410", 5*time.Second, 5*time.Millisecond, func() bool {
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
