package store_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
)

// Benchmarks of the store's hot paths (the event page query's is in
// eventquery_test.go). They run only with -bench:
//
//	go test -run '^$' -bench . -benchtime 200ms ./store

// BenchmarkIngestEvent ingests device events (rules, record, indexes and the
// webhook message) in transactions of a thousand.
func BenchmarkIngestEvent(b *testing.B) {
	f := newEventFixture(b)
	in := EventInput{Type: EventDeceleration, Lat: 52.37, Lon: 4.89, Speed: 61, Accuracy: 4,
		Samples: []MetadataSample{{X: -0.4, Y: -5.8, Z: 9.8, Time: eventT0.Unix(), Speed: 16.9}}}
	b.ReportAllocs()
	b.ResetTimer()
	for lo := 0; lo < b.N; lo += 1000 {
		f.update(func(tx *Tx) error {
			for i := lo; i < min(lo+1000, b.N); i++ {
				in.DeviceEventID, in.Time = strconv.Itoa(i), eventT0.Add(time.Duration(i)*time.Millisecond)
				if r, err := tx.IngestEvent(f.dev, in); err != nil || !r.Created {
					b.Fatalf("ingest: %+v %v", r, err)
				}
			}
			return nil
		})
	}
}

// BenchmarkCommitterGPS writes one GPS sample per job through the group
// commit from many writers at once, as devices awaiting their PUBACK do;
// each job returns once its batch is on disk. noWebhook is an organization
// without GPS webhooks, gpsWebhook one with a GPS URL (every sample also
// becomes an outbox message).
func BenchmarkCommitterGPS(b *testing.B) {
	b.Run("noWebhook", func(b *testing.B) { benchCommitterGPS(b, nil) })
	b.Run("gpsWebhook", func(b *testing.B) { benchCommitterGPS(b, []string{"https://r.example.com/gps"}) })
}

// benchCommitterGPS runs the broker's write for a one-fix GPS message (the
// fix, its webhook message when the organization has a GPS URL, the track)
// from many writers through one Committer.
func benchCommitterGPS(b *testing.B, gpsURLs []string) {
	f := newEventFixture(b)
	f.update(func(tx *Tx) error {
		return tx.PutWebhookSettings(&WebhookSettings{OrganizationID: f.org.ID, GPSURLs: gpsURLs})
	})
	c := f.db.NewCommitter(CommitterOptions{MaxBatch: 1024})
	defer c.Close()
	devs := []*Device{f.dev, f.dev2, f.foreign}
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(50) // 50 writers per CPU
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			d := devs[n%int64(len(devs))]
			err := c.Do(b.Context(), Actor{Source: "device"}, func(tx *Tx) error {
				p := GPSPoint{Time: eventT0.Add(time.Duration(n) * time.Millisecond), Lat: 52.37, Lon: 4.89, Speed: 48, Accuracy: 3.9}
				added, err := tx.AddGPS(d, []GPSPoint{p})
				if err != nil {
					return err
				}
				if tx.HasWebhookReceivers(d.OrganizationID, WebhookTypeGPS) {
					if err := tx.Emit(Message{Kind: MessageGPS, OrganizationID: d.OrganizationID, IMEI: d.IMEI, GPS: added}); err != nil {
						return err
					}
				}
				_, err = tx.TrackGPS(d, added)
				return err
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

// BenchmarkOrgEventsWindow reads the first 100-event page of an
// organization's events as the API asks for it (partner filter, no type
// filter), with 100,000 events over 30 days: the count walks the window.
func BenchmarkOrgEventsWindow(b *testing.B) {
	f := newEventFixture(b)
	const n, days = 100_000, 30
	step := days * 24 * time.Hour / n
	for lo := 0; lo < n; lo += 20_000 {
		f.update(func(tx *Tx) error {
			for i := lo; i < lo+20_000; i++ {
				e := &Event{IMEI: f.dev.IMEI, OrganizationID: f.org.ID, PartnerID: f.partner, Type: EventDeceleration,
					Time: eventT0.Add(time.Duration(i) * step), Severity: SeverityMedium, Status: EventStatusNew}
				if err := tx.StoreEvent(e); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for _, window := range []int{1, days} {
		b.Run(strconv.Itoa(window)+"days", func(b *testing.B) {
			q := EventQuery{Start: eventT0.Add(24 * time.Hour), End: eventT0.Add(time.Duration(24*(1+window)) * time.Hour), PartnerID: f.partner}
			b.ReportAllocs()
			for b.Loop() {
				err := f.db.View(b.Context(), func(tx *Tx) error {
					page, total, err := tx.OrgEvents(f.org.ID, q, Page{Limit: 100})
					if err == nil && (len(page) != 100 || total < 3000) {
						b.Fatalf("page %d of %d", len(page), total)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
