package postgres

import (
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestDataUsagePeriodsOutliveTheDevice: periods outlive the device's row
// (the store drops them itself); the engine suite, store/enginetest, tests
// the periods themselves.
func TestDataUsagePeriodsOutliveTheDevice(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	b := f.imeis[1]
	f.update(func(tx *tx) error {
		return tx.DataUsagePeriods().Put(&store.DataUsagePeriod{IMEI: b, PeriodStart: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)})
	})
	f.removeDevice(b)
	f.view(func(tx *tx) error {
		ps, err := tx.DataUsagePeriods().Latest(b, 0)
		if len(ps) != 1 {
			t.Errorf("periods of a device removed by a transaction that did not drop them: %+v, %v", ps, err)
		}
		return err
	})
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
