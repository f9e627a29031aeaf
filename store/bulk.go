package store

import "context"

// Bulk transactions: one transaction that adds much of the devices'
// history at once (a seeded or imported fleet's events and GPS samples)
// runs the same rules, through the same Tx methods, as any other, and
// writes the same records; an engine that can store many new records
// faster together than one statement at a time (PostgreSQL: by COPY)
// does so in a transaction of its bulk path.

// BulkLoader is implemented by engines with a bulk path.
type BulkLoader interface {
	// BulkUpdate runs fn as Update does, in one read-write transaction
	// whose records, read and written through Records as in any other,
	// are those Update would have left once it commits. The engine may
	// hold the new records of the time series back and store them
	// together, as long as every read of the transaction sees every write
	// before it.
	BulkUpdate(ctx context.Context, fn func(Records) error) error
}

// BulkUpdate is Update on the engine's bulk path (BulkLoader), for a
// transaction that adds many events or GPS samples: the rules and the
// records they write are those of Update, only the engine stores them
// faster. On an engine without a bulk path it is Update.
func (db *DB) BulkUpdate(ctx context.Context, actor Actor, fn func(*Tx) error) error {
	b, ok := db.engine.(BulkLoader)
	if !ok {
		return db.Update(ctx, actor, fn)
	}
	return db.update(ctx, actor, fn, b.BulkUpdate)
}
