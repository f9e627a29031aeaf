package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// recordBatch bounds how many attempts one transaction records.
const recordBatch = 256

// attemptRecord is a finished attempt on its way into the store.
type attemptRecord struct {
	job        job
	attempted  *store.Delivery
	start, end time.Time
	x          exchange

	// Set while recording.
	res                result
	finished, disabled []store.Delivery
	first              bool
}

// recorder writes finished attempts down in batches: one transaction, and
// so one fsync, for all the attempts that finished meanwhile, so busy
// webhooks do not crowd out ingest's commits. An attempt not yet recorded
// when fleetcam stops is made again after the restart.
func (d *Dispatcher) recorder(ctx context.Context) {
	defer d.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-d.records:
			batch := []*attemptRecord{r}
		more:
			for len(batch) < recordBatch {
				select {
				case r := <-d.records:
					batch = append(batch, r)
				default:
					break more
				}
			}
			d.recordAll(batch)
		}
	}
}

// recordAll records a batch of attempts and reports their results to the schedule.
func (d *Dispatcher) recordAll(batch []*attemptRecord) {
	err := d.db.Update(context.Background(), store.Actor{Source: "webhooks"}, func(tx *store.Tx) error {
		for _, r := range batch {
			r.res, r.finished, r.disabled, r.first = result{job: r.job, kind: resultDone}, nil, nil, false
			if err := d.recordTx(tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	for _, r := range batch {
		if err != nil {
			d.log.Error("record webhook attempt", "delivery", r.job.id, "err", err)
			r.res = result{job: r.job, kind: resultRetry, next: r.end.Add(d.cfg.InitialBackoff)}
		} else {
			d.observe(r.attempted, r.start, r.x, r.first, r.finished, r.disabled)
		}
		d.results <- r.res // never blocks: at most Workers results are outstanding
	}
}

// recordTx stores one attempt and its consequences: the delivery's status
// or next attempt, the endpoint's state, and on 410 Gone the endpoint
// disabled with what was queued for it.
func (d *Dispatcher) recordTx(tx *store.Tx, r *attemptRecord) error {
	x, end := r.x, r.end
	del, err := tx.Delivery(r.job.id)
	if errors.Is(err, store.ErrNotFound) {
		return nil // given up and purged meanwhile
	}
	if err != nil {
		return err
	}
	if del.Status != store.DeliveryPending {
		return nil // given up meanwhile (endpoint disabled)
	}
	r.first = del.Attempts == 0 && del.RedeliveryOf == 0
	del.RecordAttempt(store.DeliveryAttempt{Time: r.start, StatusCode: x.status, Error: x.err,
		DurationMS: end.Sub(r.start).Milliseconds()})
	ep, err := tx.WebhookEndpoint(del.OrganizationID, del.URL)
	if err != nil {
		return err
	}
	switch x.outcome {
	case outcomeSuccess:
		del.Status, del.FinishedAt = store.DeliveryDelivered, end
		ep.Failures, ep.BlockedUntil, ep.LastSuccessAt = 0, time.Time{}, end
		r.finished = append(r.finished, *del)
	case outcomeGone:
		del.Status, del.FinishedAt = store.DeliveryFailed, end
		del.LastError = "HTTP 410 Gone: the endpoint is disabled until its URL is saved again"
		if err := tx.PutDelivery(del); err != nil {
			return err
		}
		r.disabled = append(r.disabled, *del)
		rest, err := tx.DisableWebhookEndpoint(del.OrganizationID, del.URL,
			fmt.Sprintf("answered 410 Gone at %s", end.UTC().Format(time.RFC3339)))
		if err != nil {
			return err
		}
		r.disabled = append(r.disabled, rest...)
		r.res.endpoint, err = tx.WebhookEndpoint(del.OrganizationID, del.URL)
		return err
	case outcomeEndpointFailure:
		ep.Failures++
		ep.LastFailureAt, ep.LastError = end, x.err
		ep.BlockedUntil = end.Add(d.wait(x, ep.Failures))
		del.NextAttemptAt = ep.BlockedUntil
	case outcomeFailure:
		ep.LastFailureAt, ep.LastError = end, x.err
		del.NextAttemptAt = end.Add(d.wait(x, del.Attempts))
	}
	if del.Status == store.DeliveryPending {
		if !end.Before(del.CreatedAt.Add(d.cfg.MaxRetryAge)) {
			del.Status, del.FinishedAt = store.DeliveryFailed, end
			del.LastError = "given up after " + d.cfg.MaxRetryAge.String() + ": " + x.err
			r.finished = append(r.finished, *del)
		} else {
			r.res.kind, r.res.next = resultRetry, del.NextAttemptAt
		}
	}
	if err := tx.PutDelivery(del); err != nil {
		return err
	}
	r.res.endpoint = ep
	return tx.PutWebhookEndpoint(ep)
}
