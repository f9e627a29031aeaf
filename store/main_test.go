package store_test

import (
	"testing"

	"github.com/fleetcam/fleetcam/store/pgtest"
)

// TestMain stops the PostgreSQL server the store suite's postgres subtests
// start (storetest.Run runs each test once per engine).
func TestMain(m *testing.M) { pgtest.Main(m) }
