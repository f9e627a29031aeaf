package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openEngine connects an engine to a new, empty database.
func openEngine(t testing.TB, url string) *Engine {
	t.Helper()
	e, err := OpenEngine(context.Background(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestMigrationsApplyOnceWhenProcessesStartTogether migrates one database
// from four engines at once: every migration is applied by exactly one of
// them, and each finds the schema complete.
func TestMigrationsApplyOnceWhenProcessesStartTogether(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t, "")
	ctx := context.Background()
	var wg sync.WaitGroup
	applied := make([][]string, 4)
	errs := make([]error, 4)
	for i := range applied {
		e := openEngine(t, url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied[i], errs[i] = e.Migrate(ctx)
		}()
	}
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("engine %d: %v", i, err)
		}
		total += len(applied[i])
	}
	sources, err := migrationCount()
	if err != nil {
		t.Fatal(err)
	}
	if total != sources {
		t.Fatalf("the engines applied %d migrations between them; want each of the %d once: %v", total, sources, applied)
	}
	again, err := openEngine(t, url).Migrate(ctx)
	if err != nil || len(again) != 0 {
		t.Fatalf("migrating a migrated database applied %v, %v; want nothing", again, err)
	}
}

// TestMigrationWaitsForTheLock: a process that finds another holding the
// migration lock waits in the server until it is released, then finds
// nothing left to apply; a wait whose context ends stops at once.
func TestMigrationWaitsForTheLock(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t, "")
	ctx := context.Background()
	if _, err := openEngine(t, url).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	holder := openEngine(t, url)
	conn, err := holder.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLockID)); err != nil {
		t.Fatal(err)
	}
	waiting := func() bool { return advisoryWaiting(t, holder, migrationLockID) }

	// A wait whose context ends.
	cancelled, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	first := openEngine(t, url)
	go func() {
		_, err := first.Migrate(cancelled)
		stopped <- err
	}()
	waitFor(t, "waiting for the migration lock", waiting)
	cancel()
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("Migrate with its context cancelled while it waited for the lock: %v, want context.Canceled", err)
	}
	waitFor(t, "done waiting for the migration lock", func() bool { return !waiting() })

	// A wait that ends with the lock released.
	done := make(chan error, 1)
	var applied []string
	second := openEngine(t, url)
	go func() {
		var err error
		applied, err = second.Migrate(ctx)
		done <- err
	}()
	waitFor(t, "waiting for the migration lock", waiting)
	select {
	case err := <-done:
		t.Fatalf("Migrate returned while another session held the migration lock: %v", err)
	default:
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(migrationLockID)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || len(applied) != 0 {
		t.Fatalf("Migrate after the lock was released: applied %v, %v; want nothing", applied, err)
	}
}

// migrationCount is the number of migrations: the embedded files and the
// Go migrations.
func migrationCount() (int, error) {
	entries, err := migrationFiles.ReadDir("migrations")
	return len(entries) + len(goMigrations), err
}

// TestNewerSchemaIsRefused records a migration this build does not know
// and expects Prepare to refuse the database, naming both versions.
func TestNewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t, "")
	e := openEngine(t, url)
	ctx := context.Background()
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO fleetcam_schema_migrations (version_id, is_applied) VALUES (99999, true)`); err != nil {
		t.Fatal(err)
	}
	err := e.Prepare(ctx)
	if err == nil || !strings.Contains(err.Error(), "schema version 99999") {
		t.Fatalf("Prepare on a newer schema: %v; want a refusal naming version 99999", err)
	}
}

// TestConflictingWritesBothCommit runs many transactions that each read and
// increment one counter: under SERIALIZABLE the losers of each conflict run
// again, so no increment is lost, and each OnCommit runs once per commit.
func TestConflictingWritesBothCommit(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t, "")
	e := openEngine(t, url)
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `CREATE TABLE counter (n int NOT NULL); INSERT INTO counter VALUES (0)`); err != nil {
		t.Fatal(err)
	}
	const writers = 8
	var runs, committed atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.update(ctx, func(t *tx) error {
				runs.Add(1)
				t.OnCommit(func() { committed.Add(1) })
				var n int
				if err := t.pg.QueryRow(t.ctx, `SELECT n FROM counter`).Scan(&n); err != nil {
					return err
				}
				_, err := t.exec(`UPDATE counter SET n = $1`, n+1)
				return err
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var n int
	if err := e.pool.QueryRow(ctx, `SELECT n FROM counter`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != writers || committed.Load() != writers {
		t.Fatalf("counter %d, OnCommit ran %d times; want %d and %d (transactions ran %d times)", n, committed.Load(), writers, writers, runs.Load())
	}
}

// TestFailedWriteLeavesNothing returns an error after writing: nothing is
// committed and OnCommit does not run.
func TestFailedWriteLeavesNothing(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	ctx := context.Background()
	boom := errors.New("boom")
	ran := false
	err := e.update(ctx, func(t *tx) error {
		t.OnCommit(func() { ran = true })
		if err := t.SetSchemaVersion(7); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || ran {
		t.Fatalf("update = %v, OnCommit ran %v; want boom and no OnCommit", err, ran)
	}
	var v int
	err = e.view(ctx, func(t *tx) (err error) { v, err = t.SchemaVersion(); return err })
	if err != nil || v != 0 {
		t.Fatalf("schema version after a failed write = %d, %v; want 0", v, err)
	}
	if err := e.update(ctx, func(t *tx) error { return t.SetSchemaVersion(3) }); err != nil {
		t.Fatal(err)
	}
	err = e.view(ctx, func(t *tx) (err error) { v, err = t.SchemaVersion(); return err })
	if err != nil || v != 3 {
		t.Fatalf("schema version = %d, %v; want 3", v, err)
	}
}

// TestLostServerIsUnavailable stops the server under an engine: reads and
// writes answer store.ErrUnavailable, not a panic or a generic error.
func TestLostServerIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := pgtest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	e, err := OpenEngine(ctx, s.URL("postgres"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	werr := e.update(ctx, func(t *tx) error { return t.SetSchemaVersion(1) })
	rerr := e.view(ctx, func(t *tx) error { _, err := t.SchemaVersion(); return err })
	for name, err := range map[string]error{"write": werr, "read": rerr} {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the server gone: %v; want store.ErrUnavailable", name, err)
		}
	}
}

// TestNewDatabaseGetsTheStore opens the store over a database that has no
// schema at all: the store finds no version, the engine applies its
// migrations, and the store records its own.
func TestNewDatabaseGetsTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, pgtest.Database(t, ""), Options{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var p *store.Partner
	err = db.Update(ctx, store.Actor{Source: "test"}, func(tx *store.Tx) (err error) {
		p, err = tx.CreatePartner("First")
		return err
	})
	if err != nil || p.ID != 1 {
		t.Fatalf("first partner %+v, %v; want id 1", p, err)
	}
}
