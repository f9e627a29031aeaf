package postgres

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// hourKey is one hourly count: an organization's events of one UTC hour,
// partner (0 for none) and type.
type hourKey struct {
	org     int64
	hour    time.Time
	partner int64
	typ     string
}

func (k hourKey) String() string {
	return fmt.Sprintf("org %d %s partner %d %s", k.org, k.hour.Format(time.RFC3339), k.partner, k.typ)
}

// countsOf counts evs by hour, as the tests expect them: Go's own hour of
// each event's time.
func countsOf(evs []*store.Event) map[hourKey]int64 {
	out := map[hourKey]int64{}
	for _, e := range evs {
		out[hourKey{e.OrganizationID, e.Time.UTC().Truncate(time.Hour), e.PartnerID, e.Type}]++
	}
	return out
}

// readCounts reads the hourly counts of sql's rows (org, hour, partner,
// type, count), leaving out those of 0.
func readCounts(t *testing.T, e *Engine, sql string) map[hourKey]int64 {
	t.Helper()
	return readKeyedCounts(t, e, sql, nil, func(k *hourKey) []any { return []any{&k.org, &k.hour, &k.partner, &k.typ} })
}

// readKeyedCounts reads the counts of sql's rows (of args): the columns
// fields gives the places of, then the count, leaving out those of 0. A
// key's time is in UTC.
func readKeyedCounts[K comparable](t *testing.T, e *Engine, sql string, args []any, fields func(k *K) []any) map[K]int64 {
	t.Helper()
	out := map[K]int64{}
	read(t, e, func(tx *tx) error {
		rows, err := tx.pg.Query(tx.ctx, sql, args...)
		if err != nil {
			return err
		}
		var k K
		var n int64
		_, err = pgx.ForEachRow(rows, append(fields(&k), &n), func() error {
			for _, f := range fields(&k) {
				if at, ok := f.(*time.Time); ok {
					*at = at.UTC()
				}
			}
			if n != 0 {
				out[k] = n
			}
			return nil
		})
		return err
	})
	return out
}

// checkCounts fails t unless the engine's hourly counts, summed over the
// nodes, are those of evs, and are what the event rows themselves add up
// to; and likewise its daily counts of the devices.
func checkCounts(t *testing.T, e *Engine, step string, evs []*store.Event) {
	t.Helper()
	checkDayCounts(t, e, step, dayCountsOf(evs))
	want := countsOf(evs)
	kept := readCounts(t, e, `SELECT organization_id, hour, partner_id, type, sum(events)::bigint
		FROM event_hours GROUP BY 1, 2, 3, 4`)
	rows := readCounts(t, e, `SELECT organization_id, date_trunc('hour', time, 'UTC'), coalesce(partner_id, 0), type, count(*)
		FROM events GROUP BY 1, 2, 3, 4`)
	if !maps.Equal(rows, want) {
		t.Fatalf("%s: the events themselves count %d hours, want %d: the test's own list is off", step, len(rows), len(want))
	}
	if !maps.Equal(kept, want) {
		for _, k := range slices.SortedFunc(maps.Keys(want), func(a, b hourKey) int { return a.hour.Compare(b.hour) }) {
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
}

// hourEvents returns n events of organizations 1 and 2 from rnd, spread
// over the hours from start on: partners 1, 2 and none, three devices of
// ownerships 3, 1 and 0, three types, some exactly on an hour and some in
// an hour's last microsecond.
func hourEvents(rnd *rand.Rand, start time.Time, hours, n int) []*store.Event {
	types := []string{"button", "deceleration", "cellPhoneUseBeep"}
	imeis := []string{evIMEI, evIMEI2, "352045100000037"}
	var out []*store.Event
	for i := range n {
		at := start.Add(time.Duration(rnd.Int64N(int64(hours)*int64(time.Hour/time.Microsecond))) * time.Microsecond)
		switch i % 20 {
		case 0:
			at = start.Add(time.Duration(rnd.IntN(hours)) * time.Hour)
		case 1:
			at = start.Add(time.Duration(1+rnd.IntN(hours))*time.Hour - time.Microsecond)
		case 2:
			at = at.Add(time.Duration(rnd.IntN(1000)) * time.Microsecond)
		}
		e := newEvent(imeis[i%3], types[rnd.IntN(len(types))], at.Sub(eventT0))
		e.PartnerID = []int64{1, 2, 0}[i%3]
		e.Ownership = []int64{3, 1, 0}[i/3%3]
		if rnd.IntN(5) == 0 {
			e.OrganizationID = 2
		}
		out = append(out, e)
	}
	return out
}

// TestEventHourCounts: the hourly counts, and the devices' daily counts,
// follow the events through inserts (also one rolled back), deletes (also
// of an event deleted before), updates, writers of two nodes, the
// retention purge's dropped day and a copy into the database.
func TestEventHourCounts(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	rnd := rand.New(rand.NewPCG(3, 5))
	day := eventT0.Truncate(24 * time.Hour) // 2026-03-01, which has a partition of its own
	live := f.insert(t, hourEvents(rnd, day, 48, 600)...)
	checkCounts(t, f.e, "after the inserts", live)

	failed := errors.New("rolled back")
	err := f.e.update(f.ctx, func(tx *tx) error {
		for _, e := range hourEvents(rnd, day, 48, 20) {
			if err := tx.Events().Insert(e); err != nil {
				return err
			}
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("a transaction that failed: %v", err)
	}
	checkCounts(t, f.e, "after a rolled back transaction", live)

	f.update(t, func(tx *tx) error {
		for _, e := range live[:100] {
			if err := tx.Events().Delete(e); err != nil {
				return err
			}
		}
		return tx.Events().Delete(live[0]) // no longer stored
	})
	live = live[100:]
	checkCounts(t, f.e, "after the deletes", live)

	f.update(t, func(tx *tx) error {
		e := *live[0]
		e.Status, e.Severity = store.EventStatusResolved, store.SeverityHigh
		e.Comments = []store.EventComment{{ID: 1, Comment: "seen", CreatedByAudienceName: "partner", CreatedAt: eventT0}}
		return tx.Events().Update(&e)
	})
	checkCounts(t, f.e, "after an update", live)

	// A second node writes its own rows: its deletes of the first node's
	// events count below zero there.
	other := &Engine{pool: f.e.pool, views: f.e.views, node: "node-b"}
	more := hourEvents(rnd, day, 48, 100)
	write(t, other, func(tx *tx) error {
		for _, e := range more {
			if err := tx.Events().Insert(e); err != nil {
				return err
			}
		}
		for _, e := range live[:50] {
			if err := tx.Events().Delete(e); err != nil {
				return err
			}
		}
		return nil
	})
	live = append(live[50:], more...)
	checkCounts(t, f.e, "after a second node's writes", live)
	var nodes []string
	var negative bool
	err = f.e.pool.QueryRow(f.ctx, `SELECT array_agg(DISTINCT node ORDER BY node), bool_or(events < 0) FROM event_hours`).
		Scan(&nodes, &negative)
	if err != nil || !slices.Equal(nodes, []string{"", "node-b"}) || !negative {
		t.Errorf("count rows of nodes %q, some below zero: %v (%v); want both nodes' rows, some below zero", nodes, negative, err)
	}

	// The retention purge drops the first day whole, and its counts.
	f.update(t, func(tx *tx) error {
		parts, err := events{tx}.Partitions(day.Add(24 * time.Hour))
		if err != nil {
			return err
		}
		i := slices.IndexFunc(parts, func(p store.SeriesPartition) bool { return p.Start.Equal(day) })
		if i < 0 {
			return fmt.Errorf("no partition of %s among %v", day, parts)
		}
		_, err = events{tx}.Drop(parts[i])
		return err
	})
	live = slices.DeleteFunc(live, func(e *store.Event) bool { return e.Time.Before(day.Add(24 * time.Hour)) })
	checkCounts(t, f.e, "after the first day's partition was dropped", live)

	// A copy into the database adds the counts of what it copies.
	copied := hourEvents(rnd, day.Add(-24*time.Hour), 72, 7000)
	for i, e := range copied {
		e.ID = int64(1_000_000 + i)
	}
	err = f.e.Load(f.ctx, func(l store.Load) error {
		_, err := l.Put(store.KindEvents, func(yield func(any, error) bool) {
			for _, e := range copied {
				if !yield(e, nil) {
					return
				}
			}
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	live = append(live, copied...)
	checkCounts(t, f.e, "after a copy", live)
}

// TestEventHourCountsMigration: migrations 00018 and 00019 count the
// events stored before them, by organization and hour and by device and
// day.
func TestEventHourCountsMigration(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	rnd := rand.New(rand.NewPCG(13, 17))
	live := f.insert(t, hourEvents(rnd, eventT0.Add(-30*time.Hour), 60, 300)...)
	ctx := f.ctx
	p, db, err := f.e.provider()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := p.DownTo(ctx, 17); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, f.e, "after the migration", live)
}

// pageCase is an organization page the tests ask for.
type pageCase struct {
	f store.OrgEventFilter
	p store.Page
	// kept, when set, are the events f keeps (naiveKept), worked out once
	// for the many pages of one filter.
	kept []*store.Event
}

func (c pageCase) String() string {
	return fmt.Sprintf("%s to %s partner %d types %v devices %v status %q page %+v",
		c.f.Start.Format(time.RFC3339Nano), c.f.End.Format(time.RFC3339Nano), c.f.PartnerID,
		slices.Sorted(maps.Keys(c.f.Types)), slices.Sorted(maps.Keys(c.f.IMEIs)), c.f.Status, c.p)
}

// naivePage is the page c of organization org's events among evs, by
// time then id, and how many c's filter keeps: the answer worked out from
// the list, independent of the engine.
func naivePage(evs []*store.Event, org int64, c pageCase) ([]int64, int) {
	kept := c.kept
	if kept == nil {
		kept = naiveKept(evs, org, c.f)
	}
	page, total := store.Paginate(kept, c.p)
	return idsOf(page...), total
}

// naiveKept is organization org's events among evs that f keeps, by time
// then id.
func naiveKept(evs []*store.Event, org int64, f store.OrgEventFilter) []*store.Event {
	kept := []*store.Event{}
	for _, e := range evs {
		if e.OrganizationID == org && !e.Time.Before(f.Start) && !e.Time.After(f.End) &&
			(f.Types == nil || f.Types[e.Type]) && (f.PartnerID == 0 || e.PartnerID == f.PartnerID) &&
			(f.IMEIs == nil || f.IMEIs[e.IMEI]) && (f.Status == "" || e.Status == f.Status) {
			kept = append(kept, e)
		}
	}
	slices.SortFunc(kept, byTimeThenID)
	return kept
}

// byTimeThenID orders events as pages list them.
func byTimeThenID(a, b *store.Event) int {
	return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.ID, b.ID))
}

// keptUntil is how many of kept, events by time, are at or before end.
func keptUntil(kept []*store.Event, end time.Time) int {
	n, _ := slices.BinarySearchFunc(kept, end, func(e *store.Event, end time.Time) int {
		if e.Time.After(end) {
			return 1
		}
		return -1
	})
	return n
}

// TestOrgEventPagesAtEveryOffset: an organization's pages and totals are
// those of the stored events for windows whose ends fall on an hour, just
// before or after one, or inside it, and for offsets that land in the
// window's first partial hour, on each whole hour's first and last event,
// in its last partial hour and past the end, with every filter.
func TestOrgEventPagesAtEveryOffset(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	rnd := rand.New(rand.NewPCG(23, 29))
	h0 := eventT0.Add(-12 * time.Hour)
	evs := f.insert(t, hourEvents(rnd, h0, 30, 1500)...)
	// Some resolved, for the status filter (answered from the rows).
	f.update(t, func(tx *tx) error {
		for _, e := range evs[:300] {
			if e.ID%3 == 0 {
				e.Status = store.EventStatusResolved
				if err := tx.Events().Update(e); err != nil {
					return err
				}
			}
		}
		return nil
	})
	windows := [][2]time.Time{
		{h0, h0.Add(30 * time.Hour)},                                                   // whole hours, and the event on the last one's end
		{h0, h0.Add(30*time.Hour - time.Microsecond)},                                  // whole hours only
		{h0.Add(time.Microsecond), h0.Add(29*time.Hour + time.Microsecond)},            // a microsecond past the hours
		{h0.Add(-time.Microsecond), h0.Add(5*time.Hour - 2*time.Microsecond)},          // a microsecond before them
		{h0.Add(17*time.Minute + 3*time.Second), h0.Add(20*time.Hour + 7*time.Minute)}, // partial hours at both ends
		{h0.Add(2*time.Hour + time.Minute), h0.Add(2*time.Hour + 50*time.Minute)},      // inside one hour
		{h0.Add(2*time.Hour + 50*time.Minute), h0.Add(3*time.Hour + 10*time.Minute)},   // across one hour's end, no whole hour
		{h0.Add(3 * time.Hour), h0.Add(4*time.Hour - time.Microsecond)},                // exactly one hour
		{h0.Add(3 * time.Hour), h0.Add(3 * time.Hour)},                                 // one instant
		{h0.Add(4 * time.Hour), h0.Add(3 * time.Hour)},                                 // ends before it starts
		{h0.Add(-50 * time.Hour), h0.Add(-40 * time.Hour)},                             // before every event
	}
	filters := []func(*store.OrgEventFilter){
		func(*store.OrgEventFilter) {},
		func(f *store.OrgEventFilter) { f.PartnerID = 2 },
		func(f *store.OrgEventFilter) { f.Types = map[string]bool{"button": true} },
		func(f *store.OrgEventFilter) {
			f.Types = map[string]bool{"button": true, "deceleration": true}
			f.PartnerID = 1
		},
		func(f *store.OrgEventFilter) { f.Types = map[string]bool{} },
		func(f *store.OrgEventFilter) { f.IMEIs = map[string]bool{evIMEI2: true} },
		func(f *store.OrgEventFilter) { f.Status = store.EventStatusResolved },
	}
	var cases []pageCase
	for _, w := range windows {
		for _, set := range filters {
			c := pageCase{f: store.OrgEventFilter{Start: w[0], End: w[1]}}
			set(&c.f)
			c.kept = naiveKept(evs, 1, c.f)
			total := len(c.kept)
			// The offsets where an hour's events begin and end.
			offsets := []int{0, 1, total - 1, total, total + 3}
			for hour := w[0].Truncate(time.Hour); hour.Before(w[1]); hour = hour.Add(time.Hour) {
				before := keptUntil(c.kept, hour.Add(-time.Microsecond))
				offsets = append(offsets, before-1, before, before+1)
			}
			for range 3 {
				offsets = append(offsets, rnd.IntN(total+1))
			}
			for _, off := range offsets {
				for _, limit := range []int{1, 100} {
					if off >= 0 {
						cases = append(cases, pageCase{f: c.f, p: store.Page{Limit: limit, Offset: off}, kept: c.kept})
					}
				}
			}
		}
	}
	// Several views read the pages at once, each every readers-th case:
	// the events no longer change.
	const readers = 4
	errs := make(chan error, readers)
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			errs <- f.e.view(t.Context(), func(tx *tx) error {
				for i := r; i < len(cases); i += readers {
					c := cases[i]
					want, wantN := naivePage(evs, 1, c)
					got, n, err := tx.Events().ByOrganization(1, c.f, c.p)
					if err != nil {
						return fmt.Errorf("%s: %w", c, err)
					}
					if n != wantN || !slices.Equal(eventIDs(got), want) {
						return fmt.Errorf("%s: %d events %v, want %d %v", c, n, eventIDs(got), wantN, want)
					}
				}
				return nil
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d pages", len(cases))
}

// seedTruckEvents stores device evIMEI ("Truck 1" of organization 1) and
// n of its button events, every apart from the start of eventT0's day;
// it returns that start and the events.
func seedTruckEvents(t *testing.T, f *eventFixture, n int, every time.Duration) (time.Time, []*store.Event) {
	t.Helper()
	s := seeder{t, f.e, eventT0}
	// The stay in organization 1 its events were recorded for (newEvent's).
	s.device(store.Device{IMEI: evIMEI, Name: "Truck 1", OrganizationID: 1, PartnerID: 1, Ownership: 3})
	start := eventT0.Truncate(24 * time.Hour)
	var evs []*store.Event
	for i := range n {
		evs = append(evs, newEvent(evIMEI, "button", start.Add(time.Duration(i)*every).Sub(eventT0)))
	}
	f.insert(t, evs...)
	return start, evs
}

// TestOrgEventPageReadsItsHoursOnly: an organization's page counts whole
// hours from their counts, reads only the index entries of its window's
// partial edge hours, of the hour its offset lands in and of the page,
// and only the partitions of its window; a page costs one round trip at
// the window's start and two further in, with the devices' names.
func TestOrgEventPageReadsItsHoursOnly(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	// 60 events an hour for two days, one a minute.
	start, evs := seedTruckEvents(t, f, 48*60, time.Minute)
	window := store.OrgEventFilter{Start: start.Add(3*time.Hour + 30*time.Minute), End: start.Add(43*time.Hour + 29*time.Minute)}
	for _, tc := range []struct {
		name       string
		p          store.Page
		trips      int
		maxEntries int
	}{
		// 30 + 30 entries at the edges, the page, its rows' primary keys.
		{"the first page", store.Page{Limit: 50}, 2, 60 + 2*50},
		// The edges, then the landing hour's first events (fewer than its
		// 60), the page and its rows.
		{"a deep page", store.Page{Limit: 50, Offset: 2000}, 2, 60 + 60 + 2*50},
	} {
		f.view(t, func(tx *tx) error {
			before, err := readStats(tx)
			if err != nil {
				return err
			}
			trips := pipeOf(tx).trips
			got, n, err := tx.Events().(store.OrgEventNamer).ByOrganizationNamed(1, window, tc.p)
			if err != nil {
				return err
			}
			if trips := pipeOf(tx).trips - trips; trips != tc.trips {
				t.Errorf("%s: %d round trips, want %d", tc.name, trips, tc.trips)
			}
			want, wantN := naivePage(evs, 1, pageCase{f: window, p: tc.p})
			var ids []int64
			for _, e := range got {
				ids = append(ids, e.ID)
				if e.DeviceName != "Truck 1" {
					t.Errorf("%s: event %d names its device %q, want Truck 1", tc.name, e.ID, e.DeviceName)
				}
			}
			if n != wantN || !slices.Equal(ids, want) {
				t.Errorf("%s: %d events %v, want %d %v", tc.name, n, ids, wantN, want)
			}
			after, err := readStats(tx)
			if err != nil {
				return err
			}
			entries := 0
			for name, a := range after {
				scans, returned := a[0]-before[name][0], a[1]-before[name][1]
				entries += returned
				inWindow := strings.Contains(name, "_y2026m03d01") || strings.Contains(name, "_y2026m03d02")
				if scans > 0 && !inWindow {
					t.Errorf("%s: %s was scanned %d times; the window is in 2026-03-01 and 02", tc.name, name, scans)
				}
			}
			if entries > tc.maxEntries {
				t.Errorf("%s: %d index entries and rows read, want at most %d (the window holds %d)", tc.name, entries, tc.maxEntries, wantN)
			}
			t.Logf("%s: %d index entries and rows read, of a window of %d", tc.name, entries, wantN)
			return nil
		})
	}
}

// readStats reads what the statements of this connection have read so
// far, by relation of the events' and their files' partitions: the scans
// of each index and the entries they returned, the sequential scans of
// each partition and the rows they read.
func readStats(tx *tx) (map[string][2]int, error) {
	rows, err := tx.pg.Query(tx.ctx, `SELECT c.relname::text, pg_stat_get_xact_numscans(i.inhrelid),
			pg_stat_get_xact_tuples_returned(i.inhrelid)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent IN ('events'::regclass, 'events_organization'::regclass, 'events_pkey'::regclass,
			'events_device'::regclass, 'event_files'::regclass, 'event_files_pkey'::regclass)`)
	if err != nil {
		return nil, err
	}
	out := map[string][2]int{}
	var name string
	var scans, returned int
	_, err = pgx.ForEachRow(rows, []any{&name, &scans, &returned}, func() error {
		out[name] = [2]int{scans, returned}
		return nil
	})
	return out, err
}

// TestOrgEventsNamed: an organization's page with its devices' names
// joins the devices as they are now: a renamed device by its new name; a
// device gone, or moved to another organization (whose name for it is not
// this one's to see), without a name.
func TestOrgEventsNamed(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	s := seeder{t, f.e, eventT0}
	// Both in the stay their events were recorded for (newEvent's).
	s.device(store.Device{IMEI: evIMEI, Name: "Truck 1", OrganizationID: 1, PartnerID: 1, Ownership: 3})
	moved := s.device(store.Device{IMEI: "352045100000037", Name: "Truck 3", OrganizationID: 1, PartnerID: 1, Ownership: 3})
	a := newEvent(evIMEI, "button", 0)
	b := newEvent(evIMEI2, "button", time.Minute) // a device never stored, or gone
	c := newEvent(moved.IMEI, "button", 2*time.Minute)
	f.insert(t, a, b, c)
	f.update(t, func(tx *tx) error {
		d, err := tx.Devices().Get(evIMEI)
		if err != nil {
			return err
		}
		d.Name = "Renamed"
		if err := tx.Devices().Put(d); err != nil {
			return err
		}
		moved.OrganizationID, moved.Ownership = 2, 4 // a new stay
		return tx.Devices().Put(moved)
	})
	want := map[int64]string{a.ID: "Renamed", b.ID: "", c.ID: ""}
	for _, p := range []store.Page{{Limit: 10}, {Limit: 2, Offset: 1}, {}} {
		f.view(t, func(tx *tx) error {
			for _, filter := range []store.OrgEventFilter{
				{Start: eventT0, End: eventT0.Add(time.Hour)},
				{Start: eventT0, End: eventT0.Add(time.Hour), Status: store.EventStatusNew},
			} {
				got, n, err := events{tx}.ByOrganizationNamed(1, filter, p)
				if err != nil {
					return err
				}
				wantIDs, wantN := naivePage([]*store.Event{a, b, c}, 1, pageCase{f: filter, p: p})
				var ids []int64
				for _, e := range got {
					ids = append(ids, e.ID)
					if e.DeviceName != want[e.ID] {
						t.Errorf("page %+v: event %d names its device %q, want %q", p, e.ID, e.DeviceName, want[e.ID])
					}
				}
				if n != wantN || !slices.Equal(ids, wantIDs) {
					t.Errorf("page %+v: %d events %v, want %d %v", p, n, ids, wantN, wantIDs)
				}
			}
			return nil
		})
	}
}

// TestEventPagesPlanGenericWithoutWorkers: the statements of the event
// pages run on generic plans from their first execution, without parallel
// workers, in a read transaction; a write transaction keeps the server's
// settings.
func TestEventPagesPlanGenericWithoutWorkers(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	start, _ := seedTruckEvents(t, f, 48, time.Hour)
	window := store.OrgEventFilter{Start: start.Add(90 * time.Minute), End: start.Add(40*time.Hour + 30*time.Minute)}
	devWindow := store.DeviceEventFilter{Start: window.Start, End: window.End}
	f.view(t, func(tx *tx) error {
		for range 2 {
			// Pages read by their ids (an offset beyond the limit), then
			// in order from the index.
			for _, offset := range []int{20, 5} {
				if _, _, err := tx.Events().(store.OrgEventNamer).ByOrganizationNamed(1, window, store.Page{Limit: 10, Offset: offset}); err != nil {
					return err
				}
				if _, _, err := tx.Events().ByDevice(evIMEI, devWindow, store.Page{Limit: 10, Offset: offset}); err != nil {
					return err
				}
			}
		}
		var workers string
		if err := tx.pg.QueryRow(tx.ctx, `SELECT current_setting('max_parallel_workers_per_gather')`).Scan(&workers); err != nil {
			return err
		}
		if workers != "0" {
			t.Errorf("max_parallel_workers_per_gather %s in a read of pages, want 0", workers)
		}
		rows, err := tx.pg.Query(tx.ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
			WHERE (statement LIKE 'WITH page AS%' OR statement LIKE '% FROM (%SELECT * FROM events WHERE %'
				OR statement LIKE 'SELECT count(*) FROM events%'
				OR statement LIKE 'SELECT hour, sum(events)%' OR statement LIKE 'SELECT day, sum(events)%')
			  AND statement NOT LIKE '%pg_prepared_statements%'`)
		if err != nil {
			return err
		}
		var sql string
		var generic, custom int64
		seen := 0
		_, err = pgx.ForEachRow(rows, []any{&sql, &generic, &custom}, func() error {
			seen++
			if custom != 0 || generic == 0 {
				t.Errorf("%d generic and %d custom plans, want only generic ones: %s", generic, custom, sql)
			}
			return nil
		})
		if err != nil {
			return err
		}
		// The organization's page: the edge counts (one statement for
		// both), the hours' counts and the page, read in order from the
		// hour its offset lands in; the device's, whose window holds no
		// whole day: the count and the page, by ids and in order.
		if seen != 6 {
			t.Errorf("%d statements of the pages prepared, want 6", seen)
		}
		return nil
	})
	f.update(t, func(tx *tx) error {
		if _, _, err := tx.Events().ByDevice(evIMEI, devWindow, store.Page{Limit: 10}); err != nil {
			return err
		}
		var mode, workers string
		if err := tx.pg.QueryRow(tx.ctx, `SELECT current_setting('plan_cache_mode'), current_setting('max_parallel_workers_per_gather')`).
			Scan(&mode, &workers); err != nil {
			return err
		}
		if mode != "auto" || workers == "0" {
			t.Errorf("plan_cache_mode %s, max_parallel_workers_per_gather %s in a write transaction, want the server's auto and 2", mode, workers)
		}
		return nil
	})
}
