package bolt_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/enginetest"
)

// TestEngineSuite runs the engine suite on bbolt files in the tests'
// temporary directories.
func TestEngineSuite(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) store.Engine {
		e, err := bolt.OpenEngine(filepath.Join(t.TempDir(), "fleetcam.db"), 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		if err := e.Prepare(context.Background()); err != nil {
			t.Fatal(err)
		}
		return e
	})
}
