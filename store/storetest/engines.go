package storetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/pgtest"
	"github.com/fleetcam/fleetcam/store/postgres"
)

// Engine is one storage engine the store's tests run against.
type Engine struct {
	// Name names the engine and the subtests Run starts for it.
	Name string
	// Open opens an empty store for tb with opts and closes it when tb ends.
	Open func(tb testing.TB, o Options) *store.DB
}

// Engines lists every storage engine; Run runs a test once per entry.
var Engines = []Engine{
	{Name: "bbolt", Open: openBolt},
	{Name: "postgres", Open: openPostgres},
}

// Options are what a test may ask of the store Open gives it.
type Options struct {
	// Now is the store clock; time.Now when nil.
	Now func() time.Time
	// Path is where a file-based engine keeps the store, for tests that
	// reopen it; a file in the test's temporary directory when empty.
	Path string
}

// Option sets one of the Options.
type Option func(*Options)

// WithClock gives the store the clock now (a Clock's Now, usually).
func WithClock(now func() time.Time) Option { return func(o *Options) { o.Now = now } }

// WithPath keeps a file-based store at path.
func WithPath(path string) Option { return func(o *Options) { o.Path = path } }

// Open opens an empty store for tb and closes it when tb ends. Under Run it
// is of the engine of the subtest tb belongs to; elsewhere of the engine
// FLEETCAM_TEST_ENGINE names, or the first of Engines.
func Open(tb testing.TB, opts ...Option) *store.DB {
	tb.Helper()
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	return engineOf(tb).Open(tb, o)
}

// Run runs fn once per engine of Engines, each as a subtest named by the
// engine; Open within it, or within its subtests, opens that engine's store.
func Run(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	for _, e := range Engines {
		t.Run(e.Name, func(t *testing.T) {
			running.Store(t.Name(), e)
			t.Cleanup(func() { running.Delete(t.Name()) }) // after parallel subtests too
			fn(t)
		})
	}
}

// Use makes Open within t, and within its subtests, open the store of the
// engine named name whatever FLEETCAM_TEST_ENGINE says: for a test of what
// one engine alone does (its file, its migrations).
func Use(t *testing.T, name string) {
	t.Helper()
	for _, e := range Engines {
		if e.Name == name {
			running.Store(t.Name(), e)
			t.Cleanup(func() { running.Delete(t.Name()) })
			return
		}
	}
	t.Fatalf("%s is none of the storage engines", name)
}

// running maps the name of each subtest Run started to its engine.
var running sync.Map

// engineOf finds the engine of the Run subtest tb is or belongs to.
func engineOf(tb testing.TB) Engine {
	for name := tb.Name(); ; {
		if e, ok := running.Load(name); ok {
			return e.(Engine)
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			break
		}
		name = name[:i]
	}
	if want := os.Getenv("FLEETCAM_TEST_ENGINE"); want != "" {
		for _, e := range Engines {
			if e.Name == want {
				return e
			}
		}
		tb.Fatalf("FLEETCAM_TEST_ENGINE=%s is none of the storage engines", want)
	}
	return Engines[0]
}

// openBolt opens a bbolt store in the test's temporary directory.
func openBolt(tb testing.TB, o Options) *store.DB {
	tb.Helper()
	path := o.Path
	if path == "" {
		path = filepath.Join(tb.TempDir(), "fleetcam.db")
	}
	db, err := boltstore.Open(path, store.Options{Now: o.Now})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// openPostgres opens a store in a new database of the test binary's
// PostgreSQL server (pgtest), copied from a template that an Open of the
// store prepared: the migrated schema, the partitions around now and the
// store's own migrations, which each Open would otherwise make again (a
// second or more under -race). A package whose tests use it stops the
// server through pgtest.Main in its TestMain. Options.Path names the
// database: opening the same path again opens the same database.
func openPostgres(tb testing.TB, o Options) *store.DB {
	tb.Helper()
	ctx := context.Background()
	pgtest.Template(tb, "fleetcam_template", func(url string) error {
		db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 2}, store.Options{})
		if err != nil {
			return err
		}
		return db.Close()
	})
	// A test that reopens its store names a path: the same path opens the
	// same database again, as the same file does with bbolt.
	var url string
	if o.Path == "" {
		url = pgtest.Database(tb, "fleetcam_template")
	} else if u, ok := pgDatabases.Load(o.Path); ok {
		url = u.(string)
	} else {
		url = pgtest.Database(tb, "fleetcam_template")
		pgDatabases.Store(o.Path, url)
	}
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 8}, store.Options{Now: o.Now})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { db.Close() }) // before pgtest drops the database
	return db
}

// pgDatabases maps the Options.Path of a PostgreSQL store to its database.
var pgDatabases sync.Map
