package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store/pgtest"
)

// The parts' databases on PostgreSQL are copies of one database the run
// migrated once, at the first part that needed one: each holds the schema
// migrations recorded then, at the same moments, and nothing is migrated
// again. The migrated database stays until the end of the run, which drops
// it with the rest.
func TestPartsCopyOneMigratedDatabase(t *testing.T) {
	ctx := t.Context()
	var log bytes.Buffer
	admin := pgtest.Database(t, "")
	pg, err := startPostgres(ctx, admin, t.TempDir(), false, false, &log)
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{o: &options{}, work: t.TempDir(), log: &log, engine: enginePostgres, pg: pg, pgParts: 2}
	closed := false
	t.Cleanup(func() {
		if !closed {
			b.closePostgres(context.Background())
		}
	})
	template := ""
	for _, part := range []string{"hold", "ingest"} {
		st, err := b.newStorage(ctx, part)
		if err != nil {
			t.Fatal(err)
		}
		if template == "" {
			template = databaseName(b.pgTemplate.pgURL)
			if template == "" {
				t.Fatal("no migrated database after the first part's")
			}
		}
		applied := appliedMigrations(t, st.pgURL)
		if len(applied) == 0 {
			t.Fatalf("%s: the store is not migrated", part)
		}
		if want := appliedMigrations(t, b.pgTemplate.pgURL); !slices.Equal(applied, want) {
			t.Errorf("%s: migrations %v, want the migrated database's %v", part, applied, want)
		}
		if err := b.dropStorage(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(log.String(), "  migrated "); n != 1 {
		t.Errorf("migrated %d times, want once:\n%s", n, log.String())
	}
	if !databaseExists(t, admin, template) {
		t.Fatalf("%s is gone before the end of the run", template)
	}
	closed = true
	if err := b.closePostgres(ctx); err != nil {
		t.Fatal(err)
	}
	if databaseExists(t, admin, template) {
		t.Errorf("%s is left after the end of the run", template)
	}
}

// appliedMigrations lists the schema migrations the database at url
// recorded, each with the moment it was applied.
func appliedMigrations(t *testing.T, url string) []string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(t.Context(), `SELECT version_id || ' at ' || tstamp FROM fleetcam_schema_migrations ORDER BY id`)
	applied, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return applied
}

// databaseExists reports whether the server of admin has database name.
func databaseExists(t *testing.T, admin, name string) bool {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	return exists
}
