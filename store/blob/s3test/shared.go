package s3test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/internal/testshared"
	"github.com/fleetcam/fleetcam/store/blob"
)

// One server serves every test of a test binary: starting one takes a few
// seconds, a bucket on it milliseconds.
var shared = testshared.Server[*Server]{Start: Start, Timeout: 3 * time.Minute}

// buckets counts the buckets made on the shared server, to name them.
var buckets atomic.Int64

// Main runs the tests of a package that uses the shared server and stops
// the server after them: call it from the package's TestMain.
func Main(m *testing.M) { testshared.Main(m, StopShared) }

// StopShared stops the test binary's server, if one was started: for a
// TestMain that does more than Main (testshared.StopAll).
func StopShared() error { return shared.Stop() }

// Shared returns the test binary's server, starting it on first use. A
// package that uses it stops it through Main.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	return shared.Get(tb)
}

// Bucket creates a new, empty bucket on the shared server for tb and
// returns the settings of a store in it.
func Bucket(tb testing.TB) blob.S3Options {
	tb.Helper()
	s := Shared(tb)
	o := s.Options(fmt.Sprintf("t%d-%d", os.Getpid(), buckets.Add(1)))
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
