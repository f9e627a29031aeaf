// Package bolt is fleetcam's embedded storage engine: every record in one
// bbolt file, in buckets keyed so that each query of the store reads a
// range of keys. It keeps records and indexes only; the rules that decide
// what is written are the store's (package store).
package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/fleetcam/fleetcam/store"
)

// Open opens (creating when missing) the bbolt file at path and returns the
// store over it, brought up to date.
func Open(path string, opts store.Options) (*store.DB, error) {
	e, err := OpenEngine(path, opts.Timeout)
	if err != nil {
		return nil, err
	}
	db, err := store.New(e, opts)
	if err != nil {
		e.Close()
		return nil, err
	}
	return db, nil
}

// Engine is the bbolt storage engine.
type Engine struct {
	db *bbolt.DB
}

var (
	_ store.Engine     = (*Engine)(nil)
	_ store.Filer      = (*Engine)(nil)
	_ store.BulkLoader = (*Engine)(nil)
)

// OpenEngine opens (creating when missing) the bbolt file at path; the
// store's New prepares its buckets. timeout bounds the wait for the file lock
// another process holds (5s when 0).
func OpenEngine(path string, timeout time.Duration) (*Engine, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create data directory: %w", err)
	}
	b, err := openFile(path, timeout, false)
	if err != nil {
		return nil, err
	}
	// While the store is open, commits do not write bbolt's free-page list:
	// bbolt writes all of it, sorted, on every commit, and with the pages a
	// retention purge or the outbox pruning frees (126,000 in a store with a
	// million events) that made a commit 7× dearer. Close writes it once, so
	// the next Open reads it; after a crash Open rebuilds it by walking the
	// file (about 0.4 s for 1.2 GB in the page cache).
	b.NoFreelistSync = true
	return &Engine{db: b}, nil
}

// openFile opens the bbolt file at path, read-only or not, waiting up to
// timeout (5s when 0) for the lock another process holds.
func openFile(path string, timeout time.Duration, readOnly bool) (*bbolt.DB, error) {
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	b, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: timeout, ReadOnly: readOnly, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return b, nil
}

// Prepare implements store.Engine: it creates the buckets the file lacks.
func (e *Engine) Prepare(context.Context) error {
	return e.db.Update(func(btx *bbolt.Tx) error {
		for _, bk := range buckets {
			if _, err := btx.CreateBucketIfNotExists(bk.name); err != nil {
				return fmt.Errorf("store: create bucket %s: %w", bk.name, err)
			}
		}
		return nil
	})
}

// Update implements store.Engine. bbolt serialises writers itself.
func (e *Engine) Update(_ context.Context, fn func(store.Records) error) error {
	return e.db.Update(func(btx *bbolt.Tx) error { return fn(&tx{b: btx}) })
}

// BulkUpdate implements store.BulkLoader: bbolt changes its pages in
// memory and writes them at the commit, so an ordinary transaction is its
// bulk path already.
func (e *Engine) BulkUpdate(ctx context.Context, fn func(store.Records) error) error {
	return e.Update(ctx, fn)
}

// View implements store.Engine.
func (e *Engine) View(_ context.Context, fn func(store.Records) error) error {
	return e.db.View(func(btx *bbolt.Tx) error { return fn(&tx{b: btx}) })
}

// Close writes the free-page list, so that the next Open reads it instead
// of walking the file, and closes the file (a file opened read-only is
// only closed). No write may run beside it.
func (e *Engine) Close() error {
	if e.db.IsReadOnly() {
		return e.db.Close()
	}
	e.db.NoFreelistSync = false
	err := e.db.Update(func(*bbolt.Tx) error { return nil })
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		err = nil // closed before
	}
	return errors.Join(err, e.db.Close())
}

// Path implements store.Filer: the bbolt file.
func (e *Engine) Path() string { return e.db.Path() }

// Bolt is the bbolt database beneath the engine, for tests and tools that
// inspect the file.
func (e *Engine) Bolt() *bbolt.DB { return e.db }
