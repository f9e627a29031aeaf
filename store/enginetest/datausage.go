package enginetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// dataUsageTests are the tests of the data usage retention.
var dataUsageTests = []test{
	{"DataUsagePurge", testDataUsagePurge},
}

// testDataUsagePurge purges in batches of 40 the periods of four devices,
// 150 daily periods each, that are older than the cutoff of their
// organization: all of a device whose periods (of ownership 0) belong to
// an organization with a cutoff, none of one whose ownership 0 is of an
// organization without, and none of a device without cutoffs (not in the
// inventory).
func testDataUsagePurge(t *testing.T, e store.Engine) {
	imeis := seedDevices(t, e, 3)
	a, b, c, d := imeis[0], imeis[1], imeis[2], testIMEI(4)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	day := func(n int) time.Time { return start.AddDate(0, 0, n) }
	write(t, e, func(r store.Records) error {
		for _, imei := range []string{a, b, c, d} {
			for n := range 150 {
				p := store.DataUsagePeriod{IMEI: imei, PeriodStart: day(n), BytesUp: int64(n), ReceivedAt: day(n + 1)}
				if err := r.DataUsagePeriods().Put(&p); err != nil {
					return err
				}
			}
		}
		return nil
	})
	owners := map[string]*store.OwnerCutoffs{
		a: OwnerCutoffs(t, store.Cutoffs{10: day(120)}, map[int64]int64{0: 10}),
		// b's periods are of ownership 0, whose organization has no cutoff.
		b: OwnerCutoffs(t, store.Cutoffs{10: day(120)}, map[int64]int64{0: 20, 1: 10}),
		c: OwnerCutoffs(t, store.Cutoffs{10: day(30).Add(time.Hour)}, map[int64]int64{0: 10}),
	}
	deleted, batches := purgeAll(t, e, 40, func(r store.Records, from []byte) (int, []byte, error) {
		return r.DataUsagePeriods().Purge(SeriesPurge(owners, from, 40))
	})
	if deleted != 151 || batches != 4 {
		t.Errorf("deleted %d periods in %d batches; want 151 in 4", deleted, batches)
	}
	// What is left of each device: how many periods, the latest and the
	// oldest.
	left := func(imei string) string {
		var out string
		read(t, e, func(r store.Records) error {
			ps, err := r.DataUsagePeriods().Latest(imei, 0)
			if len(ps) > 0 {
				out = fmt.Sprintf("%d from %s to %s", len(ps), ps[len(ps)-1].PeriodStart.Format(time.DateOnly),
					ps[0].PeriodStart.Format(time.DateOnly))
			}
			return err
		})
		return out
	}
	for imei, want := range map[string]string{
		a: "30 from 2025-05-01 to 2025-05-30",  // days 120 to 149
		b: "150 from 2025-01-01 to 2025-05-30", // none due
		c: "119 from 2025-02-01 to 2025-05-30", // days 31 to 149
		d: "150 from 2025-01-01 to 2025-05-30", // no cutoffs
	} {
		wantEqual(t, "periods left of "+imei, left(imei), want)
	}
	// Nothing is due any more.
	write(t, e, func(r store.Records) error {
		n, next, err := r.DataUsagePeriods().Purge(SeriesPurge(owners, nil, 40))
		if err != nil || n != 0 || next != nil {
			t.Errorf("purging again: %d, %x, %v; want nothing", n, next, err)
		}
		return nil
	})
}
