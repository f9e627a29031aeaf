package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
)

// receiver is a partner's webhook endpoint on loopback: it verifies every
// delivery's signature and records when each event arrived.
type receiver struct {
	srv *http.Server
	url string

	mu      sync.Mutex
	secret  string
	arrived map[eventKey]time.Time
	ids     map[eventKey]string // the webhook-id each event first came with
	mixed   int                 // events that came again under another webhook-id
	bad     int
	dupes   int
	other   int
}

// eventKey names an event by device and second: the bench's devices send
// at most one event per second each.
type eventKey struct {
	imei string
	sec  int64
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{arrived: map[eventKey]time.Time{}, ids: map[eventKey]string{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	r.url = fmt.Sprintf("http://%s/webhooks", ln.Addr())
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) close() { r.srv.Close() }

func (r *receiver) setSecret(s string) {
	r.mu.Lock()
	r.secret = s
	r.mu.Unlock()
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := webhooks.Verify(r.secret, req.Header, body, now, 5*time.Minute); err != nil {
		r.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var m struct {
		Type string `json:"type"`
		Data struct {
			SerialNumber string `json:"serialNumber"`
			Time         int64  `json:"time"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &m) != nil || m.Type != "event" {
		r.other++
		w.WriteHeader(http.StatusNoContent)
		return
	}
	k := eventKey{m.Data.SerialNumber, m.Data.Time}
	id := req.Header.Get(webhooks.HeaderID)
	if _, ok := r.arrived[k]; ok {
		r.dupes++
		if r.ids[k] != id {
			r.mixed++
		}
	} else {
		r.arrived[k], r.ids[k] = now, id
	}
	w.WriteHeader(http.StatusNoContent)
}

// arrivedAt returns when the event of k arrived.
func (r *receiver) arrivedAt(k eventKey) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.arrived[k]
	return t, ok
}

// counts returns the deliveries that failed verification, repeated events
// and deliveries that were not events.
func (r *receiver) counts() (bad, dupes, other int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad, r.dupes, r.other
}

// mixedIDs counts the events that came again under another webhook-id
// than the first time.
func (r *receiver) mixedIDs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mixed
}

// subscribeReceiver points the organization's event webhook at rcv.
func subscribeReceiver(ctx context.Context, api *apiClient, orgID int64, rcv *receiver) error {
	var out struct {
		Data struct {
			WebhookSecret string `json:"webhookSecret"`
		} `json:"data"`
	}
	status, err := api.call(ctx, http.MethodPost, fmt.Sprintf("/v2/organizations/%d/webhook-settings", orgID),
		map[string]any{"eventWebhookUrl": []string{rcv.url}, "allowInsecureWebhookUrls": true}, &out)
	if err != nil {
		return err
	}
	if status != http.StatusOK || out.Data.WebhookSecret == "" {
		return fmt.Errorf("webhook settings answered %d without a secret", status)
	}
	rcv.setSecret(out.Data.WebhookSecret)
	return nil
}
