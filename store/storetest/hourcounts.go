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
