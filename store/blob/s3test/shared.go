package s3test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store/blob"
)

// One server serves every test of a test binary: starting one takes a few
// seconds, a bucket on it milliseconds.
var shared struct {
	once   sync.Once
	server *Server
	err    error
	next   atomic.Int64
}

// Main runs the tests of a package that uses the shared server and stops
// the server after them: call it from the package's TestMain.
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// StopShared stops the test binary's server, if one was started: for a
// TestMain that does more than Main.
func StopShared() {
	if shared.server != nil {
		if err := shared.server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}

// Shared returns the test binary's server, starting it on first use. A
// package that uses it stops it through Main.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		shared.server, shared.err = Start(ctx)
	})
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.server
}

// Bucket creates a new, empty bucket on the shared server for tb and
// returns the settings of a store in it.
func Bucket(tb testing.TB) blob.S3Options {
	tb.Helper()
	s := Shared(tb)
	o := s.Options(fmt.Sprintf("t%d-%d", os.Getpid(), shared.next.Add(1)))
	st, err := blob.NewS3(o)
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.CreateBucket(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return o
}

// Store is a store in a new bucket of the shared server (Bucket).
func Store(tb testing.TB) *blob.S3 {
	tb.Helper()
	st, err := blob.NewS3(Bucket(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return st
}
