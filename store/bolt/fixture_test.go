package bolt_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// fixture is a store on a bbolt file in the test's directory with one
// partner and one organization (and, from newDeviceFixture, one device),
// and the bbolt database beneath it, to write records as an older version
// did and to read what the engine wrote. Every group's layout tests start
// from it.
type fixture struct {
	t       *testing.T
	db      *store.DB
	bolt    *bbolt.DB
	clock   *storetest.Clock
	partner *store.Partner
	org     *store.Organization
	dev     *store.Device
}

// fixtureIMEI is the device of newDeviceFixture.
const fixtureIMEI = "490154203237518"

// openStore opens the store on the bbolt file at path with the clock now;
// it closes when the test ends.
func openStore(t *testing.T, path string, now func() time.Time) *store.DB {
	t.Helper()
	db, err := bolt.Open(path, store.Options{Now: now})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newFixture opens a new store with partner "Partner" and its organization
// "Fleet one".
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: storetest.NewClock(time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC))}
	f.db = openStore(t, filepath.Join(t.TempDir(), "fleetcam.db"), f.clock.Now)
	f.bolt = f.db.Engine().(*bolt.Engine).Bolt()
	f.update(func(tx *store.Tx) (err error) {
		if f.partner, err = tx.CreatePartner("Partner"); err != nil {
			return err
		}
		f.org, err = tx.CreateOrganization(f.partner.ID, "Fleet one", []byte("salt"))
		return err
	})
	return f
}

// newDeviceFixture is newFixture with device fixtureIMEI in the
// organization, for the groups whose records are a device's.
func newDeviceFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.dev = &store.Device{IMEI: fixtureIMEI, Name: "Truck", OrganizationID: f.org.ID, PartnerID: f.partner.ID}
	f.update(func(tx *store.Tx) error { return tx.AddDevice(f.dev) })
	if f.dev.Ownership == 0 {
		t.Fatal("the device has no ownership number")
	}
	return f
}

// update runs fn as the system and fails the test on error.
func (f *fixture) update(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.db.Update(f.t.Context(), store.Actor{Source: "test"}, fn); err != nil {
		f.t.Fatal(err)
	}
}

// view runs fn in a read transaction and fails the test on error.
func (f *fixture) view(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.db.View(f.t.Context(), fn); err != nil {
		f.t.Fatal(err)
	}
}

// put writes value under key of bucket, beside the store's rules.
func (f *fixture) put(bucket string, key, value []byte) {
	f.t.Helper()
	err := f.bolt.Update(func(btx *bbolt.Tx) error { return btx.Bucket([]byte(bucket)).Put(key, value) })
	if err != nil {
		f.t.Fatal(err)
	}
}

// get returns a copy of the value under key of bucket; nil when there is none.
func (f *fixture) get(bucket string, key []byte) []byte {
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

// keys returns a copy of every key of bucket that starts with prefix, in
// key order.
func (f *fixture) keys(bucket string, prefix []byte) [][]byte {
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

// records runs fn over the engine's records in a read-only transaction.
func (f *fixture) records(fn func(rec store.Records) error) {
	f.t.Helper()
	if err := f.db.Engine().View(f.t.Context(), fn); err != nil {
		f.t.Fatal(err)
	}
}

// setSequence sets the sequence of bucket, as a file whose records counted
// to n has it.
func (f *fixture) setSequence(bucket string, n uint64) {
	f.t.Helper()
	err := f.bolt.Update(func(btx *bbolt.Tx) error { return btx.Bucket([]byte(bucket)).SetSequence(n) })
	if err != nil {
		f.t.Fatal(err)
	}
}

// imei returns the n-th valid test IMEI (Luhn check digit appended).
func (f *fixture) imei(n int) string { return storetest.IMEI(fmt.Sprintf("35766010%06d", n)) }

// addDevice puts device n into org for partner.
func (f *fixture) addDevice(n int, org *store.Organization, partnerID int64) *store.Device {
	f.t.Helper()
	d := &store.Device{IMEI: f.imei(n), Name: fmt.Sprintf("Truck %d", n), OrganizationID: org.ID, PartnerID: partnerID}
	f.update(func(tx *store.Tx) error { return tx.AddDevice(d) })
	return d
}

// be8 is v as 8 bytes big-endian, the encoding of ids, times and counts
// in keys and values.
func be8(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// key joins the parts of a key as the file has them: ids (int64) as 8
// bytes big-endian, strings as they are, each string but a leading one
// after a 0 byte.
func key(parts ...any) []byte {
	var k []byte
	for i, p := range parts {
		switch v := p.(type) {
		case int64:
			k = append(k, be8(v)...)
		case string:
			if i > 0 && len(k) > 0 {
				k = append(k, 0)
			}
			k = append(k, v...)
		}
	}
	return k
}
