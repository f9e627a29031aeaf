package postgres

import (
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// What the record types of every group share: Go's zero values as SQL
// NULLs, timestamptz's microseconds, and the pages of a filtered list.

// nullTime is t as a timestamptz parameter: NULL for the zero time.
func nullTime(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

// timeOf is the time of a nullable timestamptz column, in UTC: the zero
// time for NULL (and for the infinities, which fleetcam never writes).
func timeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid || t.InfinityModifier != pgtype.Finite {
		return time.Time{}
	}
	return t.Time.UTC()
}

// zeroTime scans a timestamptz into *t: the zero time for NULL, else the
// time in UTC.
type zeroTime struct{ t *time.Time }

// ScanTimestamptz implements pgtype.TimestamptzScanner.
func (z zeroTime) ScanTimestamptz(v pgtype.Timestamptz) error {
	*z.t = time.Time{}
	if v.Valid {
		*z.t = v.Time.UTC()
	}
	return nil
}

// nullID is id as a bigint parameter of a reference: NULL for 0, which is
// no record.
func nullID(id int64) pgtype.Int8 { return pgtype.Int8{Int64: id, Valid: id != 0} }

// zeroID scans a nullable bigint into *id: 0 for NULL.
type zeroID struct{ id *int64 }

// ScanInt64 implements pgtype.Int64Scanner.
func (z zeroID) ScanInt64(v pgtype.Int8) error {
	*z.id = 0
	if v.Valid {
		*z.id = v.Int64
	}
	return nil
}

// where builds the WHERE clause of a filtered list and its parameters.
type where struct {
	conds []string
	args  []any
}

// arg adds the parameter v and returns its placeholder.
func (w *where) arg(v any) string {
	w.args = append(w.args, v)
	return "$" + strconv.Itoa(len(w.args))
}

// and adds a condition, which all must meet.
func (w *where) and(cond string) { w.conds = append(w.conds, cond) }

// String is the clause, with a leading space; empty without conditions.
func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// trueKeys returns the keys of set whose value is true, which a filter's
// set admits, as the parameter of an = ANY condition.
func trueKeys[K comparable](set map[K]bool) []K {
	keys := make([]K, 0, len(set))
	for k, ok := range set {
		if ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// listPage runs the query "SELECT count(*) OVER (), <columns> FROM
// <from><w> ORDER BY <order>" for the page p, scanning each row with
// fields, and returns the page and how many rows w admits in all. A page
// past the end has no row to carry the count, which a second statement
// then counts.
func listPage[T any](t *tx, columns, from string, w *where, order string, p store.Page, fields func(*T) []any) ([]T, int, error) {
	filterArgs := len(w.args)
	sql := "SELECT count(*) OVER (), " + columns + " FROM " + from + w.String() +
		" ORDER BY " + order + " LIMIT " + w.arg(limitParam(p.Limit)) + " OFFSET " + w.arg(max(p.Offset, 0))
	rows, err := t.pg.Query(t.ctx, sql, w.args...)
	if err != nil {
		return nil, 0, classify(err)
	}
	var page []T
	total := 0
	for rows.Next() {
		var r T
		if err := rows.Scan(append([]any{&total}, fields(&r)...)...); err != nil {
			rows.Close()
			return nil, 0, classify(err)
		}
		page = append(page, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, classify(err)
	}
	if len(page) == 0 && p.Offset > 0 {
		err := t.pg.QueryRow(t.ctx, "SELECT count(*) FROM "+from+w.String(), w.args[:filterArgs]...).Scan(&total)
		if err != nil {
			return nil, 0, classify(err)
		}
	}
	return page, total, nil
}

// limitParam is a limit as a LIMIT parameter: NULL (no limit) for 0 or
// less.
func limitParam(limit int) pgtype.Int8 {
	return pgtype.Int8{Int64: int64(limit), Valid: limit > 0}
}

// getOne scans the single row of sql into fields; store.ErrNotFound when
// there is none.
func getOne(t *tx, sql string, fields []any, args ...any) error {
	return classify(t.pg.QueryRow(t.ctx, sql, args...).Scan(fields...))
}

// queryValue is the one value of the single row of sql; store.ErrNotFound
// when there is no row.
func queryValue[T any](t *tx, sql string, args ...any) (T, error) {
	var v T
	err := getOne(t, sql, []any{&v}, args...)
	return v, err
}

// getRecord is the record the single row of sql holds, scanned into the
// fields fields gives; store.ErrNotFound when there is none.
func getRecord[T any](t *tx, sql string, fields func(*T) []any, args ...any) (*T, error) {
	r := new(T)
	if err := getOne(t, sql, fields(r), args...); err != nil {
		return nil, err
	}
	return r, nil
}

// scanRecord reads a row into the scan destinations of a row type R and
// returns the record R decodes of them.
func scanRecord[T, R any, P interface {
	*R
	fields() []any
	record() (T, error)
}](row pgx.Row) (*T, error) {
	var r R
	if err := row.Scan(P(&r).fields()...); err != nil {
		return nil, err
	}
	rec, err := P(&r).record()
	return &rec, err
}

// collect is the records of the rows sql selects, in its order, each read
// by scan; nil when there is none.
func collect[T any](t *tx, scan pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	rows, err := t.pg.Query(t.ctx, sql, args...)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.AppendRows([]T(nil), rows, scan)
	return out, classify(err)
}

// scanFields is the scan of collect for the fields fields gives of a
// record.
func scanFields[T any](fields func(*T) []any) pgx.RowToFunc[T] {
	return func(row pgx.CollectableRow) (T, error) {
		var r T
		err := row.Scan(fields(&r)...)
		return r, err
	}
}

// scanValue is the scan of collect for a pointer scan: the record it
// read.
func scanValue[T any](scan func(pgx.Row) (*T, error)) pgx.RowToFunc[T] {
	return func(row pgx.CollectableRow) (T, error) {
		r, err := scan(row)
		if err != nil {
			var zero T
			return zero, err
		}
		return *r, nil
	}
}

// affected is err, or ErrNotFound of what when the statement changed no row.
// Its arguments are made on every call, found or not: not for the writes
// of device ingest.
func affected(tag pgconn.CommandTag, err error, what string, args ...any) error {
	if err == nil && tag.RowsAffected() == 0 {
		return store.NotFound(what, args...)
	}
	return err
}

// A timestamptz keeps microseconds, a time.Time nanoseconds. A stored time
// is a whole number of microseconds, so comparing it with a Go time t that
// has a fraction of one is the same as comparing it with t rounded to the
// side the comparison keeps: "stored >= t" is "stored >= ceilMicro(t)",
// "stored <= t" is "stored <= floorMicro(t)" and "stored < t" is
// "stored < ceilMicro(t)". (pgx itself drops the fraction, which rounds
// down.)

// floorMicro is t rounded down to the microsecond.
func floorMicro(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// ceilMicro is t rounded up to the microsecond.
func ceilMicro(t time.Time) time.Time {
	f := t.Truncate(time.Microsecond)
	if f.Before(t) {
		return f.Add(time.Microsecond)
	}
	return f
}
