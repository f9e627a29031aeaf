package storetest

import (
	"testing"
	"time"
)

// Eventually checks cond every interval until it holds, and fails the test
// naming what once within has passed without it holding. It is for
// conditions nothing signals (a row in the store, a field of an API
// answer); wait on a channel where the code under test offers one.
func Eventually(tb testing.TB, what string, within, every time.Duration, cond func() bool) {
	tb.Helper()
	if cond() {
		return
	}
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return
			}
		case <-deadline.C:
			if cond() {
				return
			}
			tb.Fatalf("timed out after %v waiting for %s", within, what)
			return
		}
	}
}
