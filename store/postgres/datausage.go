package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// dataUsagePeriods are the data_usage_periods rows, by device and period
// start (to the millisecond).
type dataUsagePeriods struct{ t *tx }

// DataUsagePeriods implements store.DeviceStateRecords.
func (t *tx) DataUsagePeriods() store.DataUsagePeriodRecords { return dataUsagePeriods{t} }

// Put implements store.DataUsagePeriodRecords.
func (r dataUsagePeriods) Put(p *store.DataUsagePeriod) error {
	_, err := r.t.exec(`INSERT INTO data_usage_periods (imei, `+dataUsageColumns+`)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (imei, period_start) DO UPDATE SET bytes_up = EXCLUDED.bytes_up,
			bytes_down = EXCLUDED.bytes_down, received_at = EXCLUDED.received_at`, dataUsageArgs(p)...)
	return err
}

// dataUsageColumns are the columns of a period's row after its IMEI, which
// scanDataUsage reads.
const dataUsageColumns = `period_start, bytes_up, bytes_down, received_at`

// dataUsageArgs are the values of the IMEI and dataUsageColumns for p: its
// start to the millisecond.
func dataUsageArgs(p *store.DataUsagePeriod) []any {
	return []any{p.IMEI, milli(p.PeriodStart), p.BytesUp, p.BytesDown, p.ReceivedAt.UTC()}
}

// scanDataUsage reads the columns of before, then dataUsageColumns into p.
func scanDataUsage(row pgx.Row, p *store.DataUsagePeriod, before ...any) error {
	err := row.Scan(append(before, &p.PeriodStart, &p.BytesUp, &p.BytesDown, &p.ReceivedAt)...)
	p.PeriodStart, p.ReceivedAt = p.PeriodStart.UTC(), p.ReceivedAt.UTC()
	return err
}

// Latest implements store.DataUsagePeriodRecords: the primary key read
// backwards.
func (r dataUsagePeriods) Latest(imei string, n int) ([]store.DataUsagePeriod, error) {
	return collect(r.t, func(row pgx.CollectableRow) (store.DataUsagePeriod, error) {
		p := store.DataUsagePeriod{IMEI: imei}
		return p, scanDataUsage(row, &p)
	}, `SELECT `+dataUsageColumns+` FROM data_usage_periods
		WHERE imei = $1 ORDER BY period_start DESC LIMIT $2`, imei, limitParam(n))
}

// DeleteDevice implements store.DataUsagePeriodRecords.
func (r dataUsagePeriods) DeleteDevice(imei string) error {
	_, err := r.t.exec(`DELETE FROM data_usage_periods WHERE imei = $1`, imei)
	return err
}

// usagePosition is the key of a data_usage_periods row; as a resume
// position, the period the next batch starts at.
type usagePosition struct {
	IMEI        string    `json:"imei"`
	PeriodStart time.Time `json:"periodStart"`
}

// usageDevicesSQL finds, after (or from, with op >=) the IMEI $1, the next
// $2 devices with periods and the start of each one's oldest, skipping
// from device to device through the primary key.
const usageDevicesSQL = `WITH RECURSIVE d (imei, oldest) AS (
		(SELECT imei, period_start FROM data_usage_periods WHERE imei %s $1 ORDER BY imei, period_start LIMIT 1)
	UNION ALL
		SELECT n.imei, n.period_start FROM d CROSS JOIN LATERAL (SELECT imei, period_start FROM data_usage_periods
			WHERE imei > d.imei ORDER BY imei, period_start LIMIT 1) n
	)
	SELECT imei, oldest FROM d LIMIT $2`

// Purge implements store.DataUsagePeriodRecords. It walks the devices a
// hundred at a time with the start of each one's oldest period, passes
// over those whose oldest period is not older than their latest cutoff,
// reads the older periods of the others up to the first that is not due,
// and deletes those due in one statement at the end. The resume position
// is the key of the next due period.
func (r dataUsagePeriods) Purge(p store.SeriesPurge) (int, []byte, error) {
	var from *usagePosition
	after, op := "", ">=" // the walk starts at the device of the resume position
	if p.From != nil {
		from = new(usagePosition)
		if err := decodePosition(p.From, from); err != nil {
			return 0, nil, err
		}
		after = from.IMEI
	}
	var doomed []usagePosition
	var resume *usagePosition
walk:
	for {
		devices, err := r.t.purgeDevices(fmt.Sprintf(usageDevicesSQL, op), after)
		if err != nil {
			return 0, nil, err
		}
		for _, d := range devices {
			after, op = d.imei, ">"
			oc, err := p.Owners(d.imei)
			if err != nil {
				return 0, nil, err
			}
			latest := oc.Latest()
			if !d.oldest.Before(latest) {
				continue // nothing of this device is due
			}
			start, startOp := time.Time{}, ""
			if from != nil && from.IMEI == d.imei {
				start, startOp = from.PeriodStart, ">="
			}
			// The periods carry no ownership (0): once one is not due, no
			// later one of the device is.
			for more := true; more; {
				n := max(p.Limit+1-len(doomed), purgeRowsPerQuery)
				starts, err := r.periodsBefore(d.imei, latest, start, startOp, n)
				if err != nil {
					return 0, nil, err
				}
				more = len(starts) == n
				for _, at := range starts {
					if !oc.Purgeable(0, at) {
						more = false
						break
					}
					if p.Limit > 0 && len(doomed) >= p.Limit {
						resume = &usagePosition{IMEI: d.imei, PeriodStart: at}
						break walk
					}
					doomed = append(doomed, usagePosition{IMEI: d.imei, PeriodStart: at})
				}
				if more {
					start, startOp = starts[len(starts)-1], ">"
				}
			}
		}
		if len(devices) < purgeDevicesPerQuery {
			break
		}
	}
	if len(doomed) > 0 {
		imeis, starts := make([]string, len(doomed)), make([]time.Time, len(doomed))
		for i, d := range doomed {
			imeis[i], starts[i] = d.IMEI, d.PeriodStart
		}
		if _, err := r.t.exec(`DELETE FROM data_usage_periods u
			USING unnest($1::text[], $2::timestamptz[]) AS d (imei, period_start)
			WHERE u.imei = d.imei AND u.period_start = d.period_start`, imeis, starts); err != nil {
			return 0, nil, err
		}
	}
	if resume == nil {
		return len(doomed), nil, nil
	}
	pos, err := encodePosition(resume)
	return len(doomed), pos, err
}

// periodsBefore returns the starts of up to n periods of imei that start
// before before, oldest first, from start (with op; from the first when op
// is empty).
func (r dataUsagePeriods) periodsBefore(imei string, before, start time.Time, op string, n int) ([]time.Time, error) {
	sql := `SELECT period_start FROM data_usage_periods WHERE imei = $1 AND period_start < $2`
	args := []any{imei, ceilMicro(before), n}
	if op != "" {
		sql += ` AND period_start ` + op + ` $4`
		args = append(args, start)
	}
	starts, err := collect(r.t, pgx.RowTo[time.Time], sql+` ORDER BY period_start LIMIT $3`, args...)
	for i := range starts {
		starts[i] = starts[i].UTC()
	}
	return starts, err
}
