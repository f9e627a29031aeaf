package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// deviceStateFixture is a prepared engine on a new database with one
// partner, one organization and the devices of deviceStateIMEIs in it,
// inserted through the engine's records.
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
	e := openPrepared(t)
	s := seeder{t, e, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := &deviceStateFixture{t: t, e: e, imeis: deviceStateIMEIs}
	partner := s.partner("Partner").ID
	f.org = s.organization(store.Organization{Name: "Fleet", PartnerID: partner, SSOSalt: []byte("salt"),
		Retention: store.Retention{PurgeDays: 30}}).ID
	for _, imei := range f.imeis {
		s.device(store.Device{IMEI: imei, Name: "Truck", OrganizationID: f.org, PartnerID: partner})
	}
	return f
}

// update runs fn in a write transaction and fails the test on error.
func (f *deviceStateFixture) update(fn func(tx *tx) error) {
	f.t.Helper()
	write(f.t, f.e, fn)
}

// view runs fn in a read transaction and fails the test on error.
func (f *deviceStateFixture) view(fn func(tx *tx) error) {
	f.t.Helper()
	read(f.t, f.e, fn)
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

// deviceStatePurge is seriesPurge (enginetest.SeriesPurge) recording the devices
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
