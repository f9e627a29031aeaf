package webhooks

import (
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// The in-memory schedule of pending deliveries, rebuilt from the store's
// queue at start and whenever the queue changes outside the dispatcher. It
// is partitioned by endpoint (organization and URL), so a slow or dead URL
// holds back only its own deliveries, and within an endpoint by device, so
// a device's messages reach a URL in order: only the head of a device's
// chain is ever attempted.

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
	items []item
	busy  bool // the head is being attempted
}

// endpoint is the schedule of one endpoint.
type endpoint struct {
	key          epKey
	disabled     bool
	failures     int
	blockedUntil time.Time
	inflight     int
	chains       map[string]*chain
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
		ep = &endpoint{key: k, chains: map[string]*chain{}}
		q.endpoints[k] = ep
	}
	return ep
}

// add appends a pending delivery to its device's chain.
func (q *queue) add(e store.QueueEntry) {
	ep := q.endpoint(epKey{e.OrganizationID, e.URL})
	c := ep.chains[e.IMEI]
	if c == nil {
		c = &chain{}
		ep.chains[e.IMEI] = c
	}
	c.items = append(c.items, item{id: e.DeliveryID, next: e.NextAttemptAt, created: e.CreatedAt})
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
		for ep.inflight < limit && free > 0 {
			imei, c := ep.oldestDue(now)
			if c == nil {
				break
			}
			c.busy = true
			ep.inflight++
			free--
			out = append(out, job{key: ep.key, imei: imei, id: c.items[0].id})
		}
	}
	return out
}

// oldestDue returns the idle chain whose due head is the oldest delivery.
func (ep *endpoint) oldestDue(now time.Time) (string, *chain) {
	var best *chain
	var bestIMEI string
	for imei, c := range ep.chains {
		if c.busy || len(c.items) == 0 || c.items[0].next.After(now) {
			continue
		}
		if best == nil || c.items[0].id < best.items[0].id {
			best, bestIMEI = c, imei
		}
	}
	return bestIMEI, best
}

// nextWake is the earliest time something not yet due becomes due; zero
// when nothing waits on time.
func (q *queue) nextWake(now time.Time) time.Time {
	var t time.Time
	earlier := func(c time.Time) {
		if c.After(now) && (t.IsZero() || c.Before(t)) {
			t = c
		}
	}
	for _, ep := range q.endpoints {
		if ep.disabled {
			continue
		}
		if ep.blockedUntil.After(now) {
			earlier(ep.blockedUntil)
			continue
		}
		for _, c := range ep.chains {
			if !c.busy && len(c.items) > 0 {
				earlier(c.items[0].next)
			}
		}
	}
	return t
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
	c := ep.chains[r.job.imei]
	if c != nil {
		c.busy = false
		switch r.kind {
		case resultDone:
			for i, it := range c.items {
				if it.id == r.job.id {
					c.items = append(c.items[:i], c.items[i+1:]...)
					q.depth--
					break
				}
			}
		case resultRetry:
			for i := range c.items {
				if c.items[i].id == r.job.id {
					c.items[i].next = r.next
				}
			}
		}
		if len(c.items) == 0 {
			delete(ep.chains, r.job.imei)
		}
	}
	if ep.disabled {
		for imei, c := range ep.chains {
			if !c.busy {
				q.depth -= len(c.items)
				delete(ep.chains, imei)
			}
		}
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
