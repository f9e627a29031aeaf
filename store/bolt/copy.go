package bolt

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
)

var (
	_ store.Dumper = (*Engine)(nil)
	_ store.Loader = (*Engine)(nil)
)

// OpenReadOnly opens the existing bbolt file at path without writing to
// it, to read it out (store.Dumper): a process that has it open for
// writing (a running fleetcam) makes it wait up to timeout (5s when 0).
// It prepares nothing: the file is read as it is.
func OpenReadOnly(path string, timeout time.Duration) (*Engine, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	b, err := openFile(path, timeout, true)
	if err != nil {
		return nil, err
	}
	return &Engine{db: b}, nil
}

// Dump implements store.Dumper over one read transaction.
func (e *Engine) Dump(_ context.Context, fn func(store.Dump) error) error {
	return e.db.View(func(btx *bbolt.Tx) error { return fn(dump{&tx{b: btx}}) })
}

// dump is the file read out by a copy.
type dump struct{ t *tx }

// SchemaVersion implements store.Dump.
func (d dump) SchemaVersion() (int, error) { return d.t.SchemaVersion() }

// Count implements store.Dump.
func (d dump) Count(k store.Kind) (int64, error) { return countKind(d.t, k) }

// Records implements store.Dump.
func (d dump) Records(k store.Kind) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		ck, ok := copyKinds[k]
		if !ok {
			yield(nil, unknownKind(k))
			return
		}
		if d.t.b.Bucket(ck.buckets[0]) == nil {
			return // a file written before the kind's bucket existed holds none
		}
		if err := ck.dump(d.t, func(r any) bool { return yield(r, nil) }); err != nil {
			yield(nil, err)
		}
	}
}

// Sequences implements store.Dump: the sequences of the buckets.
func (d dump) Sequences() (map[store.Sequence]int64, error) {
	seqs := make(map[store.Sequence]int64, len(copySequences))
	for s, name := range copySequences {
		if b := d.t.b.Bucket(name); b != nil {
			seqs[s] = int64(b.Sequence())
		}
	}
	return seqs, nil
}

// countKind counts the records of kind k: the keys of its first bucket.
func countKind(t *tx, k store.Kind) (int64, error) {
	ck, ok := copyKinds[k]
	switch {
	case !ok:
		return 0, unknownKind(k)
	case t.b.Bucket(ck.buckets[0]) == nil:
		return 0, nil
	case ck.count != nil:
		return ck.count(t), nil
	}
	return int64(t.bucket(ck.buckets[0]).Stats().KeyN), nil
}

func unknownKind(k store.Kind) error { return fmt.Errorf("store: the bbolt engine keeps no %s", k) }

// loadBatch is how many records a load writes per transaction: enough to
// make the commits cheap, few enough to keep the dirty pages of one
// transaction in a few tens of megabytes.
const loadBatch = 20_000

// Load implements store.Loader. It commits every loadBatch records, without
// syncing each commit to disk, and syncs the file once fn returned nil; a
// load that fails leaves what it committed, so a copy loads into a file of
// its own (CreateFile), which replaces the target only once it succeeded.
func (e *Engine) Load(ctx context.Context, fn func(store.Load) error) error {
	l := &load{e: e}
	noSync := e.db.NoSync
	e.db.NoSync = true
	defer func() { e.db.NoSync = noSync }()
	err := fn(l)
	if err == nil {
		err = l.commit()
	}
	if l.btx != nil {
		l.btx.Rollback()
	}
	if err != nil {
		return err
	}
	return e.db.Sync()
}

// load is the file being filled by a copy: one write transaction at a
// time, committed every loadBatch records.
type load struct {
	e       *Engine
	btx     *bbolt.Tx
	pending int
}

// tx is the open write transaction, begun if there is none.
func (l *load) tx() (*tx, error) {
	if l.btx == nil {
		btx, err := l.e.db.Begin(true)
		if err != nil {
			return nil, err
		}
		l.btx, l.pending = btx, 0
	}
	return &tx{b: l.btx}, nil
}

// step runs fn in the open write transaction and commits it once it holds
// loadBatch records.
func (l *load) step(fn func(*tx) error) error {
	t, err := l.tx()
	if err != nil {
		return err
	}
	if err := fn(t); err != nil {
		return err
	}
	if l.pending++; l.pending >= loadBatch {
		return l.commit()
	}
	return nil
}

// commit commits the open write transaction, if any.
func (l *load) commit() error {
	if l.btx == nil {
		return nil
	}
	btx := l.btx
	l.btx = nil
	return btx.Commit()
}

// Count implements store.Load. It commits what was put so far first: a
// bucket's statistics count the committed pages only.
func (l *load) Count(k store.Kind) (n int64, err error) {
	if err := l.commit(); err != nil {
		return 0, err
	}
	err = l.e.db.View(func(btx *bbolt.Tx) error {
		n, err = countKind(&tx{b: btx}, k)
		return err
	})
	return n, err
}

// Put implements store.Load.
func (l *load) Put(k store.Kind, recs iter.Seq2[any, error]) (int64, error) {
	ck, ok := copyKinds[k]
	if !ok {
		return 0, unknownKind(k)
	}
	return ck.put(k, recs, l.step)
}

// SetSequences implements store.Load: the sequence of each bucket.
func (l *load) SetSequences(seqs map[store.Sequence]int64) error {
	t, err := l.tx()
	if err != nil {
		return err
	}
	for s, v := range seqs {
		name, ok := copySequences[s]
		if !ok {
			return fmt.Errorf("store: the bbolt engine has no sequence %s", s)
		}
		if err := t.bucket(name).SetSequence(uint64(v)); err != nil {
			return err
		}
	}
	return nil
}

// CreateFile makes the store file path out of what fill loads into a new,
// empty store (Engine.Load): fill works on a file beside path, which is
// synced and renamed over path once fill returned nil, and removed
// otherwise, so that path is never half written. A file at path that holds
// records is store.ErrNotEmpty; one without any (a store fleetcam migrate
// just created) is replaced.
func CreateFile(ctx context.Context, path string, opts store.Options, fill func(*store.DB) error) error {
	if err := checkEmpty(ctx, path, opts.Timeout); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("store: create data directory: %w", err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".copy-*")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	tmp := f.Name()
	err = f.Close()
	if err == nil {
		err = fillFile(tmp, opts, fill)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// fillFile opens the store at path, runs fill on it and closes it.
func fillFile(path string, opts store.Options, fill func(*store.DB) error) error {
	db, err := Open(path, opts)
	if err != nil {
		return err
	}
	return errors.Join(fill(db), db.Close())
}

// checkEmpty refuses a store file at path that holds records; no file is
// empty.
func checkEmpty(ctx context.Context, path string, timeout time.Duration) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	e, err := OpenReadOnly(path, timeout)
	if err != nil {
		return err
	}
	defer e.Close()
	return e.Dump(ctx, func(d store.Dump) error {
		for _, k := range store.Kinds {
			n, err := d.Count(k)
			if err != nil {
				return err
			}
			if n > 0 {
				return fmt.Errorf("%w: %s holds %d %s", store.ErrNotEmpty, path, n, k)
			}
		}
		return nil
	})
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return nil
}
