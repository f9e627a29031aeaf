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
	key := func(v []any) string {
		return fmt.Sprintf("organization %d %s %s", v[0], v[1].(time.Time).UTC().Format(time.RFC3339), v[2])
	}
	return readCounts(tb, conn, `SELECT organization_id, hour, type, sum(events)::bigint FROM event_hours
			GROUP BY 1, 2, 3 HAVING sum(events) <> 0`, key),
		readCounts(tb, conn, `SELECT organization_id, date_trunc('hour', time, 'UTC'), type, count(*) FROM events
			GROUP BY 1, 2, 3`, key)
}

// PostgresDeviceDayCounts reads the daily event counts of the devices a
// PostgreSQL store keeps (device_event_days), by device, ownership, UTC day
// and type, summed over nodes with the days of 0 left out, and the same
// counted from the events themselves: after any write path the two are
// equal.
func PostgresDeviceDayCounts(tb testing.TB, conn *pgx.Conn) (kept, stored map[string]int64) {
	tb.Helper()
	key := func(v []any) string {
		return fmt.Sprintf("device %s ownership %d %s %s", v[0], v[1], v[2].(time.Time).UTC().Format(time.DateOnly), v[3])
	}
	return readCounts(tb, conn, `SELECT imei, ownership, day, type, sum(events)::bigint FROM device_event_days
			GROUP BY 1, 2, 3, 4 HAVING sum(events) <> 0`, key),
		readCounts(tb, conn, `SELECT imei, ownership, date_trunc('day', time, 'UTC'), type, count(*) FROM events
			GROUP BY 1, 2, 3, 4`, key)
}

// readCounts reads the counts sql selects, each row's last column, under
// the key that key makes of its other columns.
func readCounts(tb testing.TB, conn *pgx.Conn, sql string, key func(v []any) string) map[string]int64 {
	tb.Helper()
	rows, err := conn.Query(tb.Context(), sql)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			tb.Fatal(err)
		}
		out[key(v[:len(v)-1])] = v[len(v)-1].(int64)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}
