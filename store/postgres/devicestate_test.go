package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// deviceStateFixture is a prepared engine on a new database with one
// partner, one organization and the devices of deviceStateIMEIs in it,
// inserted with plain SQL.
type deviceStateFixture struct {
	t     *testing.T
	e     *Engine
	org   int64
	imeis []string
}

// deviceStateIMEIs are the fixture's devices, in IMEI order.
var deviceStateIMEIs = []string{"490154203237518", "490154203237526", "490154203237534"}

// seedDeviceState opens the fixture.
func seedDeviceState(t *testing.T) *deviceStateFixture {
	t.Helper()
	e := openEngine(t, pgtest.Database(t, ""))
	ctx := context.Background()
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	f := &deviceStateFixture{t: t, e: e, imeis: deviceStateIMEIs}
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var partner int64
	if err := e.pool.QueryRow(ctx, `INSERT INTO partners (name, created_at) VALUES ('Partner', $1) RETURNING id`,
		created).Scan(&partner); err != nil {
		t.Fatal(err)
	}
	if err := e.pool.QueryRow(ctx, `INSERT INTO organizations (name, partner_id, sso_salt, purge_days, created_at)
		VALUES ('Fleet', $1, 'salt', 30, $2) RETURNING id`, partner, created).Scan(&f.org); err != nil {
		t.Fatal(err)
	}
	for _, imei := range f.imeis {
		if _, err := e.pool.Exec(ctx, `INSERT INTO devices (imei, name, name_folded, organization_id, partner_id, status,
				product_type, data_profile_id, created_at, ownership)
			VALUES ($1, 'Truck', 'truck', $2, $3, 'activated', '', 0, $4, 0)`, imei, f.org, partner, created); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// update runs fn in a write transaction and fails the test on error.
func (f *deviceStateFixture) update(fn func(tx *tx) error) {
	f.t.Helper()
	if err := f.e.update(context.Background(), fn); err != nil {
		f.t.Fatal(err)
	}
}

// view runs fn in a read transaction and fails the test on error.
func (f *deviceStateFixture) view(fn func(tx *tx) error) {
	f.t.Helper()
	if err := f.e.view(context.Background(), fn); err != nil {
		f.t.Fatal(err)
	}
}

// removeDevice deletes the device row as the store's RemoveDevice does,
// first of its records.
func (f *deviceStateFixture) removeDevice(imei string) {
	f.t.Helper()
	f.update(func(tx *tx) error {
		_, err := tx.exec(`DELETE FROM devices WHERE imei = $1`, imei)
		return err
	})
}

// count returns the number of rows of table (with an optional WHERE
// clause on $1).
func (f *deviceStateFixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.e.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+sql, args...).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// deviceStatePurge is seriesPurge (tracks_test.go) recording the devices
// it was asked about.
func deviceStatePurge(owners map[string]*store.OwnerCutoffs, asked *[]string, from []byte, limit int) store.SeriesPurge {
	return store.SeriesPurge{From: from, Limit: limit, Owners: func(imei string) (*store.OwnerCutoffs, error) {
		if asked != nil {
			*asked = append(*asked, imei)
		}
		if oc, ok := owners[imei]; ok {
			return oc, nil
		}
		return &store.OwnerCutoffs{}, nil
	}}
}
