package postgres

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// ownTables are the engine's own bookkeeping, which no copy moves: each
// database records its own schema and store version, and the fingerprints
// of the keys of the cluster that runs on it, which the first node started
// on it records (docs/cluster.md).
var ownTables = []string{"fleetcam_meta", "fleetcam_schema_migrations", "cluster_keys"}

// Every table of the schema (partitions aside) is in exactly one kind of
// record a copy moves, or is the engine's own; every kind has its tables,
// and every sequence of the schema is a store.Sequence (or the devices'
// revisions, which stamp rows and identify nothing): a table or an
// identity added without its kind fails here.
func TestCopyCoversEveryTable(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	var tables, sequences []string
	read(t, e, func(t *tx) error {
		rows, err := t.pg.Query(t.ctx, `SELECT c.relname::text FROM pg_class c
			WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition`)
		if err != nil {
			return err
		}
		if tables, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		// The sequences but those of the engine's own tables.
		rows, err = t.pg.Query(t.ctx, `SELECT s.relname::text FROM pg_class s
			WHERE s.relnamespace = current_schema()::regnamespace AND s.relkind = 'S'
			AND NOT EXISTS (SELECT FROM pg_depend d JOIN pg_class o ON o.oid = d.refobjid
				WHERE d.objid = s.oid AND d.classid = 'pg_class'::regclass AND o.relname = ANY ($1))`, ownTables)
		if err != nil {
			return err
		}
		sequences, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	owner := map[string]store.Kind{}
	for k, ck := range copyKinds {
		if !slices.Contains(store.Kinds, k) {
			t.Errorf("the engine copies %s, which is not a kind of store.Kinds", k)
		}
		for _, table := range ck.tables {
			if other, ok := owner[table]; ok {
				t.Errorf("table %s is in both %s and %s", table, other, k)
			}
			owner[table] = k
			if !slices.Contains(tables, table) {
				t.Errorf("kind %s names table %s, which the schema lacks", k, table)
			}
		}
	}
	for _, k := range store.Kinds {
		if len(copyKinds[k].tables) == 0 {
			t.Errorf("kind %s has no table in the engine", k)
		}
	}
	for _, table := range tables {
		if _, ok := owner[table]; !ok && !slices.Contains(ownTables, table) {
			t.Errorf("table %s is in no kind of record: a copy would leave it behind", table)
		}
	}
	identities := []string{"device_revisions"}
	read(t, e, func(t *tx) error {
		for _, s := range store.Sequences {
			c, ok := copySequences[s]
			if !ok {
				return fmt.Errorf("sequence %s has no identity", s)
			}
			var name string
			if err := t.pg.QueryRow(t.ctx, `SELECT pg_get_serial_sequence($1, $2)::regclass::text`, c.table, c.column).Scan(&name); err != nil {
				return err
			}
			identities = append(identities, name)
		}
		return nil
	})
	for _, s := range sequences {
		if !slices.Contains(identities, s) {
			t.Errorf("sequence %s is no store.Sequence: a copy would not carry its last value over", s)
		}
	}
	if len(copySequences) != len(store.Sequences) {
		t.Errorf("the engine has %d sequences, the store %d", len(copySequences), len(store.Sequences))
	}
}

// A copy into the database runs without the statement timeout the engine
// sets: a COPY of a fleet's history is one statement.
func TestCopyTransactionsHaveNoStatementTimeout(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	for name, begin := range map[string]func(ctx context.Context, fn func(*tx) error) error{
		"dump": func(ctx context.Context, fn func(*tx) error) error {
			return e.Dump(ctx, func(d store.Dump) error { return fn(d.(dump).t) })
		},
		"load": func(ctx context.Context, fn func(*tx) error) error {
			return e.Load(ctx, func(l store.Load) error { return fn(l.(load).t) })
		},
	} {
		err := begin(context.Background(), func(t *tx) error {
			var timeout string
			if err := t.pg.QueryRow(t.ctx, `SHOW statement_timeout`).Scan(&timeout); err != nil {
				return err
			}
			if timeout != "0" {
				return fmt.Errorf("%s runs with statement_timeout %s, want 0", name, timeout)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
}

// The sequences a copy sets give next the value after the copied one,
// beyond 32 bits too; one that gave nothing gives 1 next.
func TestCopySetsSequences(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	err := e.Load(context.Background(), func(l store.Load) error {
		return l.SetSequences(map[store.Sequence]int64{store.SeqEvents: 5_000_000_000, store.SeqPartners: 0, store.SeqAlarms: 7})
	})
	if err != nil {
		t.Fatal(err)
	}
	write(t, e, func(t *tx) error {
		for table, want := range map[string]int64{"events": 5_000_000_001, "partners": 1, "alarms": 8} {
			var got int64
			if err := t.pg.QueryRow(t.ctx, `SELECT nextval(pg_get_serial_sequence($1, 'id'))`, table).Scan(&got); err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("the next %s id is %d, want %d", table, got, want)
			}
		}
		return nil
	})
}

// foreignKeys lists the foreign keys of the schema as defined (those a
// partitioned table's key makes on each partition aside).
func foreignKeys(t *testing.T, e *Engine) []string {
	t.Helper()
	var keys []string
	read(t, e, func(t *tx) error {
		rows, err := t.pg.Query(t.ctx, `SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE contype = 'f' AND conparentid = 0 AND connamespace = current_schema()::regnamespace
			ORDER BY 1`)
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return keys
}

// copiedEvent is an event of org with a file and a comment, as a copy
// brings it: with its ids.
func copiedEvent(id, org int64, at time.Time) *store.Event {
	return &store.Event{ID: id, IMEI: "356938035643809", OrganizationID: org, Type: "button", Time: at, Lat: 52, Lon: 4,
		Severity: 2, Status: store.EventStatusNew, CreatedAt: at, DeviceEventID: fmt.Sprintf("d-%d", id),
		Files:    []store.EventFile{{CameraID: 1, FileID: fmt.Sprintf("clip-%d.mp4", id), FileType: store.FileVideo}},
		Comments: []store.EventComment{{ID: id * 10, Comment: "seen", CreatedByAudienceName: "partner", CreatedAt: at}}}
}

// A copy fills the tables it writes by COPY without checking their
// foreign keys row by row, and puts every key back when it is done: the
// schema then has the keys it had. Right after the events' COPY their
// identities give ids above the copied ones.
func TestCopyPutsForeignKeysBack(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	want := foreignKeys(t, e)
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	err := e.Load(context.Background(), func(l store.Load) error {
		t := l.(load).t
		p := &store.Partner{ID: 3, Name: "Partner", CreatedAt: at}
		if _, err := l.Put(store.KindPartners, pairs([]any{p})); err != nil {
			return err
		}
		org := &store.Organization{ID: 7, PartnerID: 3, Name: "Fleet", CreatedAt: at}
		if _, err := l.Put(store.KindOrganizations, pairs([]any{org})); err != nil {
			return err
		}
		events := []any{copiedEvent(41, 7, at), copiedEvent(42, 7, at.Add(time.Hour))}
		if _, err := l.Put(store.KindEvents, pairs(events)); err != nil {
			return err
		}
		for table, want := range map[string]int64{"events": 43, "event_comments": 421} {
			var next int64
			if err := t.pg.QueryRow(t.ctx, `SELECT nextval(pg_get_serial_sequence($1, 'id'))`, table).Scan(&next); err != nil {
				return err
			}
			if next != want {
				return fmt.Errorf("after the COPY the next %s id is %d, want %d", table, next, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := foreignKeys(t, e); !slices.Equal(got, want) {
		t.Errorf("after the copy the foreign keys are\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(want, "\n "))
	}
	read(t, e, func(t *tx) error {
		var files, comments int
		err := t.pg.QueryRow(t.ctx, `SELECT (SELECT count(*) FROM event_files), (SELECT count(*) FROM event_comments)`).
			Scan(&files, &comments)
		if err == nil && (files != 2 || comments != 2) {
			err = fmt.Errorf("%d event files and %d comments copied, want 2 and 2", files, comments)
		}
		return err
	})
}

// A copy whose records break a foreign key fails when the key is put
// back, and leaves nothing: no record, every key.
func TestCopyBreakingAForeignKeyLeavesNothing(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	want := foreignKeys(t, e)
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	err := e.Load(context.Background(), func(l store.Load) error {
		_, err := l.Put(store.KindEvents, pairs([]any{copiedEvent(1, 99, at)})) // no organization 99
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "events_organization_id_fkey") {
		t.Fatalf("a copy of an event of no organization: %v, want the key it breaks", err)
	}
	if got := foreignKeys(t, e); !slices.Equal(got, want) {
		t.Errorf("after the failed copy the foreign keys are\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(want, "\n "))
	}
	read(t, e, func(t *tx) error {
		var n int
		err := t.pg.QueryRow(t.ctx, `SELECT count(*) FROM events`).Scan(&n)
		if err == nil && n != 0 {
			err = fmt.Errorf("%d events left by the failed copy", n)
		}
		return err
	})
}

// pairs yields each of recs with a nil error, as a Dump's Records does.
func pairs(recs []any) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		for _, r := range recs {
			if !yield(r, nil) {
				return
			}
		}
	}
}
