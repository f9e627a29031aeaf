package postgres

import (
	"context"
	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

var _ store.Engine = (*Engine)(nil)

// Open connects to the database at url, applies the schema migrations it
// lacks and returns the store over it, brought up to date.
func Open(ctx context.Context, url string, o Options, so store.Options) (*store.DB, error) {
	e, err := OpenEngine(ctx, url, o)
	if err != nil {
		return nil, err
	}
	db, err := store.New(e, so)
	if err != nil {
		e.Close()
		return nil, err
	}
	return db, nil
}

// Update implements store.Engine: fn runs in one SERIALIZABLE transaction,
// again from the start if PostgreSQL aborts it for a conflict with another.
func (e *Engine) Update(ctx context.Context, fn func(store.Records) error) error {
	return e.update(ctx, func(t *tx) error { return fn(t) })
}

// UpdateBatch implements store.BatchUpdater: a group commit's transaction
// runs REPEATABLE READ. It reads one snapshot, as the rules and the row
// memo need, and PostgreSQL still aborts it (as a serialisation failure,
// run again) when it writes a row another transaction wrote since that
// snapshot, or inserts a key another one inserted out of its sight
// (INSERT … ON CONFLICT, and the GPS inserts queued as unseen). What it
// does not do is SERIALIZABLE's predicate locking, which aborts the
// group commits of two nodes that merely read and write neighbouring
// index pages (the GPS samples of different devices).
func (e *Engine) UpdateBatch(ctx context.Context, fn func(store.Records) error) error {
	return e.updateAt(ctx, pgx.RepeatableRead, 0, func(t *tx) error { return fn(t) })
}

// ViewDevice implements store.DeviceViewer: the device's records are read
// in one round trip, shared with the views that start beside it
// (viewGather), and fn runs on what was read. Should fn read anything
// else, it runs again in an ordinary view (what it was given then is from
// one snapshot again).
func (e *Engine) ViewDevice(ctx context.Context, imei string, reads store.ViewReads, fn func(store.Records) error) error {
	t, err := e.gather.readAhead(ctx, imei, reads)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return e.View(ctx, fn)
	}
	err = fn(t)
	if pipeOf(t).missed {
		return e.View(ctx, fn)
	}
	return classify(err)
}

// View implements store.Engine.
func (e *Engine) View(ctx context.Context, fn func(store.Records) error) error {
	return e.view(ctx, func(t *tx) error { return fn(t) })
}
