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

// directoryFixture is a store on a bbolt file in the test's directory with
// one partner and one organization, and the bbolt database beneath it, to
// write records as an older version did and to read what the engine wrote.
type directoryFixture struct {
	t       *testing.T
	db      *store.DB
	bolt    *bbolt.DB
	clock   *storetest.Clock
	partner *store.Partner
	org     *store.Organization
}

func newDirectoryFixture(t *testing.T) *directoryFixture {
	t.Helper()
	f := &directoryFixture{t: t, clock: storetest.NewClock(time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC))}
	db, err := bolt.Open(filepath.Join(t.TempDir(), "fleetcam.db"), store.Options{Now: f.clock.Now})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	f.db, f.bolt = db, db.Engine().(*bolt.Engine).Bolt()
	f.update(func(tx *store.Tx) error {
		if f.partner, err = tx.CreatePartner("Partner"); err != nil {
			return err
		}
		f.org, err = tx.CreateOrganization(f.partner.ID, "Fleet one", []byte("salt"))
		return err
	})
	return f
}

// update runs fn as the system and fails the test on error.
func (f *directoryFixture) update(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.db.Update(f.t.Context(), store.Actor{Source: "test"}, fn); err != nil {
		f.t.Fatal(err)
	}
}

func (f *directoryFixture) view(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.db.View(f.t.Context(), fn); err != nil {
		f.t.Fatal(err)
	}
}

// put writes value under key of bucket, beside the store's rules.
func (f *directoryFixture) put(bucket string, key, value []byte) {
	f.t.Helper()
	err := f.bolt.Update(func(btx *bbolt.Tx) error { return btx.Bucket([]byte(bucket)).Put(key, value) })
	if err != nil {
		f.t.Fatal(err)
	}
}

// get returns a copy of the value under key of bucket; nil when there is none.
func (f *directoryFixture) get(bucket string, key []byte) []byte {
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

// setSequence sets the sequence of bucket, as a file whose records counted
// to n has it.
func (f *directoryFixture) setSequence(bucket string, n uint64) {
	f.t.Helper()
	err := f.bolt.Update(func(btx *bbolt.Tx) error { return btx.Bucket([]byte(bucket)).SetSequence(n) })
	if err != nil {
		f.t.Fatal(err)
	}
}

// imei returns the n-th valid test IMEI (Luhn check digit appended).
func (f *directoryFixture) imei(n int) string {
	body := fmt.Sprintf("35766010%06d", n)
	sum := 0
	for i := 0; i < 14; i++ {
		d := int(body[i] - '0')
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return body + fmt.Sprint((10-sum%10)%10)
}

// addDevice puts device n into org for partner.
func (f *directoryFixture) addDevice(n int, org *store.Organization, partnerID int64) *store.Device {
	f.t.Helper()
	d := &store.Device{IMEI: f.imei(n), Name: fmt.Sprintf("Truck %d", n), OrganizationID: org.ID, PartnerID: partnerID}
	f.update(func(tx *store.Tx) error { return tx.AddDevice(d) })
	return d
}

// be8 is v as 8 bytes big-endian, the encoding of ids and times in keys
// and values.
func (f *directoryFixture) be8(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// key joins the parts of a key as the file has them: ids (int64) as 8
// bytes big-endian, strings as they are, each string but a leading one
// after a 0 byte.
func (f *directoryFixture) key(parts ...any) []byte {
	var k []byte
	for i, p := range parts {
		switch v := p.(type) {
		case int64:
			k = append(k, f.be8(v)...)
		case string:
			if i > 0 && len(k) > 0 {
				k = append(k, 0)
			}
			k = append(k, v...)
		}
	}
	return k
}
