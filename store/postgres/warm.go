package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fleetcam/fleetcam/store"
)

// Warm connections (Options.Warm).
//
// A new server process pays for its first statements: it reads the
// catalog entries of every table and index a statement touches, and a
// statement pgx has not prepared on the connection yet costs a round trip
// to parse and describe it and then a plan. For the reads of a view or a
// group commit's read-ahead that is 5 to 25 ms on the server, against
// 0.2 to 0.5 ms once the connection has run them. A node that starts
// cold and at once takes a fleet (a restart, the survivors of a failover
// growing their pools) paid that on every connection its pools opened
// under load, when the server's cores were shortest; in a three-node
// cluster's connect storm it was a third of the server's time.
//
// So a warm engine keeps both pools open in full from the start
// (pgxpool's MinConns, opened and kept in the background), and each new
// connection runs the reads its pool sends most before it is first used:
// for no device, and on the engine's pool also the first page of the
// event lists read most, for a window with no event. A read for no device
// finds nothing and writes nothing: it only prepares the statements,
// reads the catalog and makes the generic plans the connection keeps
// (viewPoolConfig, planPages). Connections opened before the schema is
// there are warmed once Prepare has applied it.
//
// The engine's pool was kept open at a quarter once, about what a node's
// group commit, webhook delivery and API use at once. But a burst of
// requests then grew it under load: each connection it opened was warmed
// (or, unwarmed, planned each page's statements at its first pages) while
// the request that opened it waited, the requests behind it waited for
// more connections, and a second of page requests queued behind the
// warming of a dozen connections. Kept open in full, the pool opens a
// connection under load only after one was lost, and the connections
// reach the end of their lifetime at different times (the jitter of
// OpenEngine), so that they are opened again one at a time, in the
// background.

// warmConfig makes the pool of cfg keep keep connections open and warm
// each connection with warm once e.warm is set: as it opens, or, when it
// opened before, before it is first acquired.
func (e *Engine) warmConfig(cfg *pgxpool.Config, keep int32, warm func(context.Context, *pgx.Conn) error) {
	cfg.MinConns = min(keep, cfg.MaxConns)
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		return e.warmConn(ctx, conn, warm)
	}
	cfg.PrepareConn = func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		if err := e.warmConn(ctx, conn, warm); err != nil {
			return false, err
		}
		return true, nil
	}
	cfg.BeforeClose = func(conn *pgx.Conn) { e.warmed.Delete(conn) }
}

// warmConn runs warm on conn once, when e.warm is set. A statement that
// fails leaves the connection usable and is not the connection's failure
// (an older process warming against a newer schema, say): only a
// connection that is lost is refused.
func (e *Engine) warmConn(ctx context.Context, conn *pgx.Conn, warm func(context.Context, *pgx.Conn) error) error {
	if !e.warm.Load() {
		return nil
	}
	if _, done := e.warmed.Load(conn); done {
		return nil
	}
	if err := warm(ctx, conn); err != nil && conn.IsClosed() {
		return err
	}
	e.warmed.Store(conn, struct{}{})
	return nil
}

// warmViews runs on conn what a round trip of the views of an
// authentication and of a connecting device whose configuration is due
// sends (queueViews), for no device.
func warmViews(ctx context.Context, conn *pgx.Conn) error {
	group := []*viewRead{
		{t: &tx{}, reads: store.ViewAuthentication},
		{t: &tx{}, reads: store.ViewDriverCredentials},
	}
	b := &pgx.Batch{}
	v := queueViews(b, group)
	br := conn.SendBatch(ctx, b)
	if err := v.read(br); err != nil {
		br.Close()
		return err
	}
	return br.Close()
}

// warmCommits runs on conn what a group commit reads ahead for its
// devices (queueDeviceReads), by devices and by organizations, for no
// device, in a read-only transaction.
func warmCommits(ctx context.Context, conn *pgx.Conn) error {
	now := time.Now()
	b := &pgx.Batch{}
	b.Queue(`BEGIN READ ONLY`)
	queueDeviceReads(b, store.ReadAhead{Now: now}, []string{}, []string{})
	queueDeviceReads(b, store.ReadAhead{Now: now, Organizations: []int64{0}}, []string{}, []string{})
	b.Queue(`COMMIT`)
	return conn.SendBatch(ctx, b).Close()
}

// warmEngineConn warms a connection of the engine's pool, which runs the
// group commits and the API's reads: the group commit's read-ahead
// (warmCommits) and the first page of the event lists read most
// (warmPages).
func warmEngineConn(ctx context.Context, conn *pgx.Conn) error {
	return errors.Join(warmCommits(ctx, conn), warmPages(ctx, conn))
}

// warmPages makes on conn the generic plans of the statements of the
// event pages read most (queuePageWarmers), under the planner settings of
// a read of pages (planPages), in a read-only transaction. Such a plan
// covers every partition of the events and of their files: on a new
// server process the first one costs tens of milliseconds, mostly reading
// the partitions' catalog entries, and each further statement a few more.
// Unwarmed, the first pages a connection served paid that: while a burst
// of requests grew the pool, each of its new connections did, and the
// requests queued behind them.
func warmPages(ctx context.Context, conn *pgx.Conn) error {
	b := &pgx.Batch{}
	b.Queue(`BEGIN READ ONLY`)
	b.Queue(pagePlanSettings)
	queuePageWarmers(b)
	b.Queue(`COMMIT`)
	return conn.SendBatch(ctx, b).Close()
}

// warmPools warms the connections each pool keeps open, once the schema
// is there: those opened before, and any it opens to have them all.
// Connections opened from then on are warmed as they open.
func (e *Engine) warmPools(ctx context.Context) error {
	e.warm.Store(true)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, pool := range []*pgxpool.Pool{e.pool, e.views} {
		wg.Go(func() {
			var held []*pgxpool.Conn
			defer func() {
				for _, c := range held {
					c.Release()
				}
			}()
			held = append(held, pool.AcquireAllIdle(ctx)...)
			// The rest at once: each connection is opened and warmed
			// while the others are.
			var mu sync.Mutex
			var opening sync.WaitGroup
			for range int(pool.Config().MinConns) - len(held) {
				opening.Go(func() {
					c, err := pool.Acquire(ctx)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs[i] = classify(err)
						return
					}
					held = append(held, c)
				})
			}
			opening.Wait()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
