package postgres

import (
	"context"
	"strconv"
	"sync"

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
//
// Group commits run side by side (ParallelBatches), each in a lane of its
// own: its hourly event counts go to rows of the node and the lane, so
// that two batches of one node that store events of the same organization,
// hour and type do not update one row (which would abort one of them),
// as two nodes' do not.
func (e *Engine) UpdateBatch(ctx context.Context, fn func(store.Records) error) error {
	lane := e.lanes.take()
	defer e.lanes.give(lane)
	node := laneNode(e.node, lane)
	return e.updateAt(ctx, pgx.RepeatableRead, 0, func(t *tx) error {
		t.node = node
		return fn(t)
	})
}

// parallelBatches is how many group commits run at once on PostgreSQL:
// while one waits for its commit to be flushed, the next sends its
// statements.
const parallelBatches = 2

// ParallelBatches implements store.ParallelBatcher.
func (e *Engine) ParallelBatches() int { return parallelBatches }

// lanes hands out the lowest lane number no running group commit holds.
type lanes struct {
	mu   sync.Mutex
	used []bool
}

func (l *lanes) take() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, u := range l.used {
		if !u {
			l.used[i] = true
			return i
		}
	}
	l.used = append(l.used, true)
	return len(l.used) - 1
}

func (l *lanes) give(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.used[i] = false
}

// laneNode is the node name the hourly event counts of lane are written
// under: the node's own for lane 0, which is also every other
// transaction's, and "<node>#<lane>" for the others.
func laneNode(node string, lane int) string {
	if lane == 0 {
		return node
	}
	return node + "#" + strconv.Itoa(lane)
}

// ViewDevice implements store.DeviceViewer: the view's transaction opens,
// reads the device's records and ends in one round trip, and fn runs on
// what it read. Should fn read anything else, it runs again in an ordinary
// view (what it was given then is from one snapshot again).
func (e *Engine) ViewDevice(ctx context.Context, imei string, reads store.ViewReads, fn func(store.Records) error) error {
	t, err := e.begin(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	if err := t.readAheadView(imei, reads); err != nil {
		t.pg.Rollback(context.WithoutCancel(ctx))
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
