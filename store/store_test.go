package store

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store/storetest"
)

// openTest opens a store in a temporary directory with a fixed clock.
func openTest(t *testing.T) (*DB, *storetest.Clock) {
	t.Helper()
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db, err := Open(filepath.Join(t.TempDir(), "fleetcam.db"), Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, clock
}

// mustUpdate runs fn in a write transaction and fails the test on error.
func mustUpdate(t *testing.T, db *DB, fn func(tx *Tx) error) {
	t.Helper()
	if err := db.Update(Actor{Source: "test"}, fn); err != nil {
		t.Fatal(err)
	}
}

// seed creates a partner with an organization and returns both ids.
func seed(t *testing.T, db *DB) (partnerID, orgID int64) {
	t.Helper()
	mustUpdate(t, db, func(tx *Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "Org", []byte("salt"))
		partnerID, orgID = p.ID, o.ID
		return err
	})
	return partnerID, orgID
}

// Buckets written in key order keep their pages nearly full instead of
// half empty after every split.
func TestAppendBucketsFillTheirPages(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "fleetcam.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for range 4 {
		err := db.Update(Actor{Source: "test"}, func(tx *Tx) error {
			for i := range 5000 {
				if err := tx.Emit(Message{Kind: MessageGPS, OrganizationID: 1, IMEI: "490154203237518"}, map[string]int{"n": i}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	err = db.bolt.View(func(btx *bolt.Tx) error {
		s := btx.Bucket(bucketMessages).Stats()
		if fill := float64(s.LeafInuse) / float64(s.LeafAlloc); fill < 0.8 {
			t.Errorf("message pages %.0f%% full (%d of %d bytes)", fill*100, s.LeafInuse, s.LeafAlloc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
