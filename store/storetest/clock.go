// Package storetest holds what tests across fleetcam share: stores opened
// for a test (Open), a runner that runs a test once per storage engine
// (Run), an injected clock that only moves when a test says so, so that
// expiries, backoffs and retention are tested without sleeping, and a wait
// for conditions nothing signals, bounded by a deadline.
//
// An engine joins the runner by adding itself to Engines: a name (the
// subtest name Run gives it) and a function that opens an empty store of
// that engine for a test and closes it when the test ends. The store
// package's own suite then runs against it through Run, and
// FLEETCAM_TEST_ENGINE=<name> makes every other package's tests use it.
package storetest

import (
	"sync"
	"time"
)

// Clock is a settable clock, safe for concurrent use. Its Now method is the
// store.Clock and the func() time.Time every fleetcam component accepts.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
