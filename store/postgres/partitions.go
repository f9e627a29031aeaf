package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The time series are tables partitioned by range of a timestamptz column
// (migrations 00001 and 00009), one partition per UTC day or month, named
// <table>_yYYYYmMMdDD or <table>_yYYYYmMM, plus a default partition for
// rows outside the ranges that exist (a device clock weeks off). The series
// that grow fastest and are purged by day are partitioned by day, so the
// retention purge drops a due day whole (partitiondrop.go); the others by
// month.

// partitionUnit is the time range of one partition.
type partitionUnit string

const (
	day   partitionUnit = "day"
	month partitionUnit = "month"
)

// start is the first instant of the unit that holds t.
func (u partitionUnit) start(t time.Time) time.Time {
	t = t.UTC()
	if u == month {
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// add is t moved by n units.
func (u partitionUnit) add(t time.Time, n int) time.Time {
	if u == month {
		return t.AddDate(0, n, 0)
	}
	return t.AddDate(0, 0, n)
}

// partitionedTable is one partitioned table and the partitions the engine
// keeps ready for it: back units before the current one, the current one,
// and ahead after it.
type partitionedTable struct {
	table, column string
	unit          partitionUnit
	back, ahead   int
	// moveStrays makes a new partition take the rows of its range that
	// went to the default partition before it existed, in the same
	// transaction (PostgreSQL refuses to create it otherwise). A table
	// others' foreign keys cascade from cannot move rows (deleting them
	// from the default partition would delete what refers to them): a
	// range of it with such rows is left to the default partition, which
	// answers its queries as well.
	moveStrays bool
}

// partitionedTables lists every partitioned table, parents before the
// tables whose foreign keys refer to them.
//
// Days: the two days before today are ready for a device that reports its
// GPS and events late; what a device kept for longer goes to the default
// partition, which the purge empties record by record. (A longer span back
// would recreate, empty, the days the purge of a short retention drops.)
// GPS samples are ready two days ahead (the retention purge makes the next
// ones hourly, and a server makes them at start): every group commit reads
// its devices' latest samples from now back (memo.go, gpsAhead), and each
// partition in that range, empty or not, costs every device an index
// probe. Events, read by window, are ready a week ahead. The audit log and the deliveries are
// written at the time of the transaction, messages at the time of their
// fact; all three are pruned by id or age and stay monthly.
var partitionedTables = []partitionedTable{
	{table: "gps_samples", column: "sampled_at", unit: day, back: 2, ahead: 2, moveStrays: true},
	{table: "events", column: "time", unit: day, back: 2, ahead: 7},
	{table: "event_files", column: "event_time", unit: day, back: 2, ahead: 7},
	{table: "audit_log", column: "logged_at", unit: month, back: 2, ahead: 3, moveStrays: true},
	{table: "messages", column: "occurred_at", unit: month, back: 2, ahead: 3, moveStrays: true},
	{table: "webhook_deliveries", column: "created_at", unit: month, back: 2, ahead: 3, moveStrays: true},
}

// partitionsLockID is the key of the transaction advisory lock under which
// engines starting together create partitions one after another
// ("fleetpar" in ASCII).
const partitionsLockID = 0x666c656574706172

// ensurePartitions creates the partitions of every table in tables around
// now that do not exist yet, in one transaction.
func ensurePartitions(ctx context.Context, e *Engine, now time.Time, tables []partitionedTable) error {
	return classify(pgx.BeginFunc(ctx, e.pool, func(t pgx.Tx) error {
		if _, err := t.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(partitionsLockID)); err != nil {
			return err
		}
		for _, p := range tables {
			if err := p.ensure(ctx, t, now); err != nil {
				return fmt.Errorf("partitions of %s: %w", p.table, err)
			}
		}
		return nil
	}))
}

// ensure creates the partitions of p around now that do not exist yet.
func (p partitionedTable) ensure(ctx context.Context, t pgx.Tx, now time.Time) error {
	first := p.unit.add(p.unit.start(now), -p.back)
	return p.ensureRange(ctx, t, first, p.unit.add(first, p.back+1+p.ahead))
}

// ensureRange creates the partitions of p from first, the start of a
// unit, to end that do not exist yet.
func (p partitionedTable) ensureRange(ctx context.Context, t pgx.Tx, first, end time.Time) error {
	if p.moveStrays {
		return p.ensureMoving(ctx, t, first, end)
	}
	for at := first; at.Before(end); at = p.unit.add(at, 1) {
		// A savepoint per range: a range whose rows are in the default
		// partition fails alone.
		err := pgx.BeginFunc(ctx, t, func(sp pgx.Tx) error {
			_, err := sp.Exec(ctx, `SELECT fleetcam_ensure_partition($1::regclass, $2, $3::date)`, p.table, string(p.unit), at)
			return err
		})
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23514" { // check_violation: rows of the range in the default partition
			continue
		}
		if err != nil {
			return fmt.Errorf("%s of %s: %w", p.unit, at.Format(time.DateOnly), err)
		}
	}
	return nil
}

// ensureMoving creates the partitions from first to end, moving the rows
// of that span out of the default partition and back once they exist.
func (p partitionedTable) ensureMoving(ctx context.Context, t pgx.Tx, first, end time.Time) error {
	ident := pgx.Identifier{p.table}.Sanitize()
	def := pgx.Identifier{p.table + "_default"}.Sanitize()
	moving := pgx.Identifier{p.table + "_moving"}.Sanitize()
	col := pgx.Identifier{p.column}.Sanitize()
	var strays bool
	err := t.QueryRow(ctx, `SELECT EXISTS (SELECT FROM `+def+` WHERE `+col+` >= $1 AND `+col+` < $2)`,
		first, end).Scan(&strays)
	if err != nil {
		return err
	}
	if strays {
		// Made once per transaction (a bulk transaction may move the
		// strays of several ranges), and emptied after each.
		if _, err := t.Exec(ctx, `CREATE TEMPORARY TABLE IF NOT EXISTS `+moving+` (LIKE `+ident+`) ON COMMIT DROP`); err != nil {
			return err
		}
		_, err := t.Exec(ctx, `WITH moved AS (DELETE FROM `+def+` WHERE `+col+` >= $1 AND `+col+` < $2 RETURNING *)
			INSERT INTO `+moving+` SELECT * FROM moved`, first, end)
		if err != nil {
			return err
		}
	}
	for at := first; at.Before(end); at = p.unit.add(at, 1) {
		if _, err := t.Exec(ctx, `SELECT fleetcam_ensure_partition($1::regclass, $2, $3::date)`, p.table, string(p.unit), at); err != nil {
			return fmt.Errorf("%s of %s: %w", p.unit, at.Format(time.DateOnly), err)
		}
	}
	if strays {
		if _, err := t.Exec(ctx, `WITH moved AS (DELETE FROM `+moving+` RETURNING *) INSERT INTO `+ident+` SELECT * FROM moved`); err != nil {
			return err
		}
	}
	return nil
}
