package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// A warm engine keeps both pools open in full from the start, and every
// connection has run the reads it serves before it is first used: the
// views' pool has prepared the views' statements and made their generic
// plans, the engine's pool has prepared the group commit's read-ahead.
// That holds for the connections opened before the schema was there
// (warmed by Prepare) and for those opened later (as they open: here in
// place of one that was lost).
// An engine that is not warm opens its connections as they are needed,
// and runs nothing on them.
func TestPoolsStartWarm(t *testing.T) {
	t.Parallel()
	openPrepared(t) // the template the databases below copy
	ctx := context.Background()

	e, err := OpenEngine(ctx, pgtest.Database(t, "prepared_template"), Options{MaxConns: 8, Warm: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if got, want := e.pool.Config().MinConns, e.pool.Config().MaxConns; got != want {
		t.Errorf("the engine's pool keeps %d connections open, want all %d", got, want)
	}
	if got := e.pool.Config().MaxConnLifetimeJitter; got <= 0 {
		t.Errorf("the engine's pool ends its connections' lifetimes with a jitter of %s, want some", got)
	}
	if got, want := e.views.Config().MinConns, e.views.Config().MaxConns; got != want {
		t.Errorf("the views' pool keeps %d connections open, want all %d", got, want)
	}
	// The connections pgxpool opens in the background, before Prepare.
	waitFor(t, "opened in the background", func() bool {
		return e.pool.Stat().TotalConns() >= e.pool.Config().MinConns && e.views.Stat().TotalConns() >= e.views.Config().MinConns
	})
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pool := range []*pgxpool.Pool{e.pool, e.views} {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Hijack().Close(ctx); err != nil {
			t.Fatal(err)
		}
	}

	views := []string{authRows.sql, viewRows.sql, viewQueued, prefetchAssignments, viewCredentials.sql, viewActiveOrgs, viewActiveDrivers}
	for _, c := range holdAll(t, e.views) {
		plans := preparedPlans(t, c)
		for _, sql := range views {
			if p, ok := plans[sql]; !ok || p.generic < 1 || p.custom != 0 {
				t.Errorf("a connection of the views' pool has %+v (prepared: %v) for %.60q…, want a generic plan only", p, ok, sql)
			}
		}
	}
	// Every connection of the engine's pool, all kept open.
	for _, c := range holdAll(t, e.pool) {
		plans := preparedPlans(t, c)
		for _, sql := range []string{prefetchRows.sql, prefetchGPS} {
			if p, ok := plans[sql]; !ok || p.generic < 1 || p.custom != 0 {
				t.Errorf("a connection of the engine's pool has %+v (prepared: %v) for %.60q…, want a generic plan only", p, ok, sql)
			}
		}
		for _, sql := range []string{prefetchOpenAlarms, prefetchSessions} {
			if p, ok := plans[sql]; !ok || p.generic+p.custom < 1 {
				t.Errorf("a connection of the engine's pool has %+v (prepared: %v) for %.60q…, want it planned", p, ok, sql)
			}
		}
	}

	cold := openEngine(t, pgtest.Database(t, "prepared_template"))
	if err := cold.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if n := cold.views.Stat().TotalConns(); n != 0 {
		t.Errorf("an engine that is not warm holds %d connections of the views' pool before any view", n)
	}
	for _, c := range holdAll(t, cold.pool) {
		if plans := preparedPlans(t, c); plans[prefetchRows.sql] != (planCount{}) {
			t.Errorf("a connection of an engine that is not warm has planned the read-ahead: %+v", plans[prefetchRows.sql])
		}
	}
}

// holdAll acquires every connection pool allows, so that each is a
// different one, and releases them when the test ends.
func holdAll(t *testing.T, pool *pgxpool.Pool) []*pgxpool.Conn {
	t.Helper()
	var held []*pgxpool.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Release()
		}
	})
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	return held
}

// planCount is how often a prepared statement was planned on its
// connection, for all values (generic) and for the values of one
// execution (custom).
type planCount struct{ generic, custom int64 }

// preparedPlans lists the statements prepared on c and their plans
// (pg_prepared_statements, which shows the connection's own).
func preparedPlans(t *testing.T, c *pgxpool.Conn) map[string]planCount {
	t.Helper()
	rows, err := c.Query(context.Background(), `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	plans := map[string]planCount{}
	for rows.Next() {
		var sql string
		var p planCount
		if err := rows.Scan(&sql, &p.generic, &p.custom); err != nil {
			t.Fatal(err)
		}
		plans[sql] = p
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plans
}

// A connection of a warm engine's pool has made, before its first page,
// the generic plans of every statement that the first pages of a device's
// events and of an organization's (with and without a partner) send, and
// those pages send one text per statement whatever bounds them: the
// window's end or a unit's start, an offset in the first unit or in the
// last.
func TestEngineConnectionsStartWithThePagesPlanned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := seedEvents(t)
	start, _ := seedTruckEvents(t, f, 72, time.Hour)
	window := store.OrgEventFilter{Start: start.Add(90 * time.Minute), End: start.Add(60*time.Hour + 30*time.Minute)}
	holder := &store.Device{IMEI: evIMEI, Ownership: 3}
	// The statements of the pages prepared on the connection of tx; a
	// failure is the test's, reported after the transaction ends.
	pageStatements := func(tx *tx) map[string]bool {
		out := map[string]bool{}
		rows, err := tx.pg.Query(tx.ctx, `SELECT statement FROM pg_prepared_statements
			WHERE (statement LIKE 'WITH page AS%' OR statement LIKE '% FROM (%SELECT * FROM events WHERE %'
				OR statement LIKE 'SELECT count(*) FROM events%'
				OR statement LIKE 'SELECT hour, sum(events)%' OR statement LIKE 'SELECT day, sum(events)%')
			  AND statement NOT LIKE '%pg_prepared_statements%'`)
		if err == nil {
			var sql string
			_, err = pgx.ForEachRow(rows, []any{&sql}, func() error { out[sql] = true; return nil })
		}
		if err != nil {
			t.Error(err)
		}
		return out
	}
	var sent map[string]bool
	f.view(t, func(tx *tx) error {
		if before := pageStatements(tx); len(before) != 0 {
			return fmt.Errorf("statements of the pages prepared before any page: %v", before)
		}
		// The first page, one in the window's last partial day (the
		// device's 58 events from 01:30 on the first day to 12:30 on the
		// third), one in its last partial hour (the organization's).
		for _, offset := range []int{0, 52, 55} {
			devWindow := store.DeviceEventFilter{Start: window.Start, End: window.End, Holder: holder}
			page, total, err := tx.Events().ByDevice(evIMEI, devWindow, store.Page{Limit: 10, Offset: offset})
			if err != nil {
				return err
			}
			if total != 59 || len(page) != min(10, 59-offset) {
				return fmt.Errorf("the device's page at %d: %d events of %d, want %d of 59", offset, len(page), total, min(10, 59-offset))
			}
		}
		if got := len(pageStatements(tx)); got != 3 {
			t.Errorf("the device's pages prepared %d statements, want 3 (the partial days' count, the days' counts, the page): %v",
				got, pageStatements(tx))
		}
		for _, partner := range []int64{0, 1} {
			for _, offset := range []int{0, 58} {
				f := window
				f.PartnerID = partner
				page, total, err := tx.Events().(store.OrgEventNamer).ByOrganizationNamed(1, f, store.Page{Limit: 10, Offset: offset})
				if err != nil {
					return err
				}
				if total != 59 || len(page) != min(10, 59-offset) {
					return fmt.Errorf("the organization's page at %d: %d events of %d, want %d of 59", offset, len(page), total, min(10, 59-offset))
				}
			}
		}
		sent = pageStatements(tx)
		return nil
	})
	if len(sent) != 9 {
		t.Errorf("the pages prepared %d statements, want 9 (three for the device, three for the organization with a partner and without): %v", len(sent), sent)
	}

	e, err := OpenEngine(ctx, f.e.pool.Config().ConnString(), Options{MaxConns: 4, Warm: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	// The connections kept open and warmed by Prepare.
	for _, c := range holdAll(t, e.pool) {
		plans := preparedPlans(t, c)
		for sql := range sent {
			if p, ok := plans[sql]; !ok || p.generic < 1 || p.custom != 0 {
				t.Errorf("a connection of the engine's pool has %+v (prepared: %v) for %.80q…, want a generic plan only", p, ok, sql)
			}
		}
	}
}
