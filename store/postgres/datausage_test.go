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

// TestDataUsagePurgeAsksOncePerBatch: the purge walks the devices with
// periods in IMEI order and asks for each one's cutoffs once a batch (the
// engine suite, store/enginetest, tests what it deletes).
func TestDataUsagePurgeAsksOncePerBatch(t *testing.T) {
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
		b: ownerCutoffs(t, store.Cutoffs{10: start.AddDate(0, 0, 120)}, map[int64]int64{0: 20, 1: 10}),
		c: ownerCutoffs(t, store.Cutoffs{10: start.AddDate(0, 0, 30).Add(time.Hour)}, map[int64]int64{0: 10}),
	}
	var asked []string
	purgeAll(t, f.e, 40, func(tx *tx, from []byte) (int, []byte, error) {
		return tx.DataUsagePeriods().Purge(deviceStatePurge(owners, &asked, from, 40))
	})
	// Three batches of a's 120, the third going on to b (nothing due) and
	// to c's first due period, where the fourth resumed and went on to the
	// end.
	if want := []string{a, a, a, b, c, c, "490154203237542"}; !slices.Equal(asked, want) {
		t.Errorf("the batches asked for the cutoffs of %q; want %q", asked, want)
	}
}
