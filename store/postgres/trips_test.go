package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestTripsOpenFlag: a device's open trip is the one row of its trips
// flagged open, moved when another is opened (the engine suite,
// store/enginetest, tests the trips themselves).
func TestTripsOpenFlag(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	a := &store.Trip{IMEI: f.imeis[0], OrganizationID: f.orgA, Start: trackNow.Add(-3 * time.Hour)}
	b := &store.Trip{IMEI: f.imeis[0], OrganizationID: f.orgA, Start: trackNow.Add(-time.Hour)}
	c := &store.Trip{IMEI: f.imeis[1], OrganizationID: f.orgA, Start: trackNow.Add(-time.Hour)}
	write(t, e, func(r *tx) error {
		for _, trip := range []*store.Trip{a, b, c} {
			if err := r.Trips().Insert(trip); err != nil {
				return err
			}
		}
		for _, trip := range []*store.Trip{a, c, b} {
			if err := r.Trips().SetOpen(trip); err != nil {
				return err
			}
		}
		return nil
	})
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM trips WHERE is_open`).Scan(&n); err != nil || n != 2 {
		t.Errorf("%d open trips, %v; want 2", n, err)
	}
}
