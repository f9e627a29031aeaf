// Package testshared keeps one server for all the tests of a test binary:
// started by the first test that needs it, stopped after the last one. It
// is for servers that take seconds to start and that tests can share, each
// in a space of its own (a database, a bucket): store/pgtest's PostgreSQL
// and store/blob/s3test's S3 server. Build keeps a program of the module
// the same way, built for the tests that run it as a child process.
package testshared

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// Stopper is a running server.
type Stopper interface {
	Stop() error
}

// Server is the server of a test binary. Its zero value with Start set is
// ready to use; a package keeps one in a variable.
type Server[S Stopper] struct {
	// Start starts a server; it has Timeout to do so.
	Start   func(ctx context.Context) (S, error)
	Timeout time.Duration

	once    sync.Once
	server  S
	started bool
	err     error
}

// Get returns the server, starting it on first use; tb fails when it could
// not be started, and so does every later test that asks for it.
func (s *Server[S]) Get(tb testing.TB) S {
	tb.Helper()
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
		defer cancel()
		s.server, s.err = s.Start(ctx)
		s.started = s.err == nil
	})
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.server
}

// Stop stops the server if one was started. It is called once the tests
// are done, not while one of them may still use the server.
func (s *Server[S]) Stop() error {
	if !s.started {
		return nil
	}
	s.started = false
	return s.server.Stop()
}

// Main runs the tests of m, then each of stops, and exits: the TestMain of
// a package whose tests share servers. A stop that fails fails the run.
func Main(m *testing.M, stops ...func() error) {
	os.Exit(StopAll(m.Run(), stops...))
}

// StopAll runs each of stops after the tests, which ended with the exit
// code code, and returns the code to exit with: code, or 1 when the tests
// passed and a stop failed, its error written to standard error. For a
// TestMain that does more than Main.
func StopAll(code int, stops ...func() error) int {
	for _, stop := range stops {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}
