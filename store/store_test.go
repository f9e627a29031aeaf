package store_test

import (
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// openTest opens a store in a temporary directory with a fixed clock.
func openTest(t *testing.T) (*DB, *storetest.Clock) {
	t.Helper()
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := storetest.Open(t, storetest.WithClock(clock.Now))
	return db, clock
}

// mustUpdate runs fn in a write transaction and fails the test on error.
func mustUpdate(t *testing.T, db *DB, fn func(tx *Tx) error) {
	t.Helper()
	if err := db.Update(t.Context(), Actor{Source: "test"}, fn); err != nil {
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
