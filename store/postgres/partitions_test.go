package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestMonthPartitions creates the partitions of three months of a
// partitioned table, twice, and finds each row in the partition of its
// month and a row far outside them in the default partition.
func TestMonthPartitions(t *testing.T) {
	e := openPrepared(t)
	ctx := context.Background()
	_, err := e.pool.Exec(ctx, `CREATE TABLE samples (at timestamptz NOT NULL) PARTITION BY RANGE (at);
		CREATE TABLE samples_default PARTITION OF samples DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{3, 0} {
		var created int
		err := e.pool.QueryRow(ctx, `SELECT fleetcam_ensure_month_partitions('samples', '2026-11-20', 3)`).Scan(&created)
		if err != nil || created != want {
			t.Fatalf("call %d created %d partitions, %v; want %d", i, created, err, want)
		}
	}
	rows := map[time.Time]string{
		time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC):       "samples_y2026m11",
		time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC):   "samples_y2026m12",
		time.Date(2027, 1, 15, 12, 0, 0, 0, time.UTC):      "samples_y2027m01",
		time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC):        "samples_default",
		time.Date(2026, 10, 31, 23, 59, 59, 999, time.UTC): "samples_default",
	}
	for at, want := range rows {
		var got string
		err := e.pool.QueryRow(ctx, `INSERT INTO samples VALUES ($1) RETURNING tableoid::regclass::text`, at).Scan(&got)
		if err != nil || got != want {
			t.Errorf("a row at %s went to %q, %v; want %s", at, got, err, want)
		}
	}
}

// dropMonthPartitions drops every monthly partition Prepare made for the
// months around today, so that a test of partitions around a time of its
// own starts with only the default partitions.
func dropMonthPartitions(t *testing.T, e *Engine) {
	t.Helper()
	ctx := context.Background()
	rows, err := e.pool.Query(ctx, `SELECT inhrelid::regclass::text, inhparent::regclass::text FROM pg_inherits
		WHERE inhrelid::regclass::text ~ '_y[0-9]{4}m[0-9]{2}$'`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	parent := map[string]string{}
	for rows.Next() {
		var n, p string
		if err := rows.Scan(&n, &p); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
		parent[n] = p
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Children first: event_files' partitions refer to those of events.
	slices.SortStableFunc(names, func(a, b string) int {
		return strings.Compare(b[:min(len(b), len("event_files"))], a[:min(len(a), len("event_files"))])
	})
	for _, n := range names {
		// A partition another table's foreign key refers to is detached
		// before it can be dropped.
		_, err := e.pool.Exec(ctx, "ALTER TABLE "+pgx.Identifier{parent[n]}.Sanitize()+" DETACH PARTITION "+
			pgx.Identifier{n}.Sanitize()+"; DROP TABLE "+pgx.Identifier{n}.Sanitize())
		if err != nil {
			t.Fatal(err)
		}
	}
}
