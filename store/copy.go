package store

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// Copying a whole store from one engine into another, empty one (fleetcam
// store copy): an engine that can read out all of its records is a Dumper,
// one that can take them in with their identities a Loader. Copy moves
// every kind of Kinds, in that order, then the sequences, and compares the
// counts of both sides before the destination keeps anything.

// ErrNotEmpty means the destination of a copy already holds records.
var ErrNotEmpty = errors.New("store: the destination holds records")

// ErrOutdated means the records were written by an older version of
// fleetcam and have not been brought up to date (fleetcam migrate does).
var ErrOutdated = errors.New("store: written by an older version")

// ErrCountMismatch means a copy's destination does not hold as many
// records of some kind as its source.
var ErrCountMismatch = errors.New("store: the copy's counts differ")

// Version is the schema version of the records this fleetcam writes: that
// of its last migration, which a store it opened records.
func Version() int { return migrations[len(migrations)-1].version }

// Dumper is implemented by engines that can read out every record with its
// identity, for a copy into another engine.
type Dumper interface {
	// Dump runs fn over one consistent, read-only snapshot of the records.
	Dump(ctx context.Context, fn func(Dump) error) error
}

// Dump is a read-only snapshot of an engine's records, by kind.
type Dump interface {
	// SchemaVersion is the version of the last store migration the records
	// hold, as Records.SchemaVersion; an engine with a schema of its own
	// that is not up to date is ErrOutdated.
	SchemaVersion() (int, error)
	// Count is how many records of kind k there are.
	Count(k Kind) (int64, error)
	// Records yields every record of kind k, as the Go type of k (Kind), in
	// the order of the engine's keys, reading them as it goes. An error
	// ends the sequence, yielded with a nil record.
	Records(k Kind) iter.Seq2[any, error]
	// Sequences is the last value each sequence has given (0: none).
	Sequences() (map[Sequence]int64, error)
}

// Loader is implemented by engines that can take in another engine's
// records with their identities.
type Loader interface {
	// Load runs fn to fill the engine, and keeps what fn put only when fn
	// returns nil: an engine that loads in one transaction rolls it back;
	// one that commits in batches (bbolt) is loaded in a new file that
	// replaces the target only on success (bolt.CreateFile).
	Load(ctx context.Context, fn func(Load) error) error
}

// Load is an engine being filled by a copy.
type Load interface {
	// Count is how many records of kind k the engine holds, with what was
	// put so far.
	Count(k Kind) (int64, error)
	// Put stores every record recs yields, each of the Go type of kind k
	// and with the identity it carries, and returns how many it stored.
	// The records of the kinds before k in Kinds are stored already.
	Put(k Kind, recs iter.Seq2[any, error]) (int64, error)
	// SetSequences makes each sequence of seqs give next the value after
	// the one seqs holds.
	SetSequences(seqs map[Sequence]int64) error
}

// CopyCount is how many records of one kind the source and the
// destination of a copy hold.
type CopyCount struct {
	Kind                Kind
	Source, Destination int64
}

// CopyProgress is where a copy is: Done of Total records of Kind copied;
// Finished once the kind is done.
type CopyProgress struct {
	Kind        Kind
	Done, Total int64
	Finished    bool
}

// progressEvery is how many records of a kind a copy copies between two
// reports of its progress.
const progressEvery = 100_000

// Copy copies every record of src into dst, which must hold none, from one
// snapshot of src: Kinds in order, then the sequences. progress (nil: no
// reports) hears of each kind as it starts, every 100,000 records and when
// it is done. Then it counts each kind on both sides; the counts are
// returned, and dst keeps the copy only when they are all equal
// (ErrCountMismatch otherwise). The source must be of this version
// (ErrOutdated, ErrNewerStore), and a destination that holds records is
// ErrNotEmpty. A copy that fails or whose ctx ends leaves dst as Loader
// says: without anything of it.
func Copy(ctx context.Context, src Dumper, dst Loader, progress func(CopyProgress)) ([]CopyCount, error) {
	if progress == nil {
		progress = func(CopyProgress) {}
	}
	var counts []CopyCount
	err := src.Dump(ctx, func(d Dump) error {
		if err := checkVersion(d); err != nil {
			return err
		}
		total := make(map[Kind]int64, len(Kinds))
		for _, k := range Kinds {
			n, err := d.Count(k)
			if err != nil {
				return fmt.Errorf("store: count the source's %s: %w", k, err)
			}
			total[k] = n
		}
		return dst.Load(ctx, func(l Load) error {
			for _, k := range Kinds {
				if n, err := l.Count(k); err != nil || n > 0 {
					return errors.Join(err, fmt.Errorf("%w: %d %s", ErrNotEmpty, n, k))
				}
			}
			for _, k := range Kinds {
				if err := copyKind(ctx, d, l, k, total[k], progress); err != nil {
					return err
				}
			}
			seqs, err := d.Sequences()
			if err != nil {
				return fmt.Errorf("store: read the source's sequences: %w", err)
			}
			if err := l.SetSequences(seqs); err != nil {
				return fmt.Errorf("store: set the sequences: %w", err)
			}
			var differ []Kind
			for _, k := range Kinds {
				n, err := l.Count(k)
				if err != nil {
					return fmt.Errorf("store: count the copied %s: %w", k, err)
				}
				counts = append(counts, CopyCount{Kind: k, Source: total[k], Destination: n})
				if n != total[k] {
					differ = append(differ, k)
				}
			}
			if differ != nil {
				return fmt.Errorf("%w: %v", ErrCountMismatch, differ)
			}
			return nil
		})
	})
	return counts, err
}

// checkVersion refuses a source whose records are not of this version.
func checkVersion(d Dump) error {
	v, err := d.SchemaVersion()
	switch {
	case err != nil:
		return err
	case v > Version():
		return fmt.Errorf("%w: the source has schema version %d and this version knows up to %d", ErrNewerStore, v, Version())
	case v < Version():
		return fmt.Errorf("%w: the source has schema version %d and this version writes %d: run fleetcam migrate on it first",
			ErrOutdated, v, Version())
	}
	return nil
}

// copyKind puts the records of kind k of d into l, reporting its progress
// and stopping once ctx ends.
func copyKind(ctx context.Context, d Dump, l Load, k Kind, total int64, progress func(CopyProgress)) error {
	progress(CopyProgress{Kind: k, Total: total})
	var done int64
	recs := func(yield func(any, error) bool) {
		for rec, err := range d.Records(k) {
			if err == nil {
				err = ctx.Err()
			}
			if !yield(rec, err) || err != nil {
				return
			}
			if done++; done%progressEvery == 0 {
				progress(CopyProgress{Kind: k, Done: done, Total: total})
			}
		}
	}
	n, err := l.Put(k, recs)
	if err == nil {
		err = ctx.Err() // a Put that stopped early without saying why
	}
	if err != nil {
		return fmt.Errorf("store: copy %s: %w", k, err)
	}
	progress(CopyProgress{Kind: k, Done: n, Total: total, Finished: true})
	return nil
}

// Each calls put with every record recs yields, which must be of type *T
// (the type of kind k), and returns how many it put; the first error,
// recs' or put's, ends it.
func Each[T any](k Kind, recs iter.Seq2[any, error], put func(*T) error) (int64, error) {
	var n int64
	for rec, err := range recs {
		if err != nil {
			return n, err
		}
		r, ok := rec.(*T)
		if !ok {
			return n, fmt.Errorf("store: a record of %s is a %T, not a %T", k, rec, r)
		}
		if err := put(r); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Batches calls put with the records recs yields, each of type *T (the type
// of kind k), size at a time (fewer in the last batch), and returns how
// many it put: for an engine that writes many records per statement
// without holding a whole kind in memory.
func Batches[T any](k Kind, recs iter.Seq2[any, error], size int, put func([]*T) error) (int64, error) {
	batch := make([]*T, 0, size)
	var n int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := put(batch); err != nil {
			return err
		}
		n += int64(len(batch))
		batch = batch[:0]
		return nil
	}
	_, err := Each(k, recs, func(r *T) error {
		batch = append(batch, r)
		if len(batch) < size {
			return nil
		}
		return flush()
	})
	if err != nil {
		return n, err
	}
	return n, flush()
}
