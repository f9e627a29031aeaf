// Package pgtest runs a throwaway PostgreSQL server for tests: initdb and
// postgres from the Debian postgresql package, in a temporary directory, on
// a free loopback port, as an unprivileged user when the tests run as root
// (internal/pgserver starts it). Nothing has to be running beforehand, and
// nothing is left running: the server is stopped by Stop, and by the kernel
// if the test process dies.
package pgtest

import (
	"context"

	"github.com/fleetcam/fleetcam/internal/pgserver"
)

// Server is one PostgreSQL server started for tests.
type Server = pgserver.Server

// Start initialises a cluster in a new temporary directory and starts a
// server on it, listening on 127.0.0.1 only, with the superuser fleetcam
// and trust authentication (nothing but this machine reaches it). Durability
// is switched off: a test server's data is thrown away. The directory is in
// memory when the machine has room there (pgserver.MemoryDir): the tests
// copy and drop a database for nearly every test, and on a disk's file
// system that file work costs more CPU than the tests' own queries.
func Start(ctx context.Context) (*Server, error) {
	return pgserver.Start(ctx, pgserver.Options{Parent: pgserver.MemoryDir()})
}
