package main

import (
	"os"
	"testing"

	"github.com/fleetcam/fleetcam/internal/testshared"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// TestMain stops the PostgreSQL server the tests share and removes the
// fleetcam binary they built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(testshared.StopAll(code, pgtest.StopShared))
}
