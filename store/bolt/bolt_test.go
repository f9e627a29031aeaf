package bolt_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
)

// Buckets written in key order keep their pages nearly full instead of
// half empty after every split.
func TestAppendBucketsFillTheirPages(t *testing.T) {
	f := newFixture(t)
	for range 4 {
		f.update(func(tx *Tx) error {
			for i := range 5000 {
				if err := tx.Emit(Message{Kind: MessageGPS, OrganizationID: 1, IMEI: "490154203237518", GPS: []GPSPoint{{Lat: float64(i)}}}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := f.bolt.View(func(btx *bbolt.Tx) error {
		s := btx.Bucket([]byte("messages")).Stats()
		if fill := float64(s.LeafInuse) / float64(s.LeafAlloc); fill < 0.8 {
			t.Errorf("message pages %.0f%% full (%d of %d bytes)", fill*100, s.LeafInuse, s.LeafAlloc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// freelistInFile reports whether the newest meta page of the bbolt file at
// path names a written free-page list (bbolt's meta layout: after the
// 16-byte page header, magic, version, page size, flags, root bucket (16
// bytes), freelist page id, high-water page id, transaction id).
func freelistInFile(t *testing.T, path string) bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(raw[off:]) }
	pageSize := int(binary.LittleEndian.Uint32(raw[16+8:]))
	newest, freelist := uint64(0), uint64(0)
	for _, base := range []int{0, pageSize} {
		if txid := u64(base + 16 + 48); txid >= newest {
			newest, freelist = txid, u64(base+16+32)
		}
	}
	return freelist != ^uint64(0)
}

// Commits do not write the free-page list while the store is open; Close
// writes it, so the next Open reads it instead of walking the file.
func TestFreelistWrittenOnlyAtClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleetcam.db")
	open := func() *DB {
		t.Helper()
		db, err := bolt.Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db := open()
	var orgID int64
	err := db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "Org", []byte("salt"))
		orgID = o.ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if freelistInFile(t, path) {
		t.Fatal("a commit wrote the free-page list")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !freelistInFile(t, path) {
		t.Fatal("Close did not write the free-page list")
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	db = open()
	if err := db.View(t.Context(), func(tx *Tx) error { _, err := tx.Organization(orgID); return err }); err != nil {
		t.Fatalf("organization after reopening: %v", err)
	}
	if freelistInFile(t, path) {
		t.Fatal("the free-page list is still named after reopening: commits would keep writing it")
	}
}
