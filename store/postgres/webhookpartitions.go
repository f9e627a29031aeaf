package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The monthly partitions of the audit log, the messages and the webhook
// deliveries around now: webhookMonthsBack months before the current one,
// the current one and webhookMonthsAhead after it. The audit log and the
// deliveries are written at the time of the transaction; a message carries
// the time of its fact, which a device's clock may put in an earlier month.
const (
	webhookMonthsBack  = 2
	webhookMonthsAhead = 3
)

// webhookPartitionsLockID is the key of the transaction advisory lock under
// which engines starting together create these partitions one after
// another ("whkparts" in ASCII).
const webhookPartitionsLockID = 0x77686b7061727473

// webhookSeries are the partitioned tables of the webhook records and the
// column each is partitioned by.
var webhookSeries = []struct{ table, column string }{
	{"audit_log", "logged_at"},
	{"messages", "occurred_at"},
	{"webhook_deliveries", "created_at"},
}

// ensureWebhookPartitions creates the monthly partitions of audit_log,
// messages and webhook_deliveries of the months around now that do not
// exist yet.
//
// A row of a month without its partition (a message whose device clock ran
// months ahead, say) is in the table's default partition, and PostgreSQL
// refuses to create the partition of a month the default partition has
// rows of: such rows move to their month's new partition in the same
// transaction, keeping their ids.
func ensureWebhookPartitions(ctx context.Context, e *Engine, now time.Time) error {
	now = now.UTC()
	first := time.Date(now.Year(), now.Month()-webhookMonthsBack, 1, 0, 0, 0, 0, time.UTC)
	months := webhookMonthsBack + 1 + webhookMonthsAhead
	end := first.AddDate(0, months, 0)
	return classify(pgx.BeginFunc(ctx, e.pool, func(t pgx.Tx) error {
		if _, err := t.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(webhookPartitionsLockID)); err != nil {
			return err
		}
		for _, s := range webhookSeries {
			if err := ensureMonths(ctx, t, s.table, s.column, first, end, months); err != nil {
				return fmt.Errorf("partitions of %s: %w", s.table, err)
			}
		}
		return nil
	}))
}

// ensureMonths creates the partitions of table's months from first to end
// (months of them), moving the rows of those months out of its default
// partition and back once the partitions exist.
func ensureMonths(ctx context.Context, t pgx.Tx, table, column string, first, end time.Time, months int) error {
	ident := pgx.Identifier{table}.Sanitize()
	def := pgx.Identifier{table + "_default"}.Sanitize()
	moving := pgx.Identifier{table + "_moving"}.Sanitize()
	col := pgx.Identifier{column}.Sanitize()
	var strays bool
	err := t.QueryRow(ctx, `SELECT EXISTS (SELECT FROM `+def+` WHERE `+col+` >= $1 AND `+col+` < $2)`,
		first, end).Scan(&strays)
	if err != nil {
		return err
	}
	if strays {
		if _, err := t.Exec(ctx, `CREATE TEMPORARY TABLE `+moving+` (LIKE `+ident+`) ON COMMIT DROP`); err != nil {
			return err
		}
		_, err := t.Exec(ctx, `WITH moved AS (DELETE FROM `+def+` WHERE `+col+` >= $1 AND `+col+` < $2 RETURNING *)
			INSERT INTO `+moving+` SELECT * FROM moved`, first, end)
		if err != nil {
			return err
		}
	}
	if _, err := t.Exec(ctx, `SELECT fleetcam_ensure_month_partitions($1, $2, $3)`, table, first, months); err != nil {
		return err
	}
	if strays {
		if _, err := t.Exec(ctx, `INSERT INTO `+ident+` SELECT * FROM `+moving); err != nil {
			return err
		}
	}
	return nil
}
