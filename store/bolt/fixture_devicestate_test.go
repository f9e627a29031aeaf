package bolt_test

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// deviceStateFixture is a store on a bbolt file in the test's directory
// with one organization and one device in it, and the bbolt database
// beneath it, to write device state as an older version did and to read
// the keys the engine wrote.
type deviceStateFixture struct {
	t     *testing.T
	db    *store.DB
	bolt  *bbolt.DB
	clock *storetest.Clock
	org   *store.Organization
	dev   *store.Device
}

// deviceStateIMEI is the fixture's device.
const deviceStateIMEI = "490154203237518"

func newDeviceStateFixture(t *testing.T) *deviceStateFixture {
	t.Helper()
	f := &deviceStateFixture{t: t, clock: storetest.NewClock(time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC))}
	db, err := bolt.Open(filepath.Join(t.TempDir(), "fleetcam.db"), store.Options{Now: f.clock.Now})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	f.db, f.bolt = db, db.Engine().(*bolt.Engine).Bolt()
	f.update(func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		if f.org, err = tx.CreateOrganization(p.ID, "Fleet one", []byte("salt")); err != nil {
			return err
		}
		f.dev = &store.Device{IMEI: deviceStateIMEI, Name: "Truck 1", OrganizationID: f.org.ID, PartnerID: p.ID}
		return tx.AddDevice(f.dev)
	})
	return f
}

// update runs fn as the system and fails the test on error.
func (f *deviceStateFixture) update(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.db.Update(f.t.Context(), store.Actor{Source: "test"}, fn); err != nil {
		f.t.Fatal(err)
	}
}

// view runs fn in a read transaction and fails the test on error.
func (f *deviceStateFixture) view(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.db.View(f.t.Context(), fn); err != nil {
		f.t.Fatal(err)
	}
}

// put writes value under key of bucket, beside the store's rules.
func (f *deviceStateFixture) put(bucket string, key, value []byte) {
	f.t.Helper()
	err := f.bolt.Update(func(btx *bbolt.Tx) error { return btx.Bucket([]byte(bucket)).Put(key, value) })
	if err != nil {
		f.t.Fatal(err)
	}
}

// keys returns a copy of every key of bucket that starts with prefix, in
// key order.
func (f *deviceStateFixture) keys(bucket string, prefix []byte) [][]byte {
	f.t.Helper()
	var out [][]byte
	err := f.bolt.View(func(btx *bbolt.Tx) error {
		c := btx.Bucket([]byte(bucket)).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			out = append(out, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// get returns a copy of the value under key of bucket; nil when there is none.
func (f *deviceStateFixture) get(bucket string, key []byte) []byte {
	f.t.Helper()
	var v []byte
	err := f.bolt.View(func(btx *bbolt.Tx) error {
		v = bytes.Clone(btx.Bucket([]byte(bucket)).Get(key))
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

// deviceStateKey is a per-device key as the older version wrote it: imei, 0,
// then n as 8 bytes big-endian (unix ms or a sequence number).
func deviceStateKey(imei string, n int64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(imei), 0), uint64(n))
}

// mediaAgeKey is a media_age key as the older version wrote it: imei, 0,
// class, unix ms, record key.
func mediaAgeKey(r store.MediaRef, class byte, at time.Time) []byte {
	k := append([]byte(r.IMEI), 0, class)
	k = binary.BigEndian.AppendUint64(k, uint64(at.UnixMilli()))
	return append(k, r.Key()...)
}
