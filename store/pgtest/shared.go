package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// One server serves every test of a test binary: starting one takes about
// a second, a database on it a few milliseconds.
var shared struct {
	once   sync.Once
	server *Server
	err    error

	mu        sync.Mutex
	templates map[string]error // prepared template databases
	next      atomic.Int64
}

// Main runs the tests of a package that uses the shared server and stops
// the server after them: call it from the package's TestMain.
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// StopShared stops the test binary's server, if one was started: for a
// TestMain that does more than Main.
func StopShared() {
	if shared.server != nil {
		if err := shared.server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}

// Shared returns the test binary's server, starting it on first use. A
// package that uses it stops it through Main.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shared.server, shared.err = Start(ctx)
	})
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.server
}

// Database creates a new, empty database on the shared server for tb and
// returns its URL; the database is dropped when tb ends. With a template
// (see Template) the new database is a copy of it.
func Database(tb testing.TB, template string) string {
	tb.Helper()
	s := Shared(tb)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), shared.next.Add(1))
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		stmt += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if err := s.Exec(context.Background(), "postgres", stmt); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		err := s.Exec(context.Background(), "postgres", "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		if err != nil {
			tb.Errorf("pgtest: drop %s: %v", name, err)
		}
	})
	return s.URL(name)
}

// Template creates, once per test binary, the database name on the shared
// server and runs prepare on its URL (to apply a schema, say); later calls
// only return prepare's first result. Databases made from it (Database with
// template name) start as copies of what prepare left.
func Template(tb testing.TB, name string, prepare func(url string) error) {
	tb.Helper()
	s := Shared(tb)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.templates == nil {
		shared.templates = map[string]error{}
	}
	err, done := shared.templates[name]
	if !done {
		err = s.Exec(context.Background(), "postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
		if err == nil {
			err = prepare(s.URL(name))
		}
		shared.templates[name] = err
	}
	if err != nil {
		tb.Fatalf("pgtest: template %s: %v", name, err)
	}
}
