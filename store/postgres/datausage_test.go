package postgres

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestDataUsagePeriods stores periods of two devices, replaces one (its
// start the same to the millisecond), lists each device's latest first and
// deletes one device's.
func TestDataUsagePeriods(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a, b := f.imeis[0], f.imeis[1]
	month := func(m time.Month) time.Time { return time.Date(2026, m, 1, 0, 0, 0, 0, time.UTC) }
	f.update(func(tx *tx) error {
		for _, p := range []store.DataUsagePeriod{
			{IMEI: a, PeriodStart: month(2), BytesUp: 10, BytesDown: 20, ReceivedAt: month(3).Add(-time.Hour)},
			{IMEI: a, PeriodStart: month(3), BytesUp: 1, BytesDown: 2, ReceivedAt: month(3)},
			{IMEI: a, PeriodStart: month(1), BytesUp: 5, BytesDown: 6, ReceivedAt: month(2)},
			{IMEI: b, PeriodStart: month(3), BytesUp: 7, BytesDown: 8, ReceivedAt: month(3)},
			// The same period as a's March, to the millisecond: its running total.
			{IMEI: a, PeriodStart: month(3).Add(400 * time.Microsecond), BytesUp: 3, BytesDown: 4, ReceivedAt: month(3).Add(time.Hour)},
		} {
			if err := tx.DataUsagePeriods().Put(&p); err != nil {
				return err
			}
		}
		return nil
	})
	latest := func(imei string, n int) []string {
		t.Helper()
		var out []string
		f.view(func(tx *tx) error {
			ps, err := tx.DataUsagePeriods().Latest(imei, n)
			for _, p := range ps {
				out = append(out, fmt.Sprintf("%s %s %d/%d %s", p.IMEI, p.PeriodStart.Format(time.DateOnly), p.BytesUp, p.BytesDown,
					p.ReceivedAt.Format(time.RFC3339)))
			}
			return err
		})
		return out
	}
	want := []string{
		a + " 2026-03-01 3/4 2026-03-01T01:00:00Z",
		a + " 2026-02-01 10/20 2026-02-28T23:00:00Z",
		a + " 2026-01-01 5/6 2026-02-01T00:00:00Z",
	}
	if got := latest(a, 0); !slices.Equal(got, want) {
		t.Fatalf("Latest(a, 0) = %q\nwant %q", got, want)
	}
	if got := latest(a, 2); !slices.Equal(got, want[:2]) {
		t.Fatalf("Latest(a, 2) = %q\nwant %q", got, want[:2])
	}
	f.update(func(tx *tx) error { return tx.DataUsagePeriods().DeleteDevice(a) })
	if got := latest(a, 0); len(got) != 0 {
		t.Fatalf("periods after DeleteDevice %q", got)
	}
	if got := latest(b, 0); len(got) != 1 {
		t.Fatalf("the other device's periods after DeleteDevice %q", got)
	}
	// Periods outlive the device's row: the store drops them itself.
	f.removeDevice(b)
	if got := latest(b, 0); len(got) != 1 {
		t.Fatalf("periods of a device removed by a transaction that did not drop them %q", got)
	}
}

// TestDataUsagePurge purges in batches the periods older than the cutoff
// of each device's organization, device by device, from the resume
// position of the batch before, and leaves devices without a cutoff alone.
func TestDataUsagePurge(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a, b, c := f.imeis[0], f.imeis[1], f.imeis[2]
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	f.update(func(tx *tx) error {
		for _, imei := range []string{a, b, c, "490154203237542"} { // the last one removed: in no organization
			for m := range 150 { // days, so that a device has more than one read returns
				p := store.DataUsagePeriod{IMEI: imei, PeriodStart: start.AddDate(0, 0, m), ReceivedAt: start.AddDate(0, 0, m+1)}
				if err := tx.DataUsagePeriods().Put(&p); err != nil {
					return err
				}
			}
		}
		return nil
	})
	owners := map[string]*store.OwnerCutoffs{
		a: ownerCutoffs(t, store.Cutoffs{10: start.AddDate(0, 0, 120)}, map[int64]int64{0: 10}),
		// b's periods are of ownership 0, whose organization has no cutoff.
		b: ownerCutoffs(t, store.Cutoffs{10: start.AddDate(0, 0, 120)}, map[int64]int64{0: 20, 1: 10}),
		c: ownerCutoffs(t, store.Cutoffs{10: start.AddDate(0, 0, 30).Add(time.Hour)}, map[int64]int64{0: 10}),
	}
	var from []byte
	var asked []string
	deleted, batches := 0, 0
	for {
		var n int
		f.update(func(tx *tx) (err error) {
			n, from, err = tx.DataUsagePeriods().Purge(deviceStatePurge(owners, &asked, from, 40))
			return err
		})
		if n > 40 {
			t.Fatalf("a batch of 40 deleted %d", n)
		}
		deleted += n
		batches++
		if from == nil {
			break
		}
	}
	if deleted != 120+31 || batches != 4 {
		t.Fatalf("deleted %d periods in %d batches; want 151 in 4", deleted, batches)
	}
	for imei, want := range map[string]int{a: 30, b: 150, c: 119, "490154203237542": 150} {
		if n := f.count(`data_usage_periods WHERE imei = $1`, imei); n != want {
			t.Errorf("%s has %d periods left; want %d", imei, n, want)
		}
	}
	if n := f.count(`data_usage_periods WHERE imei = $1 AND period_start < $2`, a, start.AddDate(0, 0, 120)); n != 0 {
		t.Errorf("a has %d periods before its cutoff left", n)
	}
	// Three batches of a's 120, the third going on to b (nothing due) and
	// to c's first due period, where the fourth resumed and went on to the
	// end.
	if want := []string{a, a, a, b, c, c, "490154203237542"}; !slices.Equal(asked, want) {
		t.Errorf("the batches asked for the cutoffs of %q; want %q", asked, want)
	}
}
