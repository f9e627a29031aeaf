package main

import (
	"testing"

	"github.com/fleetcam/fleetcam/internal/testshared"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// TestMain stops the PostgreSQL server the tests share and removes the
// fleetcam binary they built.
func TestMain(m *testing.M) {
	testshared.Main(m, pgtest.StopShared, fleetcamBuilt.Stop)
}
