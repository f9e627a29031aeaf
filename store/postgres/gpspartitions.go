package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// The monthly partitions of gps_samples around now: trackMonthsBack
// months before the current one, the current one and trackMonthsAhead
// after it, so that the partitions of the coming months exist long before
// the first sample of each arrives.
const (
	trackMonthsBack  = 2
	trackMonthsAhead = 3
)

// trackPartitionsLockID is the key of the transaction advisory lock under
// which engines starting together create the partitions of gps_samples one
// after another ("gpsparts" in ASCII).
const trackPartitionsLockID = 0x6770737061727473

// ensureTrackPartitions creates the monthly partitions of gps_samples of
// the months around now that do not exist yet.
//
// A sample of a month without its partition (a device clock months ahead)
// is in gps_samples_default, and PostgreSQL refuses to create the
// partition of a month the default partition has rows of: such rows move
// to their month's new partition in the same transaction.
func ensureTrackPartitions(ctx context.Context, e *Engine, now time.Time) error {
	now = now.UTC()
	first := time.Date(now.Year(), now.Month()-trackMonthsBack, 1, 0, 0, 0, 0, time.UTC)
	months := trackMonthsBack + 1 + trackMonthsAhead
	end := first.AddDate(0, months, 0)
	return classify(pgx.BeginFunc(ctx, e.pool, func(t pgx.Tx) error {
		if _, err := t.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(trackPartitionsLockID)); err != nil {
			return err
		}
		var strays bool
		err := t.QueryRow(ctx, `SELECT EXISTS (SELECT FROM gps_samples_default WHERE sampled_at >= $1 AND sampled_at < $2)`,
			first, end).Scan(&strays)
		if err != nil {
			return err
		}
		if strays {
			_, err := t.Exec(ctx, `CREATE TEMPORARY TABLE gps_samples_moving (LIKE gps_samples) ON COMMIT DROP`)
			if err != nil {
				return err
			}
			_, err = t.Exec(ctx, `WITH moved AS (
					DELETE FROM gps_samples_default WHERE sampled_at >= $1 AND sampled_at < $2 RETURNING *)
				INSERT INTO gps_samples_moving SELECT * FROM moved`, first, end)
			if err != nil {
				return err
			}
		}
		if _, err := t.Exec(ctx, `SELECT fleetcam_ensure_month_partitions('gps_samples', $1, $2)`, first, months); err != nil {
			return err
		}
		if strays {
			if _, err := t.Exec(ctx, `INSERT INTO gps_samples SELECT * FROM gps_samples_moving`); err != nil {
				return err
			}
		}
		return nil
	}))
}
