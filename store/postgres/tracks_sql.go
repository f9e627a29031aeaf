package postgres

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// What the tracks group adds to the helpers every group shares (sql.go):
// bounds of time ranges beyond timestamptz, and times to the millisecond.

// The range of timestamptz: from 4714-11-24 BC (Go's year -4713), up to
// but not including the year 294277.
var (
	minTimestamptz = time.Date(-4713, 11, 24, 0, 0, 0, 0, time.UTC)
	endTimestamptz = time.Date(294277, 1, 1, 0, 0, 0, 0, time.UTC)
)

// timeBound is t as a timestamptz parameter that bounds a range: -infinity
// or infinity for a time before or after every timestamptz (the store ends
// an open range at the largest time.Time of unix milliseconds), which the
// driver would otherwise encode wrapped around.
func timeBound(t time.Time) pgtype.Timestamptz {
	switch {
	case t.Before(minTimestamptz):
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	case !t.Before(endTimestamptz):
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

// milli is t truncated to its unix millisecond, in UTC: the key of the
// records kept by device and millisecond.
func milli(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }
