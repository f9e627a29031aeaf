package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/fleetcam/fleetcam/store"
)

// TestRoundTripsCounted: the engine's metrics count one round trip for a
// statement sent on its own and one for a device view's batch, and every
// statement in each.
func TestRoundTripsCounted(t *testing.T) {
	t.Parallel()
	e := trackEngine(t)
	f := seedTracks(t, e)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	counts := func() (trips, statements float64) {
		t.Helper()
		readsEnded(t, e) // the ROLLBACKs of earlier reads count where they were sent
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			v := mf.GetMetric()[0].GetCounter().GetValue()
			switch mf.GetName() {
			case "fleetcam_store_postgres_round_trips_total":
				trips = v
			case "fleetcam_store_postgres_statements_total":
				statements = v
			}
			if mf.GetType() != dto.MetricType_COUNTER {
				t.Errorf("%s is a %v, want a counter", mf.GetName(), mf.GetType())
			}
		}
		return trips, statements
	}
	// sends checks that what runs sends trips round trips of stmts
	// statements in all.
	sends := func(what string, trips, stmts float64, run func() error) {
		t.Helper()
		trips0, stmts0 := counts()
		if err := run(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		trips1, stmts1 := counts()
		if trips1-trips0 != trips || stmts1-stmts0 != stmts {
			t.Errorf("%s counted %v round trips and %v statements, want %v and %v", what, trips1-trips0, stmts1-stmts0, trips, stmts)
		}
	}
	// absent is err, but nil for a row that is not there.
	absent := func(err error) error {
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	sends("a statement on its own", 1, 1, func() error {
		_, err := e.pool.Exec(t.Context(), `SELECT 1`)
		return err
	})
	// The device's rows and its organization's in one statement, its
	// queued commands and assignments, in one implicit transaction: a
	// read the view did not read ahead would run the view again, with
	// more statements.
	sends("a device view", 1, 3, func() error {
		return e.ViewDevice(t.Context(), f.imeis[0], 0, func(r store.Records) error {
			dev, err := r.Devices().Get(f.imeis[0])
			if err != nil {
				return err
			}
			if _, err := r.Organizations().Get(dev.OrganizationID); err != nil {
				return err
			}
			_, err = r.OrganizationSettings().Get(dev.OrganizationID)
			return absent(err)
		})
	})
	// An authentication reads the device, its credential and its
	// organization's settings in one statement.
	sends("an authentication's view", 1, 1, func() error {
		return e.ViewDevice(t.Context(), f.imeis[0], store.ViewAuthentication, func(r store.Records) error {
			dev, err := r.Devices().Get(f.imeis[0])
			if err != nil {
				return err
			}
			if _, err := r.DeviceCredentials().Get(f.imeis[0]); absent(err) != nil {
				return err
			}
			_, err = r.OrganizationSettings().Get(dev.OrganizationID)
			return absent(err)
		})
	})
	// A device not in the inventory reads as none from the same statement.
	sends("an unknown device's authentication", 1, 1, func() error {
		err := e.ViewDevice(t.Context(), "000000000000000", store.ViewAuthentication, func(r store.Records) error {
			_, err := r.Devices().Get("000000000000000")
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%v, want not found", err)
		}
		return nil
	})
}
