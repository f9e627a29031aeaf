package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Conversions between the store's zero values and SQL NULL, and the
// creation of monthly partitions: what every record group's SQL needs.

// nullZero is v as a query argument, NULL for its zero value: the columns
// of a member the record may lack are NULL rather than 0 or an empty string.
func nullZero[T comparable](v T) any {
	var zero T
	if v == zero {
		return nil
	}
	return v
}

// zeroNull is the value of a nullable column scanned into p: the zero
// value for NULL.
func zeroNull[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// partitionLockID is the key of the transaction advisory lock under which
// the monthly partitions are created, so that processes starting together
// do not race to create the same partition ("fleetpar" in ASCII).
const partitionLockID = 0x666c656574706172

// ensureMonthPartitions creates the monthly partitions of each table from
// monthsBefore months before now's month to monthsAfter months after it,
// those that do not exist yet, in one transaction.
//
// A month whose rows already went to the table's default partition (a
// device clock months ahead, when that month had no partition yet) cannot
// be given a partition without moving them: that month is left to the
// default partition, which answers its queries as well, rather than
// failing the start of the engine.
func ensureMonthPartitions(ctx context.Context, e *Engine, now time.Time, monthsBefore, monthsAfter int, tables ...string) error {
	now = now.UTC()
	first := time.Date(now.Year(), now.Month()-time.Month(monthsBefore), 1, 0, 0, 0, 0, time.UTC)
	return pgx.BeginFunc(ctx, e.pool, func(t pgx.Tx) error {
		if _, err := t.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(partitionLockID)); err != nil {
			return classify(err)
		}
		for _, table := range tables {
			for i := range monthsBefore + 1 + monthsAfter {
				month := first.AddDate(0, i, 0)
				err := pgx.BeginFunc(ctx, t, func(sp pgx.Tx) error {
					_, err := sp.Exec(ctx, `SELECT fleetcam_ensure_month_partitions($1::regclass, $2::date, 1)`, table, month)
					return err
				})
				var pe *pgconn.PgError
				if errors.As(err, &pe) && pe.Code == "23514" { // check_violation: rows of the month in the default partition
					continue
				}
				if err != nil {
					return classify(fmt.Errorf("partition of %s for %s: %w", table, month.Format("2006-01"), err))
				}
			}
		}
		return nil
	})
}
