package storetest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message instead
// of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	rec := &fatalRecorder{TB: t}
	Eventually(rec, "the third check", 5*time.Second, time.Millisecond, func() bool { return calls.Add(1) >= 3 })
	if rec.msg != "" || calls.Load() != 3 {
		t.Fatalf("after %d checks: %q", calls.Load(), rec.msg)
	}
}

func TestEventuallyFailsAtTheDeadline(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	start := time.Now()
	Eventually(rec, "a condition that never holds", 30*time.Millisecond, time.Millisecond, func() bool { return false })
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Fatalf("gave up after %v, before the deadline", waited)
	}
	if !strings.Contains(rec.msg, "timed out after 30ms waiting for a condition that never holds") {
		t.Fatalf("failure message %q", rec.msg)
	}
}
