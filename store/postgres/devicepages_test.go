package postgres

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// deviceDayEvents returns n events from rnd, spread over the days from
// start on: most of evIMEI, of ownerships 3, 1 and 0 (those of 0 of
// organization 1 or 2), the rest of evIMEI2; three types; some exactly at
// midnight and some in a day's last microsecond.
func deviceDayEvents(rnd *rand.Rand, start time.Time, days, n int) []*store.Event {
	types := []string{"button", "deceleration", "cellPhoneUseBeep"}
	var out []*store.Event
	for i := range n {
		at := start.Add(time.Duration(rnd.Int64N(int64(days)*int64(24*time.Hour/time.Microsecond))) * time.Microsecond)
		switch i % 20 {
		case 0:
			at = start.Add(time.Duration(rnd.IntN(days)) * 24 * time.Hour)
		case 1:
			at = start.Add(time.Duration(1+rnd.IntN(days))*24*time.Hour - time.Microsecond)
		}
		imei := evIMEI
		if rnd.IntN(5) == 0 {
			imei = evIMEI2
		}
		e := newEvent(imei, types[rnd.IntN(len(types))], at.Sub(eventT0))
		e.Ownership = []int64{3, 1, 0}[rnd.IntN(3)]
		if e.Ownership == 0 && rnd.IntN(3) == 0 {
			e.OrganizationID = 2
		}
		out = append(out, e)
	}
	return out
}

// devicePageCase is a device page the tests ask for.
type devicePageCase struct {
	imei string
	f    store.DeviceEventFilter
	p    store.Page
	// kept, when set, are the events f keeps (naiveDeviceKept), worked
	// out once for the many pages of one filter.
	kept []*store.Event
}

func (c devicePageCase) String() string {
	holder := "none"
	if h := c.f.Holder; h != nil {
		holder = fmt.Sprintf("%s ownership %d", h.IMEI, h.Ownership)
	}
	return fmt.Sprintf("device %s %s to %s types %v status %q holder %s page %+v", c.imei,
		c.f.Start.Format(time.RFC3339Nano), c.f.End.Format(time.RFC3339Nano), slices.Sorted(maps.Keys(c.f.Types)),
		c.f.Status, holder, c.p)
}

// naiveDevicePage is the page c of its device's events among evs, by time
// then id, and how many c's filter keeps: the answer worked out from the
// list and the store's rule of what a holder holds, independent of the
// engine.
func naiveDevicePage(evs []*store.Event, c devicePageCase) ([]int64, int) {
	kept := c.kept
	if kept == nil {
		kept = naiveDeviceKept(evs, c.imei, c.f)
	}
	page, total := store.Paginate(kept, c.p)
	return idsOf(page...), total
}

// naiveDeviceKept is device imei's events among evs that f keeps, by time
// then id.
func naiveDeviceKept(evs []*store.Event, imei string, f store.DeviceEventFilter) []*store.Event {
	kept := []*store.Event{}
	for _, e := range evs {
		if e.IMEI == imei && !e.Time.Before(f.Start) && !e.Time.After(f.End) &&
			(f.Types == nil || f.Types[e.Type]) && (f.Status == "" || e.Status == f.Status) &&
			(f.Holder == nil || f.Holder.HoldsEvent(e)) {
			kept = append(kept, e)
		}
	}
	slices.SortFunc(kept, byTimeThenID)
	return kept
}

// TestDevicePagesAtEveryOffset: a device's pages and totals are those of
// the stored events for windows whose ends fall on a midnight, just
// before or after one, or inside a day, over days with a partition and
// days in the default partition, and for offsets that land in the
// window's first partial day, on each whole day's first and last event,
// in its last partial day and past the end; with and without a holder
// (of each ownership, of ownership 0, whose organization and creation
// the counts do not answer, and of another device), types and a status.
func TestDevicePagesAtEveryOffset(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	rnd := rand.New(rand.NewPCG(31, 37))
	// From 2026-02-25: the first two days have no partition (the
	// fixture's begin on 02-27), so their events are in the default one.
	d0 := eventT0.Truncate(24*time.Hour).AddDate(0, 0, -4)
	evs := f.insert(t, deviceDayEvents(rnd, d0, 8, 1600)...)
	// Some resolved, for the status filter (answered from the rows).
	f.update(t, func(tx *tx) error {
		for _, e := range evs[:400] {
			if e.ID%3 == 0 {
				e.Status = store.EventStatusResolved
				if err := tx.Events().Update(e); err != nil {
					return err
				}
			}
		}
		return nil
	})
	const day = 24 * time.Hour
	windows := [][2]time.Time{
		{d0, d0.Add(8 * day)},                                                                                // whole days, and the event on the last one's end
		{d0, d0.Add(8*day - time.Microsecond)},                                                               // whole days only
		{d0.Add(time.Microsecond), d0.Add(7*day + time.Microsecond)},                                         // a microsecond past the midnights
		{d0.Add(-time.Microsecond), d0.Add(3*day - 2*time.Microsecond)},                                      // a microsecond before them
		{d0.Add(5*time.Hour + 17*time.Minute + 3*time.Second), d0.Add(6*day + 19*time.Hour + 7*time.Minute)}, // partial days at both ends
		{d0.Add(2*day + time.Hour), d0.Add(2*day + 22*time.Hour)},                                            // inside one day
		{d0.Add(2*day + 20*time.Hour), d0.Add(3*day + 3*time.Hour)},                                          // across one midnight, no whole day
		{d0.Add(3 * day), d0.Add(4*day - time.Microsecond)},                                                  // exactly one day
		{d0.Add(3 * day), d0.Add(3 * day)},                                                                   // one instant
		{d0.Add(4 * day), d0.Add(3 * day)},                                                                   // ends before it starts
		{d0.Add(-50 * day), d0.Add(-40 * day)},                                                               // before every event
		{d0.Add(-3*day + 7*time.Hour), d0.Add(day + 2*time.Hour)},                                            // from before every event
	}
	filters := []func(*devicePageCase){
		func(*devicePageCase) {},
		func(c *devicePageCase) { c.imei = evIMEI2 },
		func(c *devicePageCase) { c.f.Holder = &store.Device{IMEI: evIMEI, Ownership: 1} },
		func(c *devicePageCase) {
			c.f.Holder = &store.Device{IMEI: evIMEI, Ownership: 3}
			c.f.Types = map[string]bool{"button": true}
		},
		func(c *devicePageCase) {
			c.f.Holder = &store.Device{IMEI: evIMEI, Ownership: 0, OrganizationID: 1, CreatedAt: d0.Add(2 * day)}
		},
		func(c *devicePageCase) { c.f.Holder = &store.Device{IMEI: evIMEI2, Ownership: 1} },
		func(c *devicePageCase) { c.f.Types = map[string]bool{} },
		func(c *devicePageCase) { c.f.Types = map[string]bool{"button": true, "deceleration": true} },
		func(c *devicePageCase) { c.f.Status = store.EventStatusResolved },
	}
	var cases []devicePageCase
	for _, w := range windows {
		for _, set := range filters {
			c := devicePageCase{imei: evIMEI, f: store.DeviceEventFilter{Start: w[0], End: w[1]}}
			set(&c)
			c.kept = naiveDeviceKept(evs, c.imei, c.f)
			total := len(c.kept)
			// The offsets where a day's events begin and end.
			offsets := []int{0, 1, total - 1, total, total + 3}
			for midnight := w[0].Truncate(day); midnight.Before(w[1]); midnight = midnight.Add(day) {
				n := keptUntil(c.kept, midnight.Add(-time.Microsecond))
				offsets = append(offsets, n-1, n, n+1)
			}
			for range 3 {
				offsets = append(offsets, rnd.IntN(total+1))
			}
			for _, off := range offsets {
				for _, limit := range []int{1, 100} {
					if off >= 0 {
						c.p = store.Page{Limit: limit, Offset: off}
						cases = append(cases, c)
					}
				}
			}
			c.p = store.Page{} // all of them
			cases = append(cases, c)
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
					want, wantN := naiveDevicePage(evs, c)
					got, n, err := tx.Events().ByDevice(c.imei, c.f, c.p)
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

// TestDevicePageReadsItsDaysOnly: a device's page counts whole days from
// their counts and reads only the index entries of its window's partial
// edge days, of the day its offset lands in and of the page, and only the
// partitions of those days, in two round trips.
func TestDevicePageReadsItsDaysOnly(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	// 144 events a day for six days, one every ten minutes, from
	// 2026-03-01: each day has a partition.
	start := eventT0.Truncate(24 * time.Hour)
	var evs []*store.Event
	for i := range 6 * 144 {
		evs = append(evs, newEvent(evIMEI, "button", start.Add(time.Duration(i)*10*time.Minute).Sub(eventT0)))
	}
	f.insert(t, evs...)
	// From noon on 03-01 (72 events) to noon on 03-06 (72), with four
	// whole days between.
	window := store.DeviceEventFilter{Start: start.Add(12 * time.Hour), End: start.Add(5*24*time.Hour + 11*time.Hour + 55*time.Minute)}
	typed := window
	typed.Holder = &store.Device{IMEI: evIMEI, Ownership: 3}
	typed.Types = map[string]bool{"button": true, "deceleration": true}
	for _, tc := range []struct {
		name string
		f    store.DeviceEventFilter
		p    store.Page
		// days are the days whose partitions the page may read.
		days       []string
		maxEntries int
	}{
		// 72 + 72 entries at the edges, the page, its rows' primary keys.
		{"the first page", window, store.Page{Limit: 50}, []string{"d01", "d06"}, 144 + 2*50},
		// The edges, then the landing day's first events (30 skipped),
		// the page and its rows.
		{"a deep page", typed, store.Page{Limit: 50, Offset: 72 + 144 + 30}, []string{"d01", "d03", "d06"}, 144 + 30 + 2*50},
		// A page of the last ten events of 03-02 and the first 40 of
		// 03-03.
		{"a page across a midnight", window, store.Page{Limit: 50, Offset: 72 + 144 - 10}, []string{"d01", "d02", "d03", "d06"}, 144 + 134 + 2*50},
	} {
		f.view(t, func(tx *tx) error {
			before, err := readStats(tx)
			if err != nil {
				return err
			}
			trips := pipeOf(tx).trips
			got, n, err := tx.Events().ByDevice(evIMEI, tc.f, tc.p)
			if err != nil {
				return err
			}
			if trips := pipeOf(tx).trips - trips; trips != 2 {
				t.Errorf("%s: %d round trips, want 2", tc.name, trips)
			}
			want, wantN := naiveDevicePage(evs, devicePageCase{imei: evIMEI, f: tc.f, p: tc.p})
			if n != wantN || !slices.Equal(eventIDs(got), want) {
				t.Errorf("%s: %d events %v, want %d %v", tc.name, n, eventIDs(got), wantN, want)
			}
			after, err := readStats(tx)
			if err != nil {
				return err
			}
			entries := 0
			for name, a := range after {
				scans, returned := a[0]-before[name][0], a[1]-before[name][1]
				entries += returned
				needed := slices.ContainsFunc(tc.days, func(d string) bool { return strings.Contains(name, "_y2026m03"+d) })
				if scans > 0 && !needed {
					t.Errorf("%s: %s was scanned %d times; the page needs the days %v of March 2026 only", tc.name, name, scans, tc.days)
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
