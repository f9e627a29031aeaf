package postgres

import (
	"testing"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/enginetest"
)

// TestEngineSuite runs the engine suite on new databases of the test
// binary's PostgreSQL server, each with the schema applied.
func TestEngineSuite(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) store.Engine { return openPrepared(t) })
}
