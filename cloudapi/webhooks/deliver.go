package webhooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Result kinds of an attempt, as the schedule sees them.
const (
	resultDone    = iota // delivered, given up or no longer pending: leaves the chain
	resultRetry          // stays at the head of its chain until next
	resultAborted        // the dispatcher stopped mid-attempt; nothing recorded
)

// result is what a worker reports after an attempt.
type result struct {
	job      job
	kind     int
	next     time.Time
	endpoint *store.WebhookEndpoint
}

// outcome classifies an HTTP exchange.
type outcome int

const (
	outcomeSuccess         outcome = iota // 2xx
	outcomeGone                           // 410: disable the endpoint
	outcomeEndpointFailure                // unreachable, timed out, 429 or 503: hold the whole endpoint back
	outcomeFailure                        // any other answer: retry this delivery
)

// exchange is one HTTP attempt as seen by the sender.
type exchange struct {
	status     int
	retryAfter time.Duration // 0: none given
	err        string
	outcome    outcome
}

// work runs one delivery worker.
func (d *Dispatcher) work(ctx context.Context) {
	defer d.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-d.jobs:
			if r := d.attempt(ctx, j); r != nil {
				d.results <- *r
			}
		}
	}
}

// attempt makes one delivery attempt and hands it to the recorder; it
// returns a result itself only when there is nothing to record.
func (d *Dispatcher) attempt(ctx context.Context, j job) *result {
	var del *store.Delivery
	var sec *store.WebhookSecret
	var ssoSalt []byte
	err := d.db.View(ctx, func(tx *store.Tx) error {
		var err error
		if del, err = tx.Delivery(j.id); err != nil {
			return err
		}
		// The organization's SSO salt derives its ssoSecret, which signs
		// X-Surfsight-Signature; an organization without one has none.
		if o, err := tx.Organization(del.OrganizationID); err == nil {
			ssoSalt = o.SSOSalt
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		sec, err = tx.WebhookSecret(del.OrganizationID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) && del == nil {
		return &result{job: j, kind: resultDone} // purged
	}
	if errors.Is(err, store.ErrNotFound) && del.Status == store.DeliveryPending {
		err = d.db.Update(ctx, store.Actor{Source: "webhooks"}, func(tx *store.Tx) error {
			sec, _, err = tx.EnsureWebhookSecret(del.OrganizationID, NewSalt)
			return err
		})
	}
	if err != nil {
		if ctx.Err() != nil {
			return &result{job: j, kind: resultAborted}
		}
		d.log.Error("load webhook delivery", "delivery", j.id, "err", err)
		return &result{job: j, kind: resultRetry, next: d.now().Add(d.cfg.InitialBackoff)}
	}
	if del.Status != store.DeliveryPending {
		return &result{job: j, kind: resultDone}
	}
	start := d.now()
	surfsight := ""
	if len(ssoSalt) > 0 {
		surfsight = SurfsightSignature(SSOSecret(d.key, del.OrganizationID, ssoSalt), del.Body, del.URL)
	}
	x := d.post(ctx, del, start, d.signatures(sec, del.WebhookID, start, del.Body), surfsight)
	if ctx.Err() != nil {
		return &result{job: j, kind: resultAborted}
	}
	d.records <- &attemptRecord{job: j, attempted: del, start: start, end: d.now(), x: x}
	return nil
}

// signatures signs a delivery with the organization's secret, and with the
// previous one while a rotation's grace period lasts.
func (d *Dispatcher) signatures(sec *store.WebhookSecret, id string, ts time.Time, body []byte) string {
	sig, _ := Sign(Secret(d.key, sec.OrganizationID, sec.Salt), id, ts, body)
	if len(sec.PreviousSalt) > 0 && ts.Before(sec.PreviousUntil) {
		prev, _ := Sign(Secret(d.key, sec.OrganizationID, sec.PreviousSalt), id, ts, body)
		sig += " " + prev
	}
	return sig
}

// post sends one signed delivery and classifies the answer; surfsight is
// its X-Surfsight-Signature, or "" for an organization without an ssoSecret.
func (d *Dispatcher) post(ctx context.Context, del *store.Delivery, ts time.Time, signature, surfsight string) exchange {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, del.URL, bytes.NewReader(del.Body))
	if err != nil {
		return exchange{err: "request: " + err.Error(), outcome: outcomeFailure}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "fleetcam-webhooks/2")
	req.Header.Set(HeaderID, del.WebhookID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, signature)
	if surfsight != "" {
		req.Header.Set(HeaderSurfsightSignature, surfsight)
	}
	res, err := d.client.Do(req)
	if err != nil {
		return exchange{err: describe(err), outcome: outcomeEndpointFailure}
	}
	defer res.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(res.Body, 256))
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	x := exchange{status: res.StatusCode, retryAfter: retryAfter(res.Header.Get("Retry-After"), d.now())}
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		x.outcome = outcomeSuccess
		return x
	case res.StatusCode == http.StatusGone:
		x.outcome = outcomeGone
	case res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable:
		x.outcome = outcomeEndpointFailure
	default:
		x.outcome = outcomeFailure
	}
	x.err = "HTTP " + strconv.Itoa(res.StatusCode)
	if res.StatusCode >= 300 && res.StatusCode < 400 {
		x.err += " redirect to " + strconv.Quote(res.Header.Get("Location")) + " not followed"
	}
	if s := strings.TrimSpace(strings.ToValidUTF8(string(snippet), "")); s != "" {
		x.err += ": " + s
	}
	return x
}

// describe turns a transport error into a short reason for the delivery log.
func describe(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, ErrForbiddenTarget):
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			return oe.Err.Error()
		}
		return err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	return err.Error()
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(365*24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// backoff is the wait before retry n (1-based): exponential from
// InitialBackoff, capped at MaxBackoff, with jitter.
func (d *Dispatcher) backoff(n int) time.Duration {
	w := d.cfg.InitialBackoff
	for i := 1; i < n && w < d.cfg.MaxBackoff; i++ {
		w *= 2
	}
	return d.jitter(min(w, d.cfg.MaxBackoff))
}

// wait is how long to hold a delivery back after a failure: the receiver's
// Retry-After when given (at least InitialBackoff, at most MaxRetryAge), else backoff.
func (d *Dispatcher) wait(x exchange, n int) time.Duration {
	if x.retryAfter > 0 {
		return min(max(x.retryAfter, d.cfg.InitialBackoff), d.cfg.MaxRetryAge)
	}
	return d.backoff(n)
}

// observe updates the metrics after a recorded attempt.
func (d *Dispatcher) observe(del *store.Delivery, start time.Time, x exchange, first bool, finished, disabled []store.Delivery) {
	attempt := "success"
	switch {
	case x.status == 0 && x.outcome != outcomeSuccess:
		attempt = "network_error"
	case x.outcome != outcomeSuccess:
		attempt = "http_error"
	}
	d.metrics.attempts.WithLabelValues(store.MetricLabel(del.Type), attempt).Inc()
	if first {
		d.metrics.latency.WithLabelValues(store.MetricLabel(del.Type)).Observe(max(0, start.Sub(del.MessageTime).Seconds()))
	}
	for _, f := range finished {
		o := outcomeGivenUp
		if f.Status == store.DeliveryDelivered {
			o = outcomeDelivered
		}
		d.metrics.deliveries.WithLabelValues(store.MetricLabel(f.Type), o).Inc()
	}
	for _, f := range disabled {
		d.metrics.deliveries.WithLabelValues(store.MetricLabel(f.Type), outcomeDisabled).Inc()
	}
	if x.outcome != outcomeSuccess {
		d.log.Debug("webhook attempt failed", "delivery", del.ID, "url", del.URL, "err", x.err)
	}
}
