package store

import (
	"context"
	"time"
)

// Engine keeps fleetcam's records. The store's rules (validation, tenancy,
// deduplication, the audit entry and outbox message of every write) run on
// top of it, written once for every engine; an engine only reads and writes
// records of each type and keeps the indexes its queries need.
//
// store/bolt is the embedded engine. docs/storage.md shows the layering and
// how a record type is added.
type Engine interface {
	// Update runs fn in one read-write transaction: what fn writes is
	// committed when it returns nil and discarded when it returns an error.
	// Writes are serialised; ctx bounds the wait for the engine where the
	// engine can honour it (the store itself decides whether a transaction
	// whose caller gave up may commit).
	Update(ctx context.Context, fn func(Records) error) error
	// View runs fn in one read-only transaction over a consistent snapshot.
	View(ctx context.Context, fn func(Records) error) error
	// Prepare brings the engine's own layout up to date (bbolt creates the
	// buckets it lacks). New calls it once, after it has checked that the
	// records were not written by a newer version and before it applies
	// the store's migrations.
	Prepare(ctx context.Context) error
	// Close releases the engine. No transaction may run beside it.
	Close() error
}

// Records is one engine transaction: the record sets of every type, read
// and written in that transaction. Each group of record types declares its
// own interface in the file named after it (engine_<group>.go).
type Records interface {
	// OnCommit runs fn after the transaction has committed, and never if it
	// does not commit.
	OnCommit(fn func())
	// SchemaVersion is the version of the last store migration recorded
	// (0 when none is); SetSchemaVersion records v.
	SchemaVersion() (int, error)
	SetSchemaVersion(v int) error

	DirectoryRecords
	EventRecords
	TrackRecords
	DriverRecords
	AlarmRecords
	DeviceStateRecords
	WebhookRecords
}

// KeyedRecords are the records of a type Keyed declares, by key.
type KeyedRecords[K Key, T any] interface {
	// Get returns the record of key k; ErrNotFound when none is stored.
	Get(k K) (*T, error)
	// Put stores r under its key, replacing any record stored there. An
	// engine that keeps references may refuse a record whose key names a
	// device or organization it does not have (ErrNotFound).
	Put(r *T) error
	// Delete removes the record of key k; removing none is no error.
	Delete(k K) error
}

// Filer is implemented by engines that keep the store in one local file:
// its size and the free space beside it are then exported as metrics.
type Filer interface {
	Path() string
}

// Pinger is implemented by engines that reach their records over a
// network: Ping says whether they can be reached now.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Maintainer is implemented by engines with housekeeping of their own
// layout to do as time passes (PostgreSQL creates the monthly partitions
// of the coming months). The retention purge runs it before each purge.
type Maintainer interface {
	Maintain(ctx context.Context, now time.Time) error
}
