package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fleetcam/fleetcam/internal/testshared"
)

// One server serves every test of a test binary: starting one takes a
// second or more, a database on it a fraction of that. A test's database
// is a copy, of a template or of an empty one, made while an earlier test
// ran (a spare), and it is dropped in the background once its test ends:
// copying a database is mostly waiting for the file system, which the
// tests need not do.
var server = testshared.Server[*Server]{Start: startShared, Timeout: time.Minute}

// shared is what the tests of the binary keep on its server.
var shared struct {
	// fileCopy: the server copies a database file by file (CREATE
	// DATABASE … STRATEGY FILE_COPY, PostgreSQL 15 and later) rather than
	// through the write-ahead log, its default: a test server's data
	// needs no crash safety, and a copy then takes a fraction of the time.
	// Set once as the server starts.
	fileCopy bool
	// admin holds the connections to the server's postgres database that
	// copy and drop the tests' databases: two databases a test, each a
	// new server process and a connection's start-up when made on its own
	// connection. Opened as the server starts.
	admin *pgxpool.Pool

	mu        sync.Mutex
	templates map[string]error       // prepared template databases
	spares    map[string]chan string // template ("" for none) → databases copied ahead
	copying   map[string]int         // template → spares being copied
	dropErrs  []error                // drops that failed, reported by StopShared
	next      atomic.Int64
	// background counts the copies and drops under way.
	background sync.WaitGroup
}

// sparesPerTemplate is how many copies of a template are kept ready.
const sparesPerTemplate = 1

// startShared starts the shared server and learns whether it copies
// databases file by file.
func startShared(ctx context.Context) (*Server, error) {
	s, err := Start(ctx)
	if err != nil {
		return nil, err
	}
	version, err := s.VersionNum(ctx)
	if err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	shared.fileCopy = version >= 150000
	cfg, err := pgxpool.ParseConfig(s.URL("postgres"))
	if err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	cfg.MaxConns = 2 // two statements at once, say a copy and a drop; others wait for a connection
	if shared.admin, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// Main runs the tests of a package that uses the shared server and stops
// the server after them: call it from the package's TestMain.
func Main(m *testing.M) { testshared.Main(m, StopShared) }

// StopShared stops the test binary's server, if one was started, once the
// copies and drops under way are done: for a TestMain that does more than
// Main (testshared.StopAll). Its error names a test database that could
// not be dropped (a connection a test left open that DROP DATABASE … WITH
// (FORCE) could not end, say) and a server that did not stop cleanly.
func StopShared() error {
	shared.background.Wait()
	shared.mu.Lock()
	errs := shared.dropErrs
	shared.mu.Unlock()
	if shared.admin != nil {
		shared.admin.Close()
	}
	return errors.Join(append(errs, server.Stop())...)
}

// Shared returns the test binary's server, starting it on first use. A
// package that uses it stops it through Main.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	return server.Get(tb)
}

// Database creates a new, empty database on the shared server for tb and
// returns its URL; the database is dropped when tb ends. With a template
// (see Template) the new database is a copy of it.
func Database(tb testing.TB, template string) string {
	tb.Helper()
	s := Shared(tb)
	var name string
	select {
	case name = <-spares(template):
	default:
		var err error
		if name, err = copyDatabase(template); err != nil {
			tb.Fatal(err)
		}
	}
	copyAhead(template)
	tb.Cleanup(func() { dropLater(name) })
	return s.URL(name)
}

// spares is the channel of template's spare copies.
func spares(template string) chan string {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	ch, ok := shared.spares[template]
	if !ok {
		if shared.spares == nil {
			shared.spares, shared.copying = map[string]chan string{}, map[string]int{}
		}
		ch = make(chan string, sparesPerTemplate)
		shared.spares[template] = ch
	}
	return ch
}

// copyAhead starts copying template in the background unless enough
// copies are ready or under way. A copy that fails is not kept: the test
// that would have taken it makes its own and reports the error.
func copyAhead(template string) {
	ch := spares(template)
	shared.mu.Lock()
	if len(ch)+shared.copying[template] >= cap(ch) {
		shared.mu.Unlock()
		return
	}
	shared.copying[template]++
	shared.background.Add(1)
	shared.mu.Unlock()
	go func() {
		defer shared.background.Done()
		name, err := copyDatabase(template)
		shared.mu.Lock()
		shared.copying[template]--
		shared.mu.Unlock()
		if err == nil {
			ch <- name // room was counted above
		}
	}()
}

// copyDatabase creates a database, a copy of template when it is not "".
func copyDatabase(template string) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), shared.next.Add(1))
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		stmt += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if shared.fileCopy {
		stmt += " STRATEGY FILE_COPY"
	}
	if _, err := shared.admin.Exec(context.Background(), stmt); err != nil {
		return "", fmt.Errorf("pgtest: %s: %w", stmt, err)
	}
	return name, nil
}

// dropLater drops the database name in the background; StopShared waits
// for it and reports its failure.
func dropLater(name string) {
	shared.background.Add(1)
	go func() {
		defer shared.background.Done()
		_, err := shared.admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		if err != nil {
			shared.mu.Lock()
			shared.dropErrs = append(shared.dropErrs, fmt.Errorf("pgtest: drop %s: %w", name, err))
			shared.mu.Unlock()
		}
	}()
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
		_, err = shared.admin.Exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
		if err == nil {
			err = prepare(s.URL(name))
		}
		shared.templates[name] = err
	}
	if err != nil {
		tb.Fatalf("pgtest: template %s: %v", name, err)
	}
}
