package bolt_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// tracksFixture is a bbolt store with one organization and one device in
// it, for the tests of how the GPS samples, tracks, trips, hotspots and
// settings are laid out in the file.
type tracksFixture struct {
	t     *testing.T
	db    *store.DB
	bolt  *bbolt.DB
	clock *storetest.Clock
	org   *store.Organization
	dev   *store.Device
}

// tracksIMEI is the fixture device's IMEI.
const tracksIMEI = "490154203237518"

func newTracksFixture(t *testing.T) *tracksFixture {
	t.Helper()
	clock := storetest.NewClock(time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC))
	db, err := bolt.Open(filepath.Join(t.TempDir(), "fleetcam.db"), store.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &tracksFixture{t: t, db: db, bolt: db.Engine().(*bolt.Engine).Bolt(), clock: clock}
	f.update(func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		if f.org, err = tx.CreateOrganization(p.ID, "Fleet", nil); err != nil {
			return err
		}
		f.dev = &store.Device{IMEI: tracksIMEI, Name: "Truck", OrganizationID: f.org.ID, PartnerID: p.ID}
		return tx.AddDevice(f.dev)
	})
	if f.dev.Ownership == 0 {
		t.Fatal("the device has no ownership number")
	}
	return f
}

// update runs fn in a store transaction and fails the test on an error.
func (f *tracksFixture) update(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.db.Update(f.t.Context(), store.Actor{Source: "test"}, fn); err != nil {
		f.t.Fatal(err)
	}
}

// view runs fn in a read-only store transaction and fails the test on an error.
func (f *tracksFixture) view(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.db.View(f.t.Context(), fn); err != nil {
		f.t.Fatal(err)
	}
}

// records runs fn over the engine's records in a read-only transaction.
func (f *tracksFixture) records(fn func(rec store.Records) error) {
	f.t.Helper()
	if err := f.db.Engine().View(f.t.Context(), fn); err != nil {
		f.t.Fatal(err)
	}
}

// put writes v under key in bucket as an older version of the store did.
func (f *tracksFixture) put(bucket, key, v []byte) {
	f.t.Helper()
	if err := f.bolt.Update(func(btx *bbolt.Tx) error { return btx.Bucket(bucket).Put(key, v) }); err != nil {
		f.t.Fatal(err)
	}
}

// get returns a copy of the value under key in bucket; nil when there is none.
func (f *tracksFixture) get(bucket, key []byte) []byte {
	f.t.Helper()
	var v []byte
	if err := f.bolt.View(func(btx *bbolt.Tx) error {
		v = bytes.Clone(btx.Bucket(bucket).Get(key))
		return nil
	}); err != nil {
		f.t.Fatal(err)
	}
	return v
}
