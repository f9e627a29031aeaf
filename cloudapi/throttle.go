package cloudapi

import (
	"container/list"
	"sync"
	"time"
)

// attemptThrottle brakes guessing: every key (an account or a client
// address) has free attempts; past them each attempt opens a wait before
// the next, twice as long each time up to ceiling. An attempt counts when it
// is admitted, before its outcome is known, so that many attempts sent at
// once cannot all slip through; a success refunds it or frees the key.
// The keys remembered are bounded: the least recently seen go first.
type attemptThrottle struct {
	free       int
	initial    time.Duration
	ceiling    time.Duration
	maxEntries int
	now        func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element // of *attempts
	order   *list.List               // least recently seen at the front
}

// attempts is the record of one key.
type attempts struct {
	key   string
	count int
	// until is when the next attempt is allowed.
	until time.Time
	seen  time.Time
}

func newAttemptThrottle(free int, initial, ceiling time.Duration, maxEntries int, now func() time.Time) *attemptThrottle {
	return &attemptThrottle{free: free, initial: initial, ceiling: ceiling, maxEntries: max(maxEntries, 1), now: now,
		entries: map[string]*list.Element{}, order: list.New()}
}

// admit counts an attempt for key, or reports how long key must still
// wait. engaged is true for the attempt that used up the free ones, so the
// brake is reported once per key, not once per refusal.
func (t *attemptThrottle) admit(key string) (wait time.Duration, engaged bool) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.get(key, now)
	if now.Before(a.until) {
		return a.until.Sub(now), false
	}
	a.count++
	if a.count >= t.free {
		a.until = now.Add(t.backoff(a.count - t.free))
	}
	return 0, a.count == t.free
}

// backoff is the wait after the n-th attempt past the free ones (from 0).
func (t *attemptThrottle) backoff(n int) time.Duration {
	d := t.initial
	for i := 0; i < n && d < t.ceiling; i++ {
		d *= 2
	}
	return min(d, t.ceiling)
}

// get returns key's record, fresh if it was never seen or was forgotten.
// A record is forgotten once it has been quiet for the ceiling after its
// last attempt and its last wait.
func (t *attemptThrottle) get(key string, now time.Time) *attempts {
	if el, found := t.entries[key]; found {
		a := el.Value.(*attempts)
		if now.Sub(a.until) <= t.ceiling || now.Sub(a.seen) <= t.ceiling {
			a.seen = now
			t.order.MoveToBack(el)
			return a
		}
		t.order.Remove(el)
		delete(t.entries, key)
	}
	for len(t.entries) >= t.maxEntries {
		oldest := t.order.Front()
		t.order.Remove(oldest)
		delete(t.entries, oldest.Value.(*attempts).key)
	}
	a := &attempts{key: key, seen: now}
	t.entries[key] = t.order.PushBack(a)
	return a
}

// forget frees key after a success: its next attempts are free again.
func (t *attemptThrottle) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, found := t.entries[key]; found {
		t.order.Remove(el)
		delete(t.entries, key)
	}
}

// refund takes back an attempt that turned out not to be a failed guess
// (a success, or one never checked), and the wait it opened: past the free
// attempts only one is admitted per wait, so the open wait is its own. The
// failures before it stay counted: a client address is shared by the
// legitimate and the guessing, so its successes do not wipe its failures.
func (t *attemptThrottle) refund(key string) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, found := t.entries[key]; found {
		a := el.Value.(*attempts)
		a.count = max(a.count-1, 0)
		if a.until.After(now) {
			a.until = now
		}
	}
}

// len is how many keys are remembered.
func (t *attemptThrottle) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}
