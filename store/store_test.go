package store_test

import (
	"errors"
	"fmt"
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

// ensureOrganization makes organization 1 exist, for tests that record
// messages of it without a fixture of their own (a message belongs to an
// organization, which an engine may hold it to).
func ensureOrganization(tx *Tx) error {
	_, err := tx.Organization(1)
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	p, err := tx.CreatePartner("Partner")
	if err != nil {
		return err
	}
	o, err := tx.CreateOrganization(p.ID, "Organization", nil)
	if err == nil && o.ID != 1 {
		err = fmt.Errorf("the first organization has id %d, not 1", o.ID)
	}
	return err
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
