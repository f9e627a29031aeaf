package postgres

import (
	"context"
	"fmt"
	"io/fs"
	"iter"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fleetcam/fleetcam/store"
)

// A copy between engines (store.Copy): the database read out from one
// REPEATABLE READ snapshot, and filled in one transaction, so that a copy
// that fails leaves nothing behind. Neither has a statement timeout: a
// COPY of a million events is one statement.

var (
	_ store.Dumper = (*Engine)(nil)
	_ store.Loader = (*Engine)(nil)
)

// Dump implements store.Dumper: one read-only REPEATABLE READ transaction.
func (e *Engine) Dump(ctx context.Context, fn func(store.Dump) error) error {
	t, err := e.copyTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer t.pg.Rollback(context.WithoutCancel(ctx))
	return fn(dump{t})
}

// Load implements store.Loader: one transaction, committed when fn returns
// nil and rolled back otherwise. The foreign keys of the tables it fills
// by COPY are checked once, when fn is done, rather than row by row (see
// uncheck).
func (e *Engine) Load(ctx context.Context, fn func(store.Load) error) error {
	t, err := e.copyTx(ctx, pgx.TxOptions{})
	if err != nil {
		return err
	}
	t.loading = &loading{}
	err = fn(load{t})
	if err == nil {
		err = t.loading.recheck(t)
	}
	if err != nil {
		t.pg.Rollback(context.WithoutCancel(ctx))
		return err
	}
	return classify(t.pg.Commit(ctx))
}

// loading is what a copy's Load keeps of its transaction: the foreign
// keys it took off the tables it fills by COPY, to be put back.
type loading struct {
	unchecked map[string]bool
	keys      []foreignKey
}

// foreignKey is a foreign key constraint of a table, as pg_get_constraintdef
// gives it.
type foreignKey struct{ table, name, def string }

// uncheck takes the foreign keys off table before the copy's first COPY
// into it, to put them back when the load is done (recheck): checking a
// key is a lookup per row, and one into a partitioned table (the files of
// a million events into the events) costs more than the COPY itself;
// adding the key back checks every row in one join. The transaction holds
// the tables meanwhile, and what it leaves has every key.
func (l *loading) uncheck(t *tx, table string) error {
	if l.unchecked[table] {
		return nil
	}
	keys, err := collect(t, func(row pgx.CollectableRow) (foreignKey, error) {
		k := foreignKey{table: table}
		return k, row.Scan(&k.name, &k.def)
	}, `SELECT conname::text, pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = $1::regclass AND contype = 'f' AND conparentid = 0 ORDER BY conname`, table)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := t.exec(`ALTER TABLE ` + pgx.Identifier{table}.Sanitize() + ` DROP CONSTRAINT ` +
			pgx.Identifier{k.name}.Sanitize()); err != nil {
			return err
		}
	}
	if l.unchecked == nil {
		l.unchecked = map[string]bool{}
	}
	l.unchecked[table] = true
	l.keys = append(l.keys, keys...)
	return nil
}

// recheck puts back the foreign keys uncheck took off, which checks every
// row.
func (l *loading) recheck(t *tx) error {
	for _, k := range l.keys {
		if _, err := t.exec(`ALTER TABLE ` + pgx.Identifier{k.table}.Sanitize() + ` ADD CONSTRAINT ` +
			pgx.Identifier{k.name}.Sanitize() + ` ` + k.def); err != nil {
			return fmt.Errorf("store: the copied %s break %s: %w", k.table, k.name, err)
		}
	}
	l.keys = nil
	return nil
}

// copyTx begins a transaction of a copy, without a statement timeout.
func (e *Engine) copyTx(ctx context.Context, o pgx.TxOptions) (*tx, error) {
	t, err := e.begin(ctx, o)
	if err != nil {
		return nil, err
	}
	if _, err := t.exec(`SET LOCAL statement_timeout = 0`); err != nil {
		t.pg.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return t, nil
}

// dump is the database read out by a copy.
type dump struct{ t *tx }

// SchemaVersion implements store.Dump: the store's version, once the
// schema is this version's (store.ErrOutdated when it is older).
func (d dump) SchemaVersion() (int, error) {
	applied, err := d.t.appliedMigration()
	if err != nil {
		return 0, err
	}
	latest, err := latestMigration()
	if err != nil {
		return 0, err
	}
	switch {
	case applied < latest:
		return 0, fmt.Errorf("%w: the database has schema version %d and this version's is %d: run fleetcam migrate on it first",
			store.ErrOutdated, applied, latest)
	case applied > latest:
		return 0, fmt.Errorf("%w: the database has schema version %d and this version knows up to %d",
			store.ErrNewerStore, applied, latest)
	}
	return d.t.SchemaVersion()
}

// Count implements store.Dump.
func (d dump) Count(k store.Kind) (int64, error) { return d.t.countKind(k) }

// Records implements store.Dump.
func (d dump) Records(k store.Kind) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		ck, ok := copyKinds[k]
		if !ok {
			yield(nil, unknownKind(k))
			return
		}
		if err := ck.dump(d.t, func(r any) bool { return yield(r, nil) }); err != nil {
			yield(nil, err)
		}
	}
}

// Sequences implements store.Dump: the last value of each identity.
func (d dump) Sequences() (map[store.Sequence]int64, error) {
	seqs := make(map[store.Sequence]int64, len(copySequences))
	for s, c := range copySequences {
		var v int64
		err := d.t.pg.QueryRow(d.t.ctx, `SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence($1, $2)::regclass), 0)`,
			c.table, c.column).Scan(&v)
		if err != nil {
			return nil, classify(err)
		}
		seqs[s] = v
	}
	return seqs, nil
}

// load is the database being filled by a copy.
type load struct{ t *tx }

// Count implements store.Load.
func (l load) Count(k store.Kind) (int64, error) { return l.t.countKind(k) }

// Put implements store.Load. Then the identity of each of the kind's
// tables gives next a value above every id the kind's records brought
// with them (a COPY sets ids and leaves the identity where it was).
func (l load) Put(k store.Kind, recs iter.Seq2[any, error]) (int64, error) {
	ck, ok := copyKinds[k]
	if !ok {
		return 0, unknownKind(k)
	}
	n, err := ck.put(l.t, k, recs)
	if err != nil {
		return n, err
	}
	for _, table := range ck.tables {
		if column, ok := identities[table]; ok {
			if err := l.t.identityPast(table, column); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// identities are the identity columns of the tables behind the
// store.Sequences, by table.
var identities = func() map[string]string {
	m := make(map[string]string, len(copySequences))
	for _, c := range copySequences {
		m[c.table] = c.column
	}
	return m
}()

// identityPast moves the identity of table's column past the column's
// highest value, if it is not past it already.
func (t *tx) identityPast(table, column string) error {
	_, err := t.exec(`SELECT setval(s, greatest(m, coalesce(pg_sequence_last_value(s), 0)))
		FROM (SELECT pg_get_serial_sequence($1, $2)::regclass AS s,
		             (SELECT max(`+pgx.Identifier{column}.Sanitize()+`) FROM `+pgx.Identifier{table}.Sanitize()+`) AS m) q
		WHERE m IS NOT NULL`, table, column)
	return err
}

// SetSequences implements store.Load: each identity gives next the value
// after seqs', or after the highest id copied, whichever is greater.
func (l load) SetSequences(seqs map[store.Sequence]int64) error {
	for s, v := range seqs {
		c, ok := copySequences[s]
		if !ok {
			return fmt.Errorf("store: the postgres engine has no sequence %s", s)
		}
		// setval(…, 1, false): the next value is 1, as in a new table.
		_, err := l.t.exec(`SELECT setval(q.s, greatest(v, 1), v > 0)
			FROM (SELECT pg_get_serial_sequence($1, $2)::regclass AS s) q,
			     LATERAL (SELECT greatest($3::bigint, coalesce(pg_sequence_last_value(q.s), 0)) AS v) w`,
			c.table, c.column, v)
		if err != nil {
			return err
		}
	}
	return nil
}

// countKind counts the records of kind k.
func (t *tx) countKind(k store.Kind) (int64, error) {
	ck, ok := copyKinds[k]
	if !ok {
		return 0, unknownKind(k)
	}
	sql := ck.count
	if sql == "" {
		sql = `SELECT count(*) FROM ` + pgx.Identifier{ck.tables[0]}.Sanitize()
	}
	return queryValue[int64](t, sql)
}

func unknownKind(k store.Kind) error { return fmt.Errorf("store: the postgres engine keeps no %s", k) }

// appliedMigration is the version of the last schema migration the
// database records (0 for a database without the schema).
func (t *tx) appliedMigration() (int64, error) {
	exists, err := queryValue[bool](t, `SELECT to_regclass('fleetcam_schema_migrations') IS NOT NULL`)
	if err != nil || !exists {
		return 0, err
	}
	return queryValue[int64](t, `SELECT coalesce(max(version_id), 0) FROM fleetcam_schema_migrations WHERE is_applied`)
}

// latestMigration is the version of the last migration of this fleetcam's
// schema: the number its file name starts with, or a Go migration's.
func latestMigration() (int64, error) {
	files, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, m := range goMigrations {
		latest = max(latest, m.version)
	}
	for _, f := range files {
		prefix, _, _ := strings.Cut(f.Name(), "_")
		v, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("store: migration %s has no version", f.Name())
		}
		latest = max(latest, v)
	}
	return latest, nil
}

// insertedAs stores each record with insert, which gives it the id the
// identity of table's id column gives, so that the record gets the id
// *id(r) holds now.
func insertedAs[T any](table string, id func(r *T) *int64, insert func(t *tx, r *T) error) putFunc {
	return each(func(t *tx, r *T) error {
		want := *id(r)
		if _, err := t.exec(`SELECT setval(pg_get_serial_sequence($1, 'id'), $2, false)`, table, want); err != nil {
			return err
		}
		if err := insert(t, r); err != nil {
			return err
		}
		if got := *id(r); got != want {
			return fmt.Errorf("store: postgres: %s %d was stored as %d", table, want, got)
		}
		return nil
	})
}

// copyRows writes the rows of recs into table's columns (a comma-separated
// list) by COPY, each record's row from row.
func copyRows[T any](t *tx, table, columns string, recs []*T, row func(*T) ([]any, error)) error {
	return copyInto(t, table, columns, len(recs), func(i int) ([]any, error) { return row(recs[i]) })
}

// copyInto writes n rows into table's columns by COPY, row i from row.
func copyInto(t *tx, table, columns string, n int, row func(i int) ([]any, error)) error {
	if n == 0 {
		return nil
	}
	if t.loading != nil {
		if err := t.loading.uncheck(t, table); err != nil {
			return err
		}
	}
	copied, err := t.pg.CopyFrom(t.ctx, pgx.Identifier{table}, columnNames(columns), pgx.CopyFromSlice(n, row))
	return copiedAll(table, n, copied, err)
}

// copier is where a path that writes events and the time series by COPY
// writes: rows by COPY, and the statements that go with them (the counts
// of the events copied, copyEvents).
type copier interface {
	// copyRows writes rows into table's columns (a comma-separated list)
	// by COPY.
	copyRows(table, columns string, rows [][]any) error
	// run runs a statement.
	run(sql string, args ...any) error
}

// txCopier is the copier of t's own statements (a copy's Load).
type txCopier struct{ t *tx }

// copyRows implements copier.
func (c txCopier) copyRows(table, columns string, rows [][]any) error {
	return copyInto(c.t, table, columns, len(rows), func(i int) ([]any, error) { return rows[i], nil })
}

// run implements copier.
func (c txCopier) run(sql string, args ...any) error {
	_, err := c.t.exec(sql, args...)
	return err
}

// connCopier is the copier of conn, whose transaction is a pipe's: for the
// COPYs that run on it while the pipe waits (bulk.go).
type connCopier struct {
	ctx  context.Context
	conn *pgxpool.Conn
}

// copyRows implements copier.
func (c connCopier) copyRows(table, columns string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	copied, err := c.conn.CopyFrom(c.ctx, pgx.Identifier{table}, columnNames(columns), pgx.CopyFromRows(rows))
	return copiedAll(table, len(rows), copied, err)
}

// run implements copier.
func (c connCopier) run(sql string, args ...any) error {
	_, err := c.conn.Exec(c.ctx, sql, args...)
	return classify(err)
}

// columnNames are the names of a comma-separated column list.
func columnNames(columns string) []string {
	names := strings.Split(columns, ",")
	for i, c := range names {
		names[i] = strings.TrimSpace(c)
	}
	return names
}

// copiedAll is the error of a COPY of n rows into table that copied
// copied of them.
func copiedAll(table string, n int, copied int64, err error) error {
	if err == nil && copied != int64(n) {
		err = fmt.Errorf("store: postgres: %d of %d rows of %s copied", copied, n, table)
	}
	return classify(err)
}
