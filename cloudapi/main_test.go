package cloudapi

import (
	"os"
	"testing"

	"github.com/fleetcam/fleetcam/store/pgtest"
)

// TestMain stops the PostgreSQL server that the API tests start when they
// run on that engine (FLEETCAM_TEST_ENGINE=postgres, as make test does).
func TestMain(m *testing.M) {
	code := m.Run()
	reportContract()
	pgtest.StopShared()
	os.Exit(code)
}
