// Package store holds fleetcam's records and the rules that keep them:
// partners, users, organizations, devices, their history, the audit log
// and the messages that later become webhooks. The records themselves are
// kept by a storage engine (Engine; store/bolt is the embedded one). It
// knows nothing about HTTP or MQTT.
package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Clock returns the current time. Tests inject a fixed or stepping clock.
type Clock func() time.Time

// Options tune how the store is opened.
type Options struct {
	// Now is the clock used for timestamps; time.Now when nil.
	Now Clock
	// Timeout bounds the wait for the file lock held by another process.
	Timeout time.Duration
}

// DB is the fleetcam store: the rules of every record type over one
// storage engine. It is safe for concurrent use.
type DB struct {
	engine Engine
	now    Clock
	// outbox wakes the webhook dispatcher after commits that touch the outbox.
	outbox *signal
}

// New puts the store's rules over engine and brings its records up to date:
// every migration has run. It refuses records written by a newer version
// (ErrNewerStore). Closing the DB closes the engine.
func New(engine Engine, opts Options) (*DB, error) {
	return newDB(engine, opts, migrations)
}

// newDB is New with the list of migrations to apply.
func newDB(engine Engine, opts Options, list []migration) (*DB, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	db := &DB{engine: engine, now: opts.Now, outbox: newSignal()}
	if err := db.migrate(list); err != nil {
		return nil, err
	}
	return db, nil
}

// Close closes the engine. No write may run beside it.
func (db *DB) Close() error { return db.engine.Close() }

// Now returns the store clock's current time in UTC.
func (db *DB) Now() time.Time { return db.now().UTC() }

// Path is the file the store lives in, or "" for an engine that keeps it
// elsewhere (a database server).
func (db *DB) Path() string {
	if f, ok := db.engine.(Filer); ok {
		return f.Path()
	}
	return ""
}

// Ping reports whether the engine can be reached now: always for an
// embedded engine; for a database server, store.ErrUnavailable when it
// cannot be.
func (db *DB) Ping(ctx context.Context) error {
	if p, ok := db.engine.(Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// Engine is the storage engine beneath the store.
func (db *DB) Engine() Engine { return db.engine }

// Actor is who causes a write; every write records it in the audit log.
type Actor struct {
	UserID         int64
	Email          string
	PartnerID      int64
	OrganizationID int64
	// Source names a non-user origin: "device", "system", "cli".
	Source    string
	RequestID string
	// IMEI is the device acting, when Source is "device": a group commit
	// reads what its jobs' devices need ahead, in one go (Prefetcher).
	IMEI string
}

// Tx is one read-write or read-only transaction. Writes made through it and
// the audit entries and messages they record commit together or not at all.
type Tx struct {
	rec   Records
	db    *DB
	ctx   context.Context
	actor Actor
	now   time.Time
	// signalled is set once the commit is due to wake outbox watchers.
	signalled bool
	// readOnly is set for a view's transaction (View, ViewDevice).
	readOnly bool
}

// newTx is the store transaction over one engine transaction that may
// write: ctx's writes are marked (TrackWrites).
func (db *DB) newTx(rec Records, ctx context.Context, actor Actor, now time.Time) *Tx {
	if m, ok := ctx.Value(writeMarkKey{}).(*writeMark); ok {
		m.wrote.Store(true)
	}
	return &Tx{rec: rec, db: db, ctx: ctx, actor: actor, now: now}
}

// writeMark records that a transaction that may write ran for a context
// (TrackWrites).
type writeMark struct{ wrote atomic.Bool }

type writeMarkKey struct{}

// TrackWrites returns ctx, under which every transaction that may write
// (Update, a group commit's job, a migration) is remembered: Wrote then
// reports it, for ctx and every context made from it.
func TrackWrites(ctx context.Context) context.Context {
	return context.WithValue(ctx, writeMarkKey{}, &writeMark{})
}

// Wrote reports whether a transaction that may write has run for ctx
// since TrackWrites; false for a context TrackWrites did not make.
func Wrote(ctx context.Context) bool {
	m, ok := ctx.Value(writeMarkKey{}).(*writeMark)
	return ok && m.wrote.Load()
}

// Update runs fn in one read-write transaction on behalf of actor. The
// transaction commits only if ctx is still live when fn returns: a caller
// that has given up (a timed-out API call) leaves nothing behind. Update
// then returns ctx's error, wrapped, so errors.Is(err, context.Canceled)
// or context.DeadlineExceeded holds. A deadline that passes while the
// commit is being written does not undo it.
func (db *DB) Update(ctx context.Context, actor Actor, fn func(*Tx) error) error {
	return db.update(ctx, actor, fn, db.engine.Update)
}

// update is Update through the engine transaction update runs.
func (db *DB) update(ctx context.Context, actor Actor, fn func(*Tx) error,
	update func(context.Context, func(Records) error) error) error {
	if err := abandoned(ctx); err != nil {
		return err
	}
	return update(context.WithoutCancel(ctx), func(rec Records) error {
		if err := abandoned(ctx); err != nil {
			return err
		}
		if err := fn(db.newTx(rec, ctx, actor, db.Now())); err != nil {
			return err
		}
		return abandoned(ctx)
	})
}

// View runs fn in one read-only transaction, unless ctx is already done.
// Long reads stop early through tx.Context.
func (db *DB) View(ctx context.Context, fn func(*Tx) error) error {
	if err := abandoned(ctx); err != nil {
		return err
	}
	return db.engine.View(ctx, func(rec Records) error {
		return fn(db.newView(rec, ctx))
	})
}

// newView is the store transaction over one engine transaction of a view.
func (db *DB) newView(rec Records, ctx context.Context) *Tx {
	return &Tx{rec: rec, db: db, ctx: ctx, now: db.Now(), readOnly: true}
}

// ReadOnly reports whether tx is a view's transaction, which writes
// nothing.
func (tx *Tx) ReadOnly() bool { return tx.readOnly }

// AlongReads names rows a transaction is about to read, by their keys.
type AlongReads struct {
	Organizations []int64
	Devices       []string // by IMEI
}

// AlongReader is what an engine's records offer when the rows a
// transaction will read can travel with the statement it sends next
// (PostgreSQL: in its round trip), rather than each in one of its own.
type AlongReader interface {
	// ReadAlong has the rows of r read with the transaction's next
	// statement; the record methods (Organizations().Get, Devices().Get)
	// then answer them without a statement. A row that is not there is
	// answered as one read on its own would be.
	ReadAlong(r AlongReads)
}

// ReadAlong tells the engine which organizations and devices tx reads
// next to whatever it reads first (AlongReader): on an engine where
// reads are local, it does nothing.
func (tx *Tx) ReadAlong(r AlongReads) {
	if a, ok := tx.rec.(AlongReader); ok {
		a.ReadAlong(r)
	}
}

// DeviceViewer is what an engine offers when it can read a device's own
// records for a view ahead of the view, in one go (PostgreSQL: one round
// trip): the device, its settings, link, track, hotspot, credential,
// driver assignments and queued commands, its organization and the
// organization's settings, and what reads adds. A view that reads anything
// else is run again as an ordinary view.
type DeviceViewer interface {
	ViewDevice(ctx context.Context, imei string, reads ViewReads, fn func(Records) error) error
}

// ViewReads names what a device's view reads beyond the device's own
// records, for the engine to read ahead with them.
type ViewReads uint8

const (
	// ViewDriverCredentials: the drivers whose credentials the device's
	// configuration carries (DriverCredentials), when its configuration
	// is due (not acknowledged at its settings' version).
	ViewDriverCredentials ViewReads = 1 << iota
	// ViewAuthentication: the view authenticates the device, and reads
	// only the device, its credential and its organization's settings,
	// so nothing else is read ahead for it.
	ViewAuthentication
)

// ViewDevice is View for a view that reads the records of device imei
// (DeviceViewer) and those reads names: a device connecting, and what it
// is sent then.
func (db *DB) ViewDevice(ctx context.Context, imei string, reads ViewReads, fn func(*Tx) error) error {
	if err := abandoned(ctx); err != nil {
		return err
	}
	dv, ok := db.engine.(DeviceViewer)
	if !ok {
		return db.View(ctx, fn)
	}
	return dv.ViewDevice(ctx, imei, reads, func(rec Records) error {
		return fn(db.newView(rec, ctx))
	})
}

// abandoned returns ctx's error, wrapped, once ctx is done.
func abandoned(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: transaction abandoned: %w", err)
	}
	return nil
}

// Context is the context the transaction runs for. Loops over many records
// (retention purges, exports, audit log scans) check it to stop early once
// the caller has gone.
func (tx *Tx) Context() context.Context { return tx.ctx }

// Now is the time the transaction started, by the store clock.
func (tx *Tx) Now() time.Time { return tx.now }

// Actor is who the transaction writes for.
func (tx *Tx) Actor() Actor { return tx.actor }

// OnCommit runs fn after the transaction commits (never if it does not).
func (tx *Tx) OnCommit(fn func()) { tx.rec.OnCommit(fn) }

// Page selects a window of a list.
type Page struct {
	Limit  int
	Offset int
}

// window returns the slice bounds of page within n items.
func (p Page) window(n int) (int, int) {
	lo := min(p.Offset, n)
	hi := n
	if p.Limit > 0 {
		hi = min(lo+p.Limit, n)
	}
	return lo, hi
}

// Paginate returns the page of items and the total count.
func Paginate[T any](items []T, p Page) ([]T, int) {
	lo, hi := p.window(len(items))
	return items[lo:hi], len(items)
}
