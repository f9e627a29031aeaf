package postgres

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// tripIDs are the ids of trips.
func tripIDs(trips []store.Trip) []int64 {
	out := []int64{}
	for _, t := range trips {
		out = append(out, t.ID)
	}
	return out
}

// TestTripsInsertAtPut inserts trips under increasing ids, refuses a
// second trip of a device in one millisecond (leaving the transaction
// usable), finds each by its start's millisecond and replaces one.
func TestTripsInsertAtPut(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[0]
	start := trackNow.Add(-2*time.Hour + 123456*time.Microsecond) // ms 123, µs 456
	first := &store.Trip{IMEI: imei, OrganizationID: f.orgA, Start: start, DriverID: 42, Ownership: 1}
	second := &store.Trip{IMEI: imei, OrganizationID: f.orgA, Start: start.Add(time.Millisecond)}
	other := &store.Trip{IMEI: f.imeis[2], OrganizationID: f.orgB, Start: start, Ownership: 3}
	write(t, e, func(r *tx) error {
		var last int64
		for _, trip := range []*store.Trip{first, second, other} {
			if err := r.Trips().Insert(trip); err != nil {
				return err
			}
			if trip.ID <= last {
				t.Errorf("trip id %d after %d; want a greater one", trip.ID, last)
			}
			last = trip.ID
		}
		again := &store.Trip{IMEI: imei, OrganizationID: f.orgB, Start: start.Add(-456 * time.Microsecond)}
		if err := r.Trips().Insert(again); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a second trip in the millisecond: %v; want ErrConflict", err)
		}
		// The transaction goes on.
		got, err := r.Trips().At(imei, start.Add(500*time.Microsecond))
		if err != nil {
			return err
		}
		if want := *first; !reflect.DeepEqual(*got, want) {
			t.Errorf("trip at %s: %+v; want %+v", start, *got, want)
		}
		return nil
	})
	read(t, e, func(r *tx) error {
		if _, err := r.Trips().At(imei, start.Add(-time.Millisecond)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a trip at a millisecond without one: %v; want ErrNotFound", err)
		}
		if _, err := r.Trips().At(f.imeis[1], start); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a trip of a device without one: %v; want ErrNotFound", err)
		}
		got, err := r.Trips().At(f.imeis[2], start)
		if err != nil || !reflect.DeepEqual(*got, *other) {
			t.Errorf("the other device's trip: %+v, %v; want %+v", got, err, *other)
		}
		return nil
	})
	closed := *first
	closed.End, closed.DistanceMeters, closed.DriverID = start.Add(time.Hour+7*time.Microsecond), 12345.5, 0
	write(t, e, func(r *tx) error {
		if err := r.Trips().Put(&closed); err != nil {
			return err
		}
		missing := closed
		missing.Start = start.Add(time.Second)
		if err := r.Trips().Put(&missing); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("replacing a trip not stored: %v; want ErrNotFound", err)
		}
		return nil
	})
	read(t, e, func(r *tx) error {
		got, err := r.Trips().At(imei, start)
		if err != nil || !reflect.DeepEqual(*got, closed) {
			t.Errorf("the replaced trip: %+v, %v; want %+v", got, err, closed)
		}
		return nil
	})
}

// TestTripsOpen opens, moves and clears the open trip of a device: it is
// one of its stored trips, at most one at a time, and the trips stay.
func TestTripsOpen(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[0]
	a := &store.Trip{IMEI: imei, OrganizationID: f.orgA, Start: trackNow.Add(-3 * time.Hour)}
	b := &store.Trip{IMEI: imei, OrganizationID: f.orgA, Start: trackNow.Add(-time.Hour)}
	c := &store.Trip{IMEI: f.imeis[1], OrganizationID: f.orgA, Start: trackNow.Add(-time.Hour)}
	open := func(r *tx, imei string, want *store.Trip) {
		t.Helper()
		got, err := r.Trips().Open(imei)
		switch {
		case want == nil && !errors.Is(err, store.ErrNotFound):
			t.Errorf("open trip of %s: %+v, %v; want ErrNotFound", imei, got, err)
		case want != nil && (err != nil || !reflect.DeepEqual(*got, *want)):
			t.Errorf("open trip of %s: %+v, %v; want %+v", imei, got, err, *want)
		}
	}
	write(t, e, func(r *tx) error {
		for _, trip := range []*store.Trip{a, b, c} {
			if err := r.Trips().Insert(trip); err != nil {
				return err
			}
		}
		open(r, imei, nil)
		if err := r.Trips().SetOpen(a); err != nil {
			return err
		}
		if err := r.Trips().SetOpen(c); err != nil {
			return err
		}
		open(r, imei, a)
		if err := r.Trips().SetOpen(a); err != nil { // again
			return err
		}
		open(r, imei, a)
		if err := r.Trips().SetOpen(b); err != nil {
			return err
		}
		open(r, imei, b)
		open(r, f.imeis[1], c)
		unstored := &store.Trip{IMEI: imei, Start: trackNow}
		if err := r.Trips().SetOpen(unstored); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("opening a trip not stored: %v; want ErrNotFound", err)
		}
		return nil
	})
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM trips WHERE is_open`).Scan(&n); err != nil || n != 2 {
		t.Errorf("%d open trips, %v; want 2", n, err)
	}
	write(t, e, func(r *tx) error {
		for range 2 { // clearing none is no error
			if err := r.Trips().ClearOpen(imei); err != nil {
				return err
			}
		}
		open(r, imei, nil)
		open(r, f.imeis[1], c)
		got, err := r.Trips().ByDevice(imei, time.Time{}, time.Time{})
		if err != nil {
			return err
		}
		if ids := tripIDs(got); !slices.Equal(ids, []int64{a.ID, b.ID}) {
			t.Errorf("the device has trips %v after clearing its open trip; want %v", ids, []int64{a.ID, b.ID})
		}
		return nil
	})
}

// TestTripsByDeviceAndIMEIs lists the trips of a device overlapping a
// span, to the nanosecond at its ends, an open trip ending never, and the
// devices that have trips.
func TestTripsByDeviceAndIMEIs(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[1]
	h := func(n float64) time.Time { return trackNow.Add(time.Duration(n * float64(time.Hour))) }
	// Inserted out of order: ByDevice sorts by start.
	trips := map[string]*store.Trip{
		"b": {IMEI: imei, OrganizationID: f.orgA, Start: h(3), End: h(4)},
		"a": {IMEI: imei, OrganizationID: f.orgA, Start: h(1), End: h(2)},
		"c": {IMEI: imei, OrganizationID: f.orgA, Start: h(5)},
	}
	write(t, e, func(r *tx) error {
		if imeis, err := r.Trips().IMEIs(); err != nil || len(imeis) != 0 {
			t.Errorf("devices with trips before any: %v, %v", imeis, err)
		}
		for _, name := range []string{"b", "a", "c"} {
			if err := r.Trips().Insert(trips[name]); err != nil {
				return err
			}
		}
		for _, imei := range []string{f.imeis[2], f.imeis[0]} {
			if err := r.Trips().Insert(&store.Trip{IMEI: imei, OrganizationID: f.orgB, Start: h(1)}); err != nil {
				return err
			}
		}
		return nil
	})
	cases := []struct {
		start, end time.Time
		want       string
	}{
		{time.Time{}, time.Time{}, "abc"},
		{h(2.5), time.Time{}, "bc"},
		{h(2), time.Time{}, "abc"},
		{h(2).Add(time.Nanosecond), time.Time{}, "bc"},
		{time.Time{}, h(3), "ab"},
		{time.Time{}, h(3).Add(-time.Nanosecond), "a"},
		{h(2).Add(time.Nanosecond), h(3).Add(-time.Nanosecond), ""},
		{h(10), h(11), "c"},
		{time.Time{}, h(0.5), ""},
		{time.Time{}, time.UnixMilli(1 << 62), "abc"},
	}
	read(t, e, func(r *tx) error {
		for _, c := range cases {
			got, err := r.Trips().ByDevice(imei, c.start, c.end)
			if err != nil {
				return err
			}
			want := []store.Trip{}
			for _, name := range c.want {
				want = append(want, *trips[string(name)])
			}
			if !slices.Equal(tripIDs(got), tripIDs(want)) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
				t.Errorf("trips from %s to %s: %v; want %v (%s)", c.start, c.end, tripIDs(got), tripIDs(want), c.want)
			}
		}
		imeis, err := r.Trips().IMEIs()
		if err != nil {
			return err
		}
		if want := []string{f.imeis[0], f.imeis[1], f.imeis[2]}; !slices.Equal(imeis, want) {
			t.Errorf("devices with trips: %v; want %v", imeis, want)
		}
		return nil
	})
}

// TestTripsPurge purges trips in batches: gone are those the devices'
// cutoffs say are due, except each device's open trip.
func TestTripsPurge(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	base := trackNow.AddDate(0, -2, 0)
	cut := store.Cutoffs{f.orgA: base.Add(30 * time.Minute), f.orgB: base.Add(10*time.Minute + 500*time.Microsecond)}
	owners := map[string]*store.OwnerCutoffs{
		f.imeis[0]: ownerCutoffs(t, cut, map[int64]int64{1: f.orgA, 2: f.orgB}),
		f.imeis[2]: ownerCutoffs(t, cut, map[int64]int64{3: f.orgB}),
	}
	type key struct {
		imei string
		i    int
	}
	var all []key
	var openTrip key
	write(t, e, func(r *tx) error {
		for _, imei := range f.imeis {
			for i := range 40 {
				own := int64(1 + i%2)
				if imei == f.imeis[2] {
					own = 3
				}
				// Starts with microseconds: the purge compares their
				// milliseconds with the cutoffs, as the keys of trips count.
				trip := &store.Trip{IMEI: imei, OrganizationID: f.orgA, Ownership: own,
					Start: base.Add(time.Duration(i)*time.Minute + 700*time.Microsecond)}
				if err := r.Trips().Insert(trip); err != nil {
					return err
				}
				all = append(all, key{imei, i})
				if imei == f.imeis[0] && i == 4 {
					openTrip = key{imei, i}
					if err := r.Trips().SetOpen(trip); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	want := map[key]bool{} // kept
	due := 0
	for _, k := range all {
		own := int64(1 + k.i%2)
		if k.imei == f.imeis[2] {
			own = 3
		}
		at := base.Add(time.Duration(k.i) * time.Minute) // to the millisecond
		if oc, ok := owners[k.imei]; ok && oc.Purgeable(own, at) && k != openTrip {
			due++
			continue
		}
		want[k] = true
	}
	if due < 15 {
		t.Fatalf("%d trips are due; the test wants several batches", due)
	}
	deleted, batches := purgeAll(t, e, 5, func(r *tx, from []byte) (int, []byte, error) {
		return r.Trips().Purge(seriesPurge(owners, from, 5))
	})
	if deleted != due || batches < due/5 {
		t.Errorf("purged %d trips in %d batches; want %d in batches of 5", deleted, batches, due)
	}
	read(t, e, func(r *tx) error {
		for _, k := range all {
			_, err := r.Trips().At(k.imei, base.Add(time.Duration(k.i)*time.Minute))
			if kept := err == nil; kept != want[k] {
				t.Errorf("trip %d of %s: kept %v (%v); want %v", k.i, k.imei, kept, err, want[k])
			}
		}
		if got, err := r.Trips().Open(f.imeis[0]); err != nil || !got.Start.Before(cut[f.orgA]) {
			t.Errorf("the open trip after the purge: %+v, %v", got, err)
		}
		return nil
	})
}
