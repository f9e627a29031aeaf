package postgres

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// TestEnsurePartition creates day and month partitions of a table with the
// migrations' function, twice: each is made once, a day inside a month
// that has a partition gets none, and rows land in the partition of their
// range or in the default partition.
func TestEnsurePartition(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	ctx := context.Background()
	_, err := e.pool.Exec(ctx, `CREATE TABLE samples (at timestamptz NOT NULL) PARTITION BY RANGE (at);
		CREATE TABLE samples_default PARTITION OF samples DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		unit, start string
		want        bool
	}{
		{"month", "2026-11-20", true},
		{"month", "2026-11-01", false},
		{"day", "2026-11-21", false}, // November has its month
		{"day", "2026-12-31", true},
		{"day", "2026-12-31", false},
		{"day", "2027-01-01", true},
	}
	for _, c := range calls {
		var created bool
		err := e.pool.QueryRow(ctx, `SELECT fleetcam_ensure_partition('samples', $1, $2)`, c.unit, c.start).Scan(&created)
		if err != nil || created != c.want {
			t.Errorf("%s of %s: created %v, %v; want %v", c.unit, c.start, created, err, c.want)
		}
	}
	if _, err := e.pool.Exec(ctx, `SELECT fleetcam_ensure_partition('samples', 'week', '2026-11-20')`); err == nil {
		t.Error("a week's partition was made")
	}
	rows := map[time.Time]string{
		time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC):                "samples_y2026m11",
		time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC):            "samples_y2026m11",
		time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC):               "samples_y2026m12d31",
		time.Date(2027, 1, 1, 23, 59, 59, 999, time.UTC):            "samples_y2027m01d01",
		time.Date(2026, 12, 30, 23, 59, 59, 999, time.UTC):          "samples_default",
		time.Date(2026, 10, 31, 23, 59, 59, 999, time.UTC):          "samples_default",
		time.Date(2027, 1, 2, 0, 0, 0, 0, time.FixedZone("", 3600)): "samples_y2027m01d01", // 23:00 UTC the day before
	}
	for at, want := range rows {
		var got string
		err := e.pool.QueryRow(ctx, `INSERT INTO samples VALUES ($1) RETURNING tableoid::regclass::text`, at).Scan(&got)
		if err != nil || got != want {
			t.Errorf("a row at %s went to %q, %v; want %s", at, got, err, want)
		}
	}
}

// timePartition matches the names of day and month partitions.
var timePartition = regexp.MustCompile(`_y[0-9]{4}m[0-9]{2}(d[0-9]{2})?$`)

// dropTimePartitions drops every day and month partition Prepare made for
// the time around today, so that a test of partitions around a time of
// its own starts with only the default partitions.
func dropTimePartitions(t testing.TB, e *Engine) {
	t.Helper()
	ctx := context.Background()
	rows, err := e.pool.Query(ctx, `SELECT inhrelid::regclass::text, inhparent::regclass::text FROM pg_inherits`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	parent := map[string]string{}
	for rows.Next() {
		var n, p string
		if err := rows.Scan(&n, &p); err != nil {
			t.Fatal(err)
		}
		if timePartition.MatchString(n) {
			names = append(names, n)
			parent[n] = p
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Children first: event_files' partitions refer to those of events.
	slices.SortStableFunc(names, func(a, b string) int {
		return strings.Compare(b[:min(len(b), len("event_files"))], a[:min(len(a), len("event_files"))])
	})
	for _, n := range names {
		// A partition another table's foreign key refers to is detached
		// before it can be dropped.
		_, err := e.pool.Exec(ctx, "ALTER TABLE "+pgx.Identifier{parent[n]}.Sanitize()+" DETACH PARTITION "+
			pgx.Identifier{n}.Sanitize()+"; DROP TABLE "+pgx.Identifier{n}.Sanitize())
		if err != nil {
			t.Fatal(err)
		}
	}
}

// ensureAround drops the partitions Prepare made and creates those around
// now of the tables named (all when none is).
func ensureAround(t testing.TB, e *Engine, now time.Time, tables ...string) {
	t.Helper()
	dropTimePartitions(t, e)
	if err := ensurePartitions(context.Background(), e, now, partitionsOf(tables...)); err != nil {
		t.Fatal(err)
	}
}

// partitionsOf returns the partitioned tables named, all when none is.
func partitionsOf(tables ...string) []partitionedTable {
	var out []partitionedTable
	for _, p := range partitionedTables {
		if len(tables) == 0 || slices.Contains(tables, p.table) {
			out = append(out, p)
		}
	}
	return out
}

// partitionNames lists the partitions of table by name.
func partitionNames(t *testing.T, e *Engine, table string) []string {
	t.Helper()
	var names []string
	err := e.pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(c.relname::text ORDER BY c.relname), '{}')
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass`, table).Scan(&names)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// partitionOf names the partition a row of table matching where is in.
func partitionOf(t *testing.T, e *Engine, table, where string, args ...any) string {
	t.Helper()
	var got string
	if err := e.pool.QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM `+table+` WHERE `+where, args...).Scan(&got); err != nil {
		t.Fatalf("the row of %s where %s: %v", table, where, err)
	}
	return got
}

// wantPartitions is the partition names of p for the units from first
// through last, after its default partition.
func wantPartitions(p partitionedTable, first, last time.Time) []string {
	want := []string{p.table + "_default"}
	for at := p.unit.start(first); !at.After(last); at = p.unit.add(at, 1) {
		name := fmt.Sprintf("%s_y%04dm%02d", p.table, at.Year(), at.Month())
		if p.unit == day {
			name += fmt.Sprintf("d%02d", at.Day())
		}
		want = append(want, name)
	}
	return want
}

// TestPartitionsAroundNow writes a row of every time series before its
// partitions exist, inside and outside the span around a time, then
// creates the partitions of that span from three engines at once: each
// table gets each partition of the span once; rows of the span move to
// their partition, keeping their ids, except events and their files, whose
// day is then left to the default partitions without failing the others;
// rows outside the span stay in the default partitions.
func TestPartitionsAroundNow(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t, "")
	e := openEngine(t, url)
	ctx := context.Background()
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	dropTimePartitions(t, e)
	now := time.Date(2026, 7, 15, 9, 0, 0, 0, time.UTC)
	f := seedTracks(t, e)
	w := seedWebhooks(t, e)
	inSpan := now.AddDate(0, 0, -1)
	beyond := now.AddDate(1, 0, 0)

	var seqs, auditIDs, deliveryIDs, eventIDs []int64
	write(t, e, func(t2 *tx) error {
		for _, at := range []time.Time{inSpan, beyond} {
			if _, err := insertOne(t2, f.imeis[0], 1, store.GPSPoint{Time: at, Lat: 1, Lon: 2}); err != nil {
				return err
			}
			a := store.AuditEntry{Time: at, Action: "a", EntityType: "e", EntityID: "1", OrganizationID: w.org}
			m := store.Message{Kind: store.MessageGPS, OrganizationID: w.org, Time: at}
			d := pendingDelivery(w.org, "https://r.example.com", "", at)
			ev := store.Event{IMEI: f.imeis[0], OrganizationID: f.orgA, Type: "button", Time: at, Severity: store.SeverityLow,
				Status: store.EventStatusNew, CreatedAt: at, Files: []store.EventFile{{CameraID: 1, FileID: "f", FileType: store.FileVideo}}}
			for _, err := range []error{t2.AuditEntries().Append(&a), t2.Messages().Append(&m), t2.Deliveries().Insert(d), t2.Events().Insert(&ev)} {
				if err != nil {
					return err
				}
			}
			auditIDs, seqs, deliveryIDs, eventIDs = append(auditIDs, a.ID), append(seqs, m.Seq), append(deliveryIDs, d.ID), append(eventIDs, ev.ID)
		}
		return nil
	})

	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		other := openEngine(t, url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = other.Maintain(ctx, now)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("engine %d: %v", i, err)
		}
	}

	for _, p := range partitionedTables {
		first, last := p.unit.add(now, -p.back), p.unit.add(now, p.ahead)
		want := wantPartitions(p, first, last)
		if p.table == "events" || p.table == "event_files" {
			// The day of the event already in the default partition.
			want = slices.DeleteFunc(want, func(n string) bool { return strings.HasSuffix(n, inSpan.Format("_y2006m01d02")) })
		}
		if got := partitionNames(t, e, p.table); !slices.Equal(got, want) {
			t.Errorf("partitions of %s: %v; want %v", p.table, got, want)
		}
	}
	day, month := inSpan.Format("_y2006m01d02"), inSpan.Format("_y2006m01")
	for i, where := range []string{day, "_default"} {
		at := []time.Time{inSpan, beyond}[i]
		if got := partitionOf(t, e, "gps_samples", "sampled_at = $1", at); got != "gps_samples"+where {
			t.Errorf("the sample at %s is in %s; want gps_samples%s", at, got, where)
		}
		if got := partitionOf(t, e, "events", "id = $1", eventIDs[i]); got != "events_default" {
			t.Errorf("the event at %s is in %s; want events_default", at, got)
		}
		if got := partitionOf(t, e, "event_files", "event_id = $1", eventIDs[i]); got != "event_files_default" {
			t.Errorf("the file of the event at %s is in %s; want event_files_default", at, got)
		}
		if i == 0 {
			where = month
		}
		for table, key := range map[string]string{"audit_log": "id = $1", "messages": "seq = $1", "webhook_deliveries": "id = $1"} {
			id := map[string][]int64{"audit_log": auditIDs, "messages": seqs, "webhook_deliveries": deliveryIDs}[table][i]
			if got := partitionOf(t, e, table, key, id); got != table+where {
				t.Errorf("the %s row at %s is in %s; want %s%s", table, at, got, table, where)
			}
		}
	}
	// The records read as before, and new ones take ids after the moved ones.
	read(t, e, func(t2 *tx) error {
		got, err := t2.Messages().After(0, 0)
		if err != nil || len(got) != 2 || got[0].Seq != seqs[0] || !got[0].Time.Equal(inSpan) {
			t.Errorf("messages after the move: %+v, %v", got, err)
		}
		ev, err := t2.Events().Get(eventIDs[0])
		if err != nil || len(ev.Files) != 1 {
			t.Errorf("the event left in the default partition reads %+v, %v", ev, err)
		}
		return nil
	})
	m := store.Message{Kind: store.MessageGPS, OrganizationID: w.org, Time: now}
	write(t, e, func(t2 *tx) error { return t2.Messages().Append(&m) })
	if m.Seq <= seqs[1] {
		t.Errorf("sequence %d after the move; want above %d", m.Seq, seqs[1])
	}
}
