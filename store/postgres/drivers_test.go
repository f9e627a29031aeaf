package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// driverSeed is a migrated database with the directory rows the driver
// records reference: one partner and two organizations.
type driverSeed struct {
	e          *Engine
	org1, org2 int64
}

// seedDrivers opens a prepared engine on a new database and inserts the
// partner and organizations.
func seedDrivers(t *testing.T) driverSeed {
	t.Helper()
	e := openPrepared(t)
	s := seeder{t, e, time.Now()}
	p := s.partner("Partner").ID
	org := func(name string) int64 {
		return s.organization(store.Organization{Name: name, PartnerID: p, SSOSalt: []byte("salt")}).ID
	}
	return driverSeed{e: e, org1: org("One"), org2: org("Two")}
}

// update runs fn in a write transaction and fails the test on its error.
func (s driverSeed) update(t *testing.T, fn func(t *tx) error) {
	t.Helper()
	write(t, s.e, fn)
}

// driver is a driver of org, created at, with its code, third-party id and
// QR payload made from n.
func driver(org int64, n int, first, last, license string, active bool, at time.Time) *store.Driver {
	return &store.Driver{OrganizationID: org, ThirdPartyID: fmt.Sprintf("tp-%d", n), FirstName: first, LastName: last,
		DrivingLicense: license, Code: fmt.Sprintf("%05d", n), QRPayload: fmt.Sprintf("FCDRV1-%d", n), IsActive: active,
		CreatedAt: at, UpdatedAt: at.Add(time.Minute)}
}

// TestDriverConstraints: the schema refuses what the store's rules never
// write (the engine suite tests what the records read): a driver's code
// or third-party id used in its organization, a QR payload used anywhere,
// a second open session of a device, and a driver deleted without its
// assignments.
func TestDriverConstraints(t *testing.T) {
	t.Parallel()
	s := seedDrivers(t)
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	a, b := driver(s.org1, 1, "Ann", "", "", true, at), driver(s.org1, 2, "Bob", "", "", true, at)
	const imei = "357660100000017"
	s.update(t, func(t *tx) error {
		for _, d := range []*store.Driver{a, b} {
			if err := t.Drivers().Insert(d); err != nil {
				return err
			}
		}
		if err := t.DriverAssignments().Insert(&store.DriverAssignment{OrganizationID: s.org1, DriverID: b.ID, IMEI: imei,
			Start: at, CreatedAt: at}); err != nil {
			return err
		}
		return t.DriverSessions().Begin(&store.DriverSession{IMEI: imei, OrganizationID: s.org1, DriverID: a.ID, Start: at, Method: "pin"})
	})
	clash := *b
	clash.Code = a.Code
	for name, fn := range map[string]func(t *tx) error{
		"a code used in the organization": func(t *tx) error {
			return t.Drivers().Insert(&store.Driver{OrganizationID: s.org1, ThirdPartyID: "tp-x", Code: a.Code, QRPayload: "q-x"})
		},
		"a third-party id used in the organization": func(t *tx) error {
			return t.Drivers().Insert(&store.Driver{OrganizationID: s.org1, ThirdPartyID: a.ThirdPartyID, Code: "00099", QRPayload: "q-y"})
		},
		"a QR payload used anywhere": func(t *tx) error {
			return t.Drivers().Insert(&store.Driver{OrganizationID: s.org2, ThirdPartyID: "tp-z", Code: "00098", QRPayload: a.QRPayload})
		},
		"an update to a code used in the organization": func(t *tx) error { return t.Drivers().Update(&clash) },
		"a second open session": func(t *tx) error {
			return t.DriverSessions().Begin(&store.DriverSession{IMEI: imei, OrganizationID: s.org1, DriverID: b.ID,
				Start: at.Add(time.Hour), Method: "pin"})
		},
	} {
		if err := s.e.update(context.Background(), fn); !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: %v; want ErrConflict", name, err)
		}
	}
	if err := s.e.update(context.Background(), func(t *tx) error { return t.Drivers().Delete(b.ID) }); err == nil {
		t.Error("a driver with an assignment was deleted alone")
	}
}

// TestDriverListWhenPostgreSQLRefusesAnExpression lists by a name
// expression that translates but that PostgreSQL finds too complex: the
// list filters it after the query, and the transaction carries on.
func TestDriverListWhenPostgreSQLRefusesAnExpression(t *testing.T) {
	t.Parallel()
	s := seedDrivers(t)
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	s.update(t, func(t *tx) error {
		for i, name := range []string{"Ann", "Bo", "Annabel"} {
			if err := t.Drivers().Insert(driver(s.org1, i+1, name, "", "", true, at)); err != nil {
				return err
			}
		}
		return nil
	})
	re := regexp.MustCompile(`(?i)^(?:(?:(?:\b|a){1,9}){1,9}){1,9}nnabel$`)
	if _, ok := pgRegexp(re.String()); !ok {
		t.Fatal("the expression does not translate; the test needs one that does")
	}
	s.update(t, func(tx *tx) error {
		got, total, err := tx.Drivers().List(store.DriverFilter{FirstName: re}, store.Sort{}, store.Page{})
		if err != nil || total != 1 || len(got) != 1 || got[0].FirstName != "Annabel" {
			t.Errorf("List = %+v of %d, %v; want Annabel alone", got, total, err)
		}
		pattern, _ := pgRegexp(re.String())
		sp, err := tx.pg.Begin(tx.ctx)
		if err != nil {
			return err
		}
		_, err = sp.Exec(tx.ctx, `SELECT 'x' ~ $1`, pattern)
		refused := refusedRegexp(err)
		if err := sp.Rollback(tx.ctx); err != nil {
			return err
		}
		if !refused {
			t.Errorf("PostgreSQL ran the expression (%v); the test needs one it refuses", err)
		}
		// The transaction is still good for writing.
		return tx.Drivers().Insert(driver(s.org1, 9, "Cy", "", "", true, at))
	})
}
