package postgres

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// SQL conversions the record groups share.

// nullTime is t for a nullable timestamptz column: NULL for the zero time.
func nullTime(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: t.UTC(), Valid: true}
}

// timeOf is the time of a nullable timestamptz column, in UTC: the zero
// time for NULL.
func timeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid || t.InfinityModifier != pgtype.Finite {
		return time.Time{}
	}
	return t.Time.UTC()
}
