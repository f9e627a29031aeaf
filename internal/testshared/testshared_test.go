package testshared

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// counted is a server that counts its stops.
type counted struct {
	stops   atomic.Int32
	stopErr error
}

func (c *counted) Stop() error {
	c.stops.Add(1)
	return c.stopErr
}

// Tests that ask at once share one start; Stop stops that server once.
func TestOneStartForEveryTest(t *testing.T) {
	var starts atomic.Int32
	srv := &counted{}
	shared := Server[*counted]{Timeout: time.Minute, Start: func(ctx context.Context) (*counted, error) {
		if _, ok := ctx.Deadline(); !ok {
			return nil, errors.New("the start has no deadline")
		}
		starts.Add(1)
		return srv, nil
	}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := shared.Get(t); got != srv {
				t.Errorf("got %p, want %p", got, srv)
			}
		})
	}
	wg.Wait()
	if n := starts.Load(); n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
	if err := shared.Stop(); err != nil || srv.stops.Load() != 1 {
		t.Fatalf("stop: %v, %d stops", err, srv.stops.Load())
	}
	if err := shared.Stop(); err != nil || srv.stops.Load() != 1 {
		t.Fatalf("second stop: %v, %d stops", err, srv.stops.Load())
	}
}

// fatalRecorder records what a test failed with instead of failing.
type fatalRecorder struct {
	testing.TB
	failed string
}

func (f *fatalRecorder) Fatal(args ...any) {
	f.failed = fmt.Sprint(args...)
	runtime.Goexit()
}

// A server that does not start fails every test that asks for it, and
// there is nothing to stop.
func TestFailedStartFailsEveryTest(t *testing.T) {
	starts := 0
	shared := Server[*counted]{Timeout: time.Minute, Start: func(context.Context) (*counted, error) {
		starts++
		return nil, errors.New("initdb: no such file")
	}}
	for i := range 2 {
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			shared.Get(rec)
		}()
		<-done
		if rec.failed != "initdb: no such file" {
			t.Fatalf("test %d failed with %q", i, rec.failed)
		}
	}
	if starts != 1 {
		t.Fatalf("%d starts, want 1", starts)
	}
	if err := shared.Stop(); err != nil {
		t.Fatalf("stop of a server never started: %v", err)
	}
}

// A stop that fails fails the run; every stop is run.
func TestStopAllReportsFailedStops(t *testing.T) {
	ran := 0
	ok := func() error { ran++; return nil }
	bad := func() error { ran++; return errors.New("drop t1_2: database is being accessed by other users") }
	tests := []struct {
		name  string
		code  int
		stops []func() error
		want  int
	}{
		{"tests passed, stops passed", 0, []func() error{ok, ok}, 0},
		{"tests passed, a stop failed", 0, []func() error{bad, ok}, 1},
		{"tests failed, stops passed", 1, []func() error{ok}, 1},
		{"tests failed, a stop failed", 2, []func() error{ok, bad}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ran = 0
			if got := StopAll(tc.code, tc.stops...); got != tc.want || ran != len(tc.stops) {
				t.Fatalf("exit code %d (want %d), %d of %d stops ran", got, tc.want, ran, len(tc.stops))
			}
		})
	}
}
