package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fleetcam/fleetcam/store/pgtest"
)

// A warm engine keeps connections of both pools open from the start, and
// every connection has run the reads it serves before it is first used:
// the views' pool has prepared the views' statements and made their
// generic plans, the engine's pool has prepared the group commit's
// read-ahead. That holds for the connections opened before the schema was
// there (warmed by Prepare) and for those opened later (as they open).
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
	if got, want := e.pool.Config().MinConns, int32(2); got != want {
		t.Errorf("the engine's pool keeps %d connections open, want %d (a quarter)", got, want)
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

	views := []string{authRows.sql, viewRows.sql, viewQueued, prefetchAssignments, viewCredentials.sql, viewActiveOrgs, viewActiveDrivers}
	for _, c := range holdAll(t, e.views) {
		plans := preparedPlans(t, c)
		for _, sql := range views {
			if p, ok := plans[sql]; !ok || p.generic < 1 || p.custom != 0 {
				t.Errorf("a connection of the views' pool has %+v (prepared: %v) for %.60q…, want a generic plan only", p, ok, sql)
			}
		}
	}
	// Every connection of the engine's pool, the two kept open and the
	// six opened now.
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
