package postgres

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// gpsAt is the sample of the tests at second i after base, with every
// number set.
func gpsAt(base time.Time, i int) store.GPSPoint {
	return store.GPSPoint{Time: base.Add(time.Duration(i) * time.Second), Lat: 48 + float64(i)/100, Lon: -11.5,
		Alt: 512.25, Speed: float64(i), Accuracy: 3.5, Heading: 271.5}
}

// gpsTimes are the seconds after base of points.
func gpsTimes(base time.Time, points []store.GPSPoint) []int {
	out := []int{}
	for _, p := range points {
		out = append(out, int(p.Time.Sub(base)/time.Second))
	}
	return out
}

// TestGPSInsertKeepsOneSamplePerMillisecond inserts a sample with
// nanoseconds, then another in its millisecond, which is not stored, and
// reads back the first, at its millisecond.
func TestGPSInsertKeepsOneSamplePerMillisecond(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei := f.imeis[0]
	p := gpsAt(trackNow, 0)
	p.Time = p.Time.Add(7*time.Millisecond + 654321*time.Nanosecond)
	write(t, e, func(r *tx) error {
		for i, want := range []bool{true, false} {
			q := p
			q.Lat += float64(i)
			q.Time = q.Time.Add(-time.Duration(i) * 600 * time.Microsecond)
			if stored, err := insertOne(r, imei, 4, q); err != nil || stored != want {
				t.Errorf("insert %d: stored %v, %v; want %v", i, stored, err, want)
			}
		}
		// Another device has its own samples at the same millisecond.
		if stored, err := insertOne(r, f.imeis[1], 0, p); err != nil || !stored {
			t.Errorf("the same millisecond of another device: stored %v, %v", stored, err)
		}
		return nil
	})
	read(t, e, func(r *tx) error {
		got, err := r.GPSSamples().Range(imei, time.Time{}, trackNow.AddDate(1, 0, 0), store.GPSFilter{}, 0)
		if err != nil {
			return err
		}
		want := p
		want.Time = trackNow.Add(7 * time.Millisecond)
		if !reflect.DeepEqual(got, []store.GPSPoint{want}) {
			t.Errorf("stored %+v; want %+v", got, want)
		}
		return nil
	})
	// The day's partition holds it.
	var partition string
	if err := e.pool.QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM gps_samples WHERE imei = $1`,
		imei).Scan(&partition); err != nil || partition != "gps_samples_y2026m03d15" {
		t.Errorf("the sample is in %q, %v; want gps_samples_y2026m03d15", partition, err)
	}
}

// TestGPSRangeAndLatest reads the samples of a device from start to end,
// both counted to the millisecond, with and without a limit, a holder and
// points to leave out, and the latest of them.
func TestGPSRangeAndLatest(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	imei, other := f.imeis[0], f.imeis[1]
	base := trackNow.Add(-time.Hour)
	// Samples 0 to 4 of ownership 5, 5 to 9 of ownership 7; samples 0 to 9
	// of the other device recorded before ownership numbers.
	write(t, e, func(r *tx) error {
		for i := range 10 {
			own := int64(5)
			if i >= 5 {
				own = 7
			}
			if _, err := insertOne(r, imei, own, gpsAt(base, i)); err != nil {
				return err
			}
			if _, err := insertOne(r, other, 0, gpsAt(base, i)); err != nil {
				return err
			}
		}
		return nil
	})
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	endOfTime := time.UnixMilli(math.MaxInt64)
	// The holder of ownership 0 was added within sample 3's millisecond,
	// after it: samples from 4 on are its.
	newcomer := &store.Device{IMEI: other, CreatedAt: at(3).Add(500 * time.Microsecond)}
	cases := []struct {
		name       string
		imei       string
		start, end time.Time
		f          store.GPSFilter
		limit      int
		want       []int
	}{
		{"all", imei, time.Time{}, endOfTime, store.GPSFilter{}, 0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"bounds to the millisecond", imei, at(2).Add(900 * time.Microsecond), at(6).Add(999 * time.Microsecond),
			store.GPSFilter{}, 0, []int{2, 3, 4, 5, 6}},
		{"bounds a millisecond off", imei, at(2).Add(time.Millisecond), at(6).Add(-time.Nanosecond),
			store.GPSFilter{}, 0, []int{3, 4, 5}},
		{"limit", imei, at(2), endOfTime, store.GPSFilter{}, 3, []int{2, 3, 4}},
		{"none", imei, at(10), endOfTime, store.GPSFilter{}, 0, []int{}},
		{"end before start", imei, at(5), at(4), store.GPSFilter{}, 0, []int{}},
		{"holder of ownership 7", imei, time.Time{}, endOfTime,
			store.GPSFilter{Holder: &store.Device{IMEI: imei, Ownership: 7}}, 0, []int{5, 6, 7, 8, 9}},
		{"holder of ownership 5", imei, time.Time{}, endOfTime,
			store.GPSFilter{Holder: &store.Device{IMEI: imei, Ownership: 5, CreatedAt: at(9)}}, 0, []int{0, 1, 2, 3, 4}},
		{"holder of no ownership", imei, time.Time{}, endOfTime,
			store.GPSFilter{Holder: &store.Device{IMEI: imei}}, 0, []int{}},
		{"holder before ownership numbers", other, time.Time{}, endOfTime,
			store.GPSFilter{Holder: newcomer}, 0, []int{4, 5, 6, 7, 8, 9}},
		{"holder before ownership numbers added at zero", other, time.Time{}, endOfTime,
			store.GPSFilter{Holder: &store.Device{IMEI: other}}, 0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"except", imei, time.Time{}, endOfTime,
			store.GPSFilter{Except: []store.GPSPoint{{Time: at(9).Add(300 * time.Microsecond)}, {Time: at(0)}, {Time: at(4)}}},
			0, []int{1, 2, 3, 5, 6, 7, 8}},
		{"holder and except", imei, time.Time{}, endOfTime,
			store.GPSFilter{Holder: &store.Device{IMEI: imei, Ownership: 7}, Except: []store.GPSPoint{{Time: at(9)}}},
			2, []int{5, 6}},
		{"other device", "351000000000009", time.Time{}, endOfTime, store.GPSFilter{}, 0, []int{}},
	}
	read(t, e, func(r *tx) error {
		for _, c := range cases {
			got, err := r.GPSSamples().Range(c.imei, c.start, c.end, c.f, c.limit)
			if err != nil {
				return err
			}
			if times := gpsTimes(base, got); !slices.Equal(times, c.want) {
				t.Errorf("%s: range has samples %v; want %v", c.name, times, c.want)
			}
			if len(got) > 0 && !reflect.DeepEqual(got[0], gpsAt(base, c.want[0])) {
				t.Errorf("%s: range's first sample %+v; want %+v", c.name, got[0], gpsAt(base, c.want[0]))
			}
			if c.limit > 0 {
				continue
			}
			p, ok, err := r.GPSSamples().Latest(c.imei, c.start, c.end, c.f)
			if err != nil {
				return err
			}
			switch {
			case len(c.want) == 0 && ok:
				t.Errorf("%s: latest is %+v; want none", c.name, p)
			case len(c.want) > 0 && (!ok || !reflect.DeepEqual(p, gpsAt(base, c.want[len(c.want)-1]))):
				t.Errorf("%s: latest is %+v, %v; want sample %d", c.name, p, ok, c.want[len(c.want)-1])
			}
		}
		return nil
	})
}

// TestGPSPurge purges the samples of three devices in batches and finds
// gone exactly those the devices' cutoffs say are due, interleaved with
// those of an ownership whose organization keeps them longer.
func TestGPSPurge(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	base := trackNow.AddDate(0, -2, 0)
	cutA, cutB := base.Add(40*time.Second), base.Add(20*time.Second+time.Nanosecond)
	cut := store.Cutoffs{f.orgA: cutA, f.orgB: cutB}
	// Device 0: ownership 1 of A and 2 of B take turns. Device 1:
	// ownership 3 of A, and 4 of an organization without a cutoff.
	// Device 2: ownership 0, of no organization it names.
	owners := map[string]*store.OwnerCutoffs{
		f.imeis[0]: ownerCutoffs(t, cut, map[int64]int64{1: f.orgA, 2: f.orgB}),
		f.imeis[1]: ownerCutoffs(t, cut, map[int64]int64{3: f.orgA, 4: 99}),
	}
	ownership := func(imei string, i int) int64 {
		switch imei {
		case f.imeis[0]:
			return int64(1 + i%2)
		case f.imeis[1]:
			return int64(3 + i%2)
		}
		return 0
	}
	write(t, e, func(r *tx) error {
		for _, imei := range f.imeis {
			for i := range 60 {
				if _, err := insertOne(r, imei, ownership(imei, i), gpsAt(base, i)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	want := map[string][]int{}
	due := 0
	for _, imei := range f.imeis {
		want[imei] = []int{}
		for i := range 60 {
			if oc, ok := owners[imei]; ok && oc.Purgeable(ownership(imei, i), gpsAt(base, i).Time) {
				due++
				continue
			}
			want[imei] = append(want[imei], i)
		}
	}
	if due < 20 {
		t.Fatalf("%d samples are due; the test wants several batches", due)
	}
	// A wrong resume position is refused.
	err := e.update(context.Background(), func(r *tx) error {
		_, _, err := r.GPSSamples().Purge(seriesPurge(owners, []byte("351000000000000"), 4))
		return err
	})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a purge from a wrong position: %v; want ErrInvalid", err)
	}
	deleted, batches := purgeAll(t, e, 4, func(r *tx, from []byte) (int, []byte, error) {
		return r.GPSSamples().Purge(seriesPurge(owners, from, 4))
	})
	if deleted != due || batches < due/4 {
		t.Errorf("purged %d samples in %d batches; want %d in batches of 4", deleted, batches, due)
	}
	read(t, e, func(r *tx) error {
		for _, imei := range f.imeis {
			got, err := r.GPSSamples().Range(imei, time.Time{}, trackNow, store.GPSFilter{}, 0)
			if err != nil {
				return err
			}
			if times := gpsTimes(base, got); !slices.Equal(times, want[imei]) {
				t.Errorf("device %s kept samples %v; want %v", imei, times, want[imei])
			}
		}
		return nil
	})
	// A purge without a limit deletes in one batch; nothing is left due.
	if n, batches := purgeAll(t, e, 0, func(r *tx, from []byte) (int, []byte, error) {
		return r.GPSSamples().Purge(seriesPurge(owners, from, 0))
	}); n != 0 || batches != 1 {
		t.Errorf("a second purge deleted %d in %d batches; want nothing in one", n, batches)
	}
}

// insertOne stores the one sample p of imei and reports whether it did.
func insertOne(r *tx, imei string, ownership int64, p store.GPSPoint) (bool, error) {
	stored, err := r.GPSSamples().Insert(imei, ownership, []store.GPSPoint{p})
	if err != nil {
		return false, err
	}
	return stored[0], nil
}
