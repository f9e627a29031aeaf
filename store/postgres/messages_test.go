package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fleetcam/fleetcam/store"
)

// TestMessageSequencesFollowCommits checks that no transaction draws a
// sequence while another that drew one has not ended: a second appender
// waits for the first, then draws a higher sequence.
func TestMessageSequencesFollowCommits(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	ctx := context.Background()
	begin := func() *tx {
		pt, err := e.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pt.Rollback(ctx) })
		return &tx{ctx: ctx, pg: pt}
	}
	msg := func() *store.Message {
		return &store.Message{Kind: store.MessageGPS, OrganizationID: f.org, Time: webhookTime}
	}

	a := begin()
	first := msg()
	if err := a.Messages().Append(first); err != nil {
		t.Fatal(err)
	}
	// An appender that will not wait fails rather than draw a sequence
	// while a holds one.
	impatient := begin()
	if _, err := impatient.pg.Exec(ctx, `SET LOCAL lock_timeout = '1ms'`); err != nil {
		t.Fatal(err)
	}
	var pe *pgconn.PgError
	if err := impatient.Messages().Append(msg()); !errors.As(err, &pe) || pe.Code != "55P03" {
		t.Fatalf("a second appender while the first is open: %v; want a lock timeout", err)
	}

	// One that waits draws its sequence once a has committed.
	second := msg()
	done := make(chan error, 1)
	go func() {
		b := begin()
		err := b.Messages().Append(second)
		if err == nil {
			err = b.pg.Commit(ctx)
		}
		done <- err
	}()
	waitFor(t, "an appender waiting for the sequence lock", func() bool { return advisoryWaiting(t, e, messageSeqLockID) })
	var visible []store.Message
	read(t, e, func(t2 *tx) (err error) { visible, err = t2.Messages().After(0, 0); return err })
	if len(visible) != 0 {
		t.Fatalf("messages visible before either commit: %+v", visible)
	}
	if err := a.pg.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if second.Seq <= first.Seq {
		t.Fatalf("the later commit has sequence %d, the earlier %d", second.Seq, first.Seq)
	}
}

// advisoryWaiting is whether a session waits for the advisory lock key in
// e's database (the shared server holds other tests' databases, and their
// sessions their own locks). A bigint key is classid and objid in pg_locks.
func advisoryWaiting(t *testing.T, e *Engine, key int64) bool {
	t.Helper()
	var waiting bool
	err := e.pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_database d ON d.oid = l.database
		WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted
		AND l.classid::bigint = $1::bigint >> 32 AND l.objid::bigint = $1::bigint & 4294967295)`, key).Scan(&waiting)
	if err != nil {
		t.Fatal(err)
	}
	return waiting
}

// TestConcurrentAppendersAreNotSkipped runs appenders in parallel while a
// reader moves a cursor as the webhook dispatcher does, past the highest
// sequence it read: it still reads every message.
func TestConcurrentAppendersAreNotSkipped(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	ctx := context.Background()
	const writers, each = 8, 25
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				err := e.update(ctx, func(t2 *tx) error {
					return t2.Messages().Append(&store.Message{Kind: store.MessageGPS, OrganizationID: f.org, Time: webhookTime})
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(stop) }()
	seen := map[int64]bool{}
	var cursor int64
	read := func() {
		var msgs []store.Message
		read(t, e, func(t2 *tx) (err error) { msgs, err = t2.Messages().After(cursor, 7); return err })
		for _, m := range msgs {
			seen[m.Seq] = true
			cursor = m.Seq
		}
	}
	for finished := false; !finished; {
		select {
		case <-stop:
			finished = true
		default:
		}
		read()
	}
	for before := -1; before != len(seen); {
		before = len(seen)
		read()
	}
	if len(seen) != writers*each {
		t.Fatalf("the reader saw %d messages of %d", len(seen), writers*each)
	}
}
