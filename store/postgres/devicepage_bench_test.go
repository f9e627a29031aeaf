package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// BenchmarkDevicePageCounts times the two ways the engine can answer a
// device's page of 100 over 30 days, alternated in one loop on one
// database, so that a busy machine weighs on both alike: from the daily
// counts (ByDevice) and counted from the index with the page read over the
// whole window (countedPage, what ByDevice did before it had the counts).
// Each is reported as a metric of its own, in milliseconds a page. The
// database holds FLEETCAM_BENCH_EVENTS events (200,000 by default) of 20
// devices, 10,000 each at the default, as a busy device has in a month.
func BenchmarkDevicePageCounts(b *testing.B) {
	n := benchEvents(200_000)
	_, e, _, imeis, start := seedEventPages(b, n, 20)
	f := store.DeviceEventFilter{Start: start, End: start.AddDate(0, 0, 30).Add(-time.Millisecond)}
	for _, offset := range []int{0, n / 20 / 2} {
		p := store.Page{Limit: 100, Offset: offset}
		b.Run(fmt.Sprintf("offset%d", offset), func(b *testing.B) {
			var took [2]time.Duration // from the days' counts, from the index
			i := 0
			for b.Loop() {
				for k := range 2 {
					path := (i + k) % 2
					began := time.Now()
					err := e.view(b.Context(), func(tx *tx) error {
						var page []store.Event
						var total int
						var err error
						if path == 0 {
							page, total, err = events{tx}.ByDevice(imeis[7], f, p)
						} else {
							w := newEventFilter()
							w.add(`imei = @imei`, "imei", imeis[7])
							w.window(f.Start, f.End)
							var all []store.OrgEvent
							all, total, err = events{tx}.countedPage(w, p, false)
							page = plainEvents(all)
						}
						if err == nil && (len(page) != p.Limit || total != n/20) {
							err = fmt.Errorf("page of %d of %d", len(page), total)
						}
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
					took[path] += time.Since(began)
				}
				i++
			}
			b.ReportMetric(float64(took[0].Microseconds())/1000/float64(i), "days-ms/op")
			b.ReportMetric(float64(took[1].Microseconds())/1000/float64(i), "index-ms/op")
		})
	}
}
