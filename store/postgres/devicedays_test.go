package postgres

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// dayKey is one daily count: a device's events of one ownership, UTC day
// and type.
type dayKey struct {
	imei      string
	ownership int64
	day       time.Time
	typ       string
}

func (k dayKey) String() string {
	return fmt.Sprintf("device %s ownership %d %s %s", k.imei, k.ownership, k.day.Format(time.DateOnly), k.typ)
}

// dayCountsOf counts evs by device and day, as the tests expect them: Go's
// own UTC day of each event's time.
func dayCountsOf(evs []*store.Event) map[dayKey]int64 {
	out := map[dayKey]int64{}
	for _, e := range evs {
		out[dayKey{e.IMEI, e.Ownership, e.Time.UTC().Truncate(24 * time.Hour), e.Type}]++
	}
	return out
}

// readDayCounts reads the daily counts of sql's rows (imei, ownership,
// day, type, count), leaving out those of 0.
func readDayCounts(t *testing.T, e *Engine, sql string, args ...any) map[dayKey]int64 {
	t.Helper()
	return readKeyedCounts(t, e, sql, args, func(k *dayKey) []any { return []any{&k.imei, &k.ownership, &k.day, &k.typ} })
}

// keptDayCounts are the engine's daily counts, summed over the nodes.
func keptDayCounts(t *testing.T, e *Engine) map[dayKey]int64 {
	t.Helper()
	return readDayCounts(t, e, `SELECT imei, ownership, day, type, sum(events)::bigint
		FROM device_event_days GROUP BY 1, 2, 3, 4`)
}

// storedDayCounts are the daily counts the event rows themselves add up
// to.
func storedDayCounts(t *testing.T, e *Engine) map[dayKey]int64 {
	t.Helper()
	return readDayCounts(t, e, `SELECT imei, ownership, date_trunc('day', time, 'UTC'), type, count(*)
		FROM events GROUP BY 1, 2, 3, 4`)
}

// checkDayCounts fails t unless the engine's daily counts, summed over
// the nodes, are want, and are what the event rows themselves add up to.
func checkDayCounts(t *testing.T, e *Engine, step string, want map[dayKey]int64) {
	t.Helper()
	if rows := storedDayCounts(t, e); !maps.Equal(rows, want) {
		t.Fatalf("%s: the events themselves count %d device days, want %d: the test's own list is off", step, len(rows), len(want))
	}
	diffDayCounts(t, step, keptDayCounts(t, e), want)
}

// diffDayCounts fails t, naming each count that differs, unless kept is
// want.
func diffDayCounts(t *testing.T, step string, kept, want map[dayKey]int64) {
	t.Helper()
	if maps.Equal(kept, want) {
		return
	}
	for _, k := range slices.SortedFunc(maps.Keys(want), func(a, b dayKey) int { return strings.Compare(a.String(), b.String()) }) {
		if kept[k] != want[k] {
			t.Errorf("%s: %s counts %d, want %d", step, k, kept[k], want[k])
		}
	}
	for k, n := range kept {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s counts %d, want none", step, k, n)
		}
	}
	t.FailNow()
}
