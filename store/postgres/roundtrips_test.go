package postgres

import (
	"errors"
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
	trips0, stmts0 := counts()
	if _, err := e.pool.Exec(t.Context(), `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	trips1, stmts1 := counts()
	if trips1-trips0 != 1 || stmts1-stmts0 != 1 {
		t.Errorf("a statement on its own counted %v round trips and %v statements, want 1 and 1", trips1-trips0, stmts1-stmts0)
	}
	err := e.ViewDevice(t.Context(), f.imeis[0], 0, func(r store.Records) error {
		dev, err := r.Devices().Get(f.imeis[0])
		if err != nil {
			return err
		}
		if _, err := r.Organizations().Get(dev.OrganizationID); err != nil {
			return err
		}
		_, err = r.OrganizationSettings().Get(dev.OrganizationID)
		if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	trips2, stmts2 := counts()
	// The device's rows and its organization's in one statement, its
	// queued commands and assignments, in one implicit transaction: a
	// read the view did not read ahead would run the view again, with
	// more statements.
	if trips2-trips1 != 1 || stmts2-stmts1 != 3 {
		t.Errorf("a device view counted %v round trips and %v statements, want 1 and 3", trips2-trips1, stmts2-stmts1)
	}
	// An authentication reads the device, its credential and its
	// organization's settings in one statement, which needs no
	// transaction of its own.
	err = e.ViewDevice(t.Context(), f.imeis[0], store.ViewAuthentication, func(r store.Records) error {
		dev, err := r.Devices().Get(f.imeis[0])
		if err != nil {
			return err
		}
		if _, err := r.DeviceCredentials().Get(f.imeis[0]); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		_, err = r.OrganizationSettings().Get(dev.OrganizationID)
		if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	trips3, stmts3 := counts()
	if trips3-trips2 != 1 || stmts3-stmts2 != 1 {
		t.Errorf("an authentication's view counted %v round trips and %v statements, want 1 and 1", trips3-trips2, stmts3-stmts2)
	}
	// A device not in the inventory reads as none from the same statement.
	err = e.ViewDevice(t.Context(), "000000000000000", store.ViewAuthentication, func(r store.Records) error {
		_, err := r.Devices().Get("000000000000000")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("authentication of a device not in the inventory: %v, want not found", err)
	}
	trips4, stmts4 := counts()
	if trips4-trips3 != 1 || stmts4-stmts3 != 1 {
		t.Errorf("an unknown device's authentication counted %v round trips and %v statements, want 1 and 1", trips4-trips3, stmts4-stmts3)
	}
}
