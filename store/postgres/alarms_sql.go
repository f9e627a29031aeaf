package postgres

import (
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// What the record types of every group share: Go's zero values as SQL
// NULLs, timestamptz's microseconds, and the WHERE clause of a filtered
// list.

// nullTime is t as a timestamptz parameter: NULL for the zero time.
func nullTime(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
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
