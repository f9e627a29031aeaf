package eventmail

import (
	"testing"

	"github.com/fleetcam/fleetcam/store/pgtest"
)

// TestMain stops the PostgreSQL server these tests start when they run on
// that engine (FLEETCAM_TEST_ENGINE=postgres, as make test does).
func TestMain(m *testing.M) { pgtest.Main(m) }
