package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrNewerStore means the store was written by a newer version of fleetcam,
// whose data this version does not know how to read.
var ErrNewerStore = errors.New("store: written by a newer version")

// migration is one change to the shape of the stored data.
type migration struct {
	version int
	name    string
	up      func(tx *Tx) error
}

// migrations bring a store written by an older version up to date, in
// order. Open applies each one whose version is above the version the store
// records, each in its own transaction together with the record of its
// version: a migration runs exactly once, and one that fails leaves the
// store as the migration before it left it, to be tried again on the next
// open. Open refuses a store that records a version above the last one here.
//
// To add a migration:
//   - append {version: the last version + 1, name: what it does, up: a
//     function in the file that owns the data it changes};
//   - never change, reorder or remove a migration once released: stores
//     out there have recorded its version;
//   - every bucket of the buckets table exists when migrations run; one
//     that renames or retires a bucket creates or deletes it itself (and a
//     retired bucket leaves the table);
//   - migrations also run on a new, empty store, so they must expect empty
//     buckets;
//   - a migration reads the shape of its own version: if the code it calls
//     later changes what it reads or writes, the migration keeps its own
//     copy of the old code;
//   - add a test that writes the old shape, opens the store and checks the
//     new one (see migrations_test.go).
//
// Versions 1 and 2 ran, unversioned, on every open before versions were
// recorded; both are idempotent, so a store that records no version runs
// them once more and records 2.
var migrations = []migration{
	{version: 1, name: "count events by organization and hour", up: backfillEventHours},
	{version: 2, name: "index the webhook receivers of each organization", up: rebuildWebhookReceivers},
}

// migrate prepares the engine and applies the migrations of list that the
// records do not record.
func (db *DB) migrate(list []migration) error {
	latest := 0
	if len(list) > 0 {
		latest = list[len(list)-1].version
	}
	var version int
	err := db.engine.View(context.Background(), func(rec Records) error {
		var err error
		if version, err = rec.SchemaVersion(); err != nil {
			return err
		}
		if version > latest {
			where := db.Path()
			if where == "" {
				where = "the store"
			}
			return fmt.Errorf("%w: %s has schema version %d and this version knows up to %d; run the newer version, or restore a backup taken before it ran",
				ErrNewerStore, where, version, latest)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := db.engine.Prepare(context.Background()); err != nil {
		return err
	}
	for _, m := range list {
		if m.version <= version {
			continue
		}
		err := db.engine.Update(context.Background(), func(rec Records) error {
			if err := m.up(db.newTx(rec, context.Background(), Actor{Source: "system"}, db.Now())); err != nil {
				return err
			}
			return rec.SetSchemaVersion(m.version)
		})
		if err != nil {
			return fmt.Errorf("store: migration %d (%s) failed, the store is left at version %d: %w", m.version, m.name, version, err)
		}
		version = m.version
	}
	return nil
}
