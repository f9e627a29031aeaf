package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// BenchmarkPrefetch times a group commit's read-ahead of 50 devices, each
// with its settings, link and track and a GPS sample, as the closed loop's
// commits read them: with their latest samples read, and known from their
// connections. Allocations are the figure to watch: the time is mostly
// the server's, on the same cores.
func BenchmarkPrefetch(b *testing.B) {
	e := trackEngine(b)
	s := seeder{b, e, trackNow}
	partner := s.partner("P").ID
	org := s.organization(store.Organization{Name: "A", PartnerID: partner, Retention: store.Retention{PurgeDays: 31}}).ID
	var imeis []string
	known := map[string]store.LatestGPS{}
	for i := range 50 {
		imei := fmt.Sprintf("352000000000%03d", i)
		s.device(store.Device{IMEI: imei, OrganizationID: org, PartnerID: partner, Ownership: 1})
		p := store.GPSPoint{Time: trackNow, Lat: 52, Lon: 4}
		write(b, e, func(r *tx) error {
			if err := r.DeviceTracks().Put(imei, &store.DeviceTrack{}); err != nil {
				return err
			}
			_, err := r.GPSSamples().Insert(imei, 1, []store.GPSPoint{p})
			return err
		})
		imeis = append(imeis, imei)
		known[imei] = store.LatestGPS{Point: p, Ownership: 1}
	}
	errDone := errors.New("done")
	for _, c := range []struct {
		name  string
		known map[string]store.LatestGPS
	}{{"read", nil}, {"known", known}} {
		b.Run(c.name, func(b *testing.B) {
			a := store.ReadAhead{IMEIs: imeis, Organizations: []int64{org}, Now: trackNow.Add(time.Minute), LatestGPS: c.known}
			b.ReportAllocs()
			for b.Loop() {
				err := e.update(context.Background(), func(r *tx) error {
					if err := r.Prefetch(a); err != nil {
						return err
					}
					return errDone
				})
				if !errors.Is(err, errDone) {
					b.Fatal(err)
				}
			}
		})
	}
}
