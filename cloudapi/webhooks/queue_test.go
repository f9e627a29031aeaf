package webhooks

import (
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

func TestQueuePick(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a, b := epKey{1, "https://a.example.com"}, epKey{1, "https://b.example.com"}
	entry := func(k epKey, imei string, id int64, due time.Duration) store.QueueEntry {
		return store.QueueEntry{OrganizationID: k.org, URL: k.url, IMEI: imei, DeliveryID: id, NextAttemptAt: t0.Add(due), CreatedAt: t0}
	}
	ids := func(js []job) []int64 {
		var out []int64
		for _, j := range js {
			out = append(out, j.id)
		}
		return out
	}
	q := newQueue()
	for _, e := range []store.QueueEntry{
		entry(a, "x", 1, 0), entry(a, "x", 2, 0), entry(a, "y", 3, time.Minute), entry(a, "z", 4, 0),
		entry(a, "w", 5, 0), entry(b, "x", 6, 0),
	} {
		q.add(e)
	}
	if q.depth != 6 {
		t.Fatalf("depth %d", q.depth)
	}
	// Two per endpoint, oldest due first, one per device; y is not due.
	got := q.pick(t0, 10, 2)
	if len(got) != 3 {
		t.Fatalf("picked %v", got)
	}
	var atA []int64
	for _, j := range got {
		if j.key == a {
			atA = append(atA, j.id)
		}
	}
	if len(atA) != 2 || atA[0] != 1 || atA[1] != 4 {
		t.Fatalf("at a picked %v, want [1 4]", atA)
	}
	if more := q.pick(t0, 10, 2); len(more) != 0 {
		t.Fatalf("picked beyond the endpoint limit: %v", ids(more))
	}
	// x's first delivery is done: x's second is the oldest due head.
	q.finish(result{job: job{a, "x", 1}, kind: resultDone})
	if got := ids(q.pick(t0, 10, 2)); len(got) != 1 || got[0] != 2 {
		t.Fatalf("after finishing 1 picked %v, want [2]", got)
	}
	// The endpoint fails: blocked until a minute later, then one at a time.
	q.finish(result{job: job{a, "z", 4}, kind: resultRetry, next: t0.Add(time.Minute),
		endpoint: &store.WebhookEndpoint{Failures: 1, BlockedUntil: t0.Add(time.Minute)}})
	if got := q.pick(t0.Add(30*time.Second), 10, 2); len(got) != 0 {
		t.Fatalf("picked %v from a blocked endpoint", ids(got))
	}
	if w := q.nextWake(t0.Add(30 * time.Second)); !w.Equal(t0.Add(time.Minute)) {
		t.Fatalf("next wake %v", w)
	}
	q.finish(result{job: job{a, "x", 2}, kind: resultDone})
	if got := ids(q.pick(t0.Add(time.Minute), 10, 2)); len(got) != 1 || got[0] != 3 {
		t.Fatalf("probe %v, want [3] alone", got)
	}
	// 410: everything idle at the endpoint goes.
	q.finish(result{job: job{a, "y", 3}, kind: resultDone, endpoint: &store.WebhookEndpoint{Disabled: true}})
	if q.depth != 1 || q.oldest() != t0 {
		t.Fatalf("after disabling a: depth %d", q.depth)
	}
}
