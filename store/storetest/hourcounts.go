package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresHourCounts reads the hourly event counts a PostgreSQL store keeps
// (event_hours), by organization, UTC hour and type, summed over partners
// and nodes with the hours of 0 left out, and the same counted from the
// events themselves: after any write path the two are equal.
func PostgresHourCounts(tb testing.TB, conn *pgx.Conn) (kept, stored map[string]int64) {
	tb.Helper()
	read := func(sql string) map[string]int64 {
		rows, err := conn.Query(tb.Context(), sql)
		if err != nil {
			tb.Fatal(err)
		}
		out := map[string]int64{}
		var org, n int64
		var hour time.Time
		var typ string
		_, err = pgx.ForEachRow(rows, []any{&org, &hour, &typ, &n}, func() error {
			out[fmt.Sprintf("organization %d %s %s", org, hour.UTC().Format(time.RFC3339), typ)] = n
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		return out
	}
	return read(`SELECT organization_id, hour, type, sum(events)::bigint FROM event_hours GROUP BY 1, 2, 3 HAVING sum(events) <> 0`),
		read(`SELECT organization_id, date_trunc('hour', time, 'UTC'), type, count(*) FROM events GROUP BY 1, 2, 3`)
}

// PostgresDeviceDayCounts reads the daily event counts of the devices a
// PostgreSQL store keeps (device_event_days), by device, ownership, UTC day
// and type, summed over nodes with the days of 0 left out, and the same
// counted from the events themselves: after any write path the two are
// equal.
func PostgresDeviceDayCounts(tb testing.TB, conn *pgx.Conn) (kept, stored map[string]int64) {
	tb.Helper()
	read := func(sql string) map[string]int64 {
		rows, err := conn.Query(tb.Context(), sql)
		if err != nil {
			tb.Fatal(err)
		}
		out := map[string]int64{}
		var imei, typ string
		var ownership, n int64
		var day time.Time
		_, err = pgx.ForEachRow(rows, []any{&imei, &ownership, &day, &typ, &n}, func() error {
			out[fmt.Sprintf("device %s ownership %d %s %s", imei, ownership, day.UTC().Format(time.DateOnly), typ)] = n
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		return out
	}
	return read(`SELECT imei, ownership, day, type, sum(events)::bigint FROM device_event_days GROUP BY 1, 2, 3, 4 HAVING sum(events) <> 0`),
		read(`SELECT imei, ownership, date_trunc('day', time, 'UTC'), type, count(*) FROM events GROUP BY 1, 2, 3, 4`)
}
