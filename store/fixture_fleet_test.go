package store_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// fleetFixture is a store on a real bbolt file with one partner and one organization.
type fleetFixture struct {
	t       *testing.T
	db      *DB
	clock   *storetest.Clock
	partner *Partner
	org     *Organization
}

func newFleetFixture(t *testing.T) *fleetFixture {
	t.Helper()
	clock := storetest.NewClock(time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC))
	db := storetest.Open(t, storetest.WithClock(clock.Now))
	f := &fleetFixture{t: t, db: db, clock: clock}
	f.update(func(tx *Tx) error {
		var err error
		if f.partner, err = tx.CreatePartner("Partner"); err != nil {
			return err
		}
		f.org, err = tx.CreateOrganization(f.partner.ID, "Fleet one", []byte("salt"))
		return err
	})
	return f
}

// update runs fn as the system and fails the test on error.
func (f *fleetFixture) update(fn func(tx *Tx) error) {
	f.t.Helper()
	if err := f.db.Update(f.t.Context(), Actor{Source: "test"}, fn); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fleetFixture) view(fn func(tx *Tx) error) {
	f.t.Helper()
	if err := f.db.View(f.t.Context(), fn); err != nil {
		f.t.Fatal(err)
	}
}

// fxIMEI returns the n-th valid test IMEI (Luhn check digit appended).
func fxIMEI(n int) string { return storetest.IMEI(fmt.Sprintf("35766010%06d", n)) }

// addDevice puts device n into org for partner.
func (f *fleetFixture) addDevice(n int, org *Organization, partnerID int64) *Device {
	f.t.Helper()
	d := &Device{IMEI: fxIMEI(n), Name: fmt.Sprintf("Truck %d", n), OrganizationID: org.ID, PartnerID: partnerID}
	f.update(func(tx *Tx) error { return tx.AddDevice(d) })
	return d
}

func (f *fleetFixture) messages(kind string) []Message {
	f.t.Helper()
	all := allMessages(f.t, f.db)
	var out []Message
	for _, m := range all {
		if m.Kind == kind {
			out = append(out, m)
		}
	}
	return out
}
