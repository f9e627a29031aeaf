package webhooks

import (
	"container/heap"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// The in-memory schedule of pending deliveries, rebuilt from the store's
// queue at start and whenever the queue changes outside the dispatcher. It
// is partitioned by endpoint (organization and URL), so a slow or dead URL
// holds back only its own deliveries, and within an endpoint by device, so
// a device's messages reach a URL in order: only the head of a device's
// chain is ever attempted. Each endpoint keeps its idle chains in a heap by
// the head's due time, so picking the next attempt does not scan every device.

// epKey names an endpoint.
type epKey struct {
	org int64
	url string
}

// item is one pending delivery.
type item struct {
	id      int64
	next    time.Time
	created time.Time
}

// chain is one device's pending deliveries to one endpoint, oldest first.
type chain struct {
	imei   string
	items  []item
	busy   bool // the head is being attempted
	queued bool // in one of its endpoint's heaps
}

// chainHeap is a heap of idle chains; byDue orders by the head's due time,
// otherwise by the head's id (age).
type chainHeap struct {
	byDue  bool
	chains []*chain
}

func (h *chainHeap) Len() int { return len(h.chains) }
func (h *chainHeap) Less(i, j int) bool {
	a, b := h.chains[i].items[0], h.chains[j].items[0]
	if h.byDue && !a.next.Equal(b.next) {
		return a.next.Before(b.next)
	}
	return a.id < b.id
}
func (h *chainHeap) Swap(i, j int) { h.chains[i], h.chains[j] = h.chains[j], h.chains[i] }
func (h *chainHeap) Push(x any)    { h.chains = append(h.chains, x.(*chain)) }
func (h *chainHeap) Pop() any {
	c := h.chains[len(h.chains)-1]
	h.chains = h.chains[:len(h.chains)-1]
	return c
}
func (h *chainHeap) top() *chain { return h.chains[0] }

// endpoint is the schedule of one endpoint.
type endpoint struct {
	key          epKey
	disabled     bool
	failures     int
	blockedUntil time.Time
	inflight     int
	chains       map[string]*chain
	// waiting holds idle chains by due time; due holds those already due, oldest first.
	waiting chainHeap
	due     chainHeap
}

// job is one attempt handed to a worker.
type job struct {
	key  epKey
	imei string
	id   int64
}

// queue holds every endpoint's schedule.
type queue struct {
	endpoints map[epKey]*endpoint
	depth     int
}

func newQueue() *queue { return &queue{endpoints: map[epKey]*endpoint{}} }

func (q *queue) endpoint(k epKey) *endpoint {
	ep := q.endpoints[k]
	if ep == nil {
		ep = &endpoint{key: k, chains: map[string]*chain{}, waiting: chainHeap{byDue: true}}
		q.endpoints[k] = ep
	}
	return ep
}

// chain returns the chain of imei, creating it.
func (ep *endpoint) chain(imei string) *chain {
	c := ep.chains[imei]
	if c == nil {
		c = &chain{imei: imei}
		ep.chains[imei] = c
	}
	return c
}

// idle puts a chain that is not being attempted into the waiting heap.
func (ep *endpoint) idle(c *chain) {
	if !c.busy && !c.queued && len(c.items) > 0 {
		c.queued = true
		heap.Push(&ep.waiting, c)
	}
}

// promote moves the chains due at now from waiting to due.
func (ep *endpoint) promote(now time.Time) {
	for ep.waiting.Len() > 0 && !ep.waiting.top().items[0].next.After(now) {
		heap.Push(&ep.due, heap.Pop(&ep.waiting))
	}
}

// add appends a pending delivery to its device's chain.
func (q *queue) add(e store.QueueEntry) {
	ep := q.endpoint(epKey{e.OrganizationID, e.URL})
	c := ep.chain(e.IMEI)
	c.items = append(c.items, item{id: e.DeliveryID, next: e.NextAttemptAt, created: e.CreatedAt})
	ep.idle(c)
	q.depth++
}

// setState copies an endpoint's stored delivery state.
func (ep *endpoint) setState(s *store.WebhookEndpoint) {
	ep.disabled, ep.failures, ep.blockedUntil = s.Disabled, s.Failures, s.BlockedUntil
}

// pick returns up to free jobs that are due at now, marking them busy. An
// endpoint runs at most perEndpoint attempts at once, one while it is failing.
func (q *queue) pick(now time.Time, free, perEndpoint int) []job {
	var out []job
	for _, ep := range q.endpoints {
		if free == 0 {
			break
		}
		if ep.disabled || ep.blockedUntil.After(now) {
			continue
		}
		limit := perEndpoint
		if ep.failures > 0 {
			limit = 1
		}
		ep.promote(now)
		for ep.inflight < limit && free > 0 && ep.due.Len() > 0 {
			c := heap.Pop(&ep.due).(*chain)
			c.queued, c.busy = false, true
			ep.inflight++
			free--
			out = append(out, job{key: ep.key, imei: c.imei, id: c.items[0].id})
		}
	}
	return out
}

// nextWake is the earliest time something not yet due becomes due; zero
// when nothing waits on time.
func (q *queue) nextWake(now time.Time) time.Time {
	var t time.Time
	for _, ep := range q.endpoints {
		if ep.disabled {
			continue
		}
		var c time.Time
		switch {
		case ep.due.Len() > 0:
			c = ep.blockedUntil
		case ep.waiting.Len() > 0:
			c = later(ep.blockedUntil, ep.waiting.top().items[0].next)
		default:
			continue
		}
		if c.After(now) && (t.IsZero() || c.Before(t)) {
			t = c
		}
	}
	return t
}

func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// markBusy records an attempt in flight (kept across a reload).
func (q *queue) markBusy(j job) {
	ep := q.endpoint(j.key)
	ep.inflight++
	ep.chain(j.imei).busy = true
}

// rebuild refills every endpoint's ready heap from its idle chains.
func (q *queue) rebuild() {
	for _, ep := range q.endpoints {
		ep.waiting.chains, ep.due.chains = nil, nil
		for _, c := range ep.chains {
			c.queued = !c.busy && len(c.items) > 0
			if c.queued {
				ep.waiting.chains = append(ep.waiting.chains, c)
			}
		}
		heap.Init(&ep.waiting)
	}
}

// finish applies an attempt's result to the schedule.
func (q *queue) finish(r result) {
	ep := q.endpoints[r.job.key]
	if ep == nil {
		return
	}
	ep.inflight--
	if r.endpoint != nil {
		ep.setState(r.endpoint)
	}
	if c := ep.chains[r.job.imei]; c != nil {
		c.busy = false
		for i := range c.items {
			if c.items[i].id != r.job.id {
				continue
			}
			switch r.kind {
			case resultDone:
				c.items = append(c.items[:i], c.items[i+1:]...)
				q.depth--
			case resultRetry:
				c.items[i].next = r.next
			}
			break
		}
		if len(c.items) == 0 && !c.queued {
			delete(ep.chains, r.job.imei)
		}
		ep.idle(c)
	}
	if ep.disabled {
		for imei, c := range ep.chains {
			if !c.busy {
				q.depth -= len(c.items)
				delete(ep.chains, imei)
			}
		}
		ep.waiting.chains, ep.due.chains = nil, nil
	}
	if ep.inflight == 0 && len(ep.chains) == 0 {
		delete(q.endpoints, ep.key)
	}
}

// oldest is the creation time of the oldest pending delivery; zero when none.
func (q *queue) oldest() time.Time {
	var t time.Time
	for _, ep := range q.endpoints {
		if ep.disabled {
			continue
		}
		for _, c := range ep.chains {
			if len(c.items) > 0 && (t.IsZero() || c.items[0].created.Before(t)) {
				t = c.items[0].created
			}
		}
	}
	return t
}
