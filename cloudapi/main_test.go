package cloudapi

import (
	"fmt"
	"os"
	"testing"

	"github.com/fleetcam/fleetcam/internal/testshared"
	"github.com/fleetcam/fleetcam/store/blob/s3test"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// TestMain checks, after a run of every test, that each routed operation of
// the reference contract had a conforming 2xx answer (contract_test.go), and
// stops the PostgreSQL server that the API tests start when they run on that
// engine (FLEETCAM_TEST_ENGINE=postgres, as make test does) and the S3 server
// of the tests of media in a bucket.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := checkContractCoverage(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(testshared.StopAll(code, pgtest.StopShared, s3test.StopShared))
}
