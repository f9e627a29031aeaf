package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/fleetcam/fleetcam/store/pgtest"
)

// TestMain stops the PostgreSQL server the tests share and removes the
// fleetcam binary they built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	if err := pgtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}
