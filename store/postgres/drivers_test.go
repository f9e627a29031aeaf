package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
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

// view runs fn in a read transaction and fails the test on its error.
func (s driverSeed) view(t *testing.T, fn func(t *tx) error) {
	t.Helper()
	read(t, s.e, fn)
}

// driver is a driver of org, created at, with its code, third-party id and
// QR payload made from n.
func driver(org int64, n int, first, last, license string, active bool, at time.Time) *store.Driver {
	return &store.Driver{OrganizationID: org, ThirdPartyID: fmt.Sprintf("tp-%d", n), FirstName: first, LastName: last,
		DrivingLicense: license, Code: fmt.Sprintf("%05d", n), QRPayload: fmt.Sprintf("FCDRV1-%d", n), IsActive: active,
		CreatedAt: at, UpdatedAt: at.Add(time.Minute)}
}

// sameDriver reports whether two drivers are equal, their times compared as instants.
func sameDriver(a, b *store.Driver) bool {
	x, y := *a, *b
	if !x.CreatedAt.Equal(y.CreatedAt) || !x.UpdatedAt.Equal(y.UpdatedAt) {
		return false
	}
	x.CreatedAt, x.UpdatedAt, y.CreatedAt, y.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return x == y
}

// TestDriverSetKeepsDriversAndTheirLookups inserts, reads, finds, updates
// and deletes drivers, and expects NotFound and Conflict where DriverSet
// promises them.
func TestDriverSetKeepsDriversAndTheirLookups(t *testing.T) {
	t.Parallel()
	s := seedDrivers(t)
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	a, b := driver(s.org1, 1, "Ann", "Lee", "L1", true, at), driver(s.org1, 2, "Bob", "Ray", "", false, at)
	s.update(t, func(t *tx) error {
		for _, d := range []*store.Driver{a, b} {
			if err := t.Drivers().Insert(d); err != nil {
				return err
			}
		}
		return nil
	})
	if a.ID == 0 || b.ID <= a.ID {
		t.Fatalf("ids %d, %d; want increasing ids", a.ID, b.ID)
	}
	s.view(t, func(tx *tx) error {
		got, err := tx.Drivers().Get(a.ID)
		if err != nil || !sameDriver(got, a) {
			t.Errorf("Get = %+v, %v; want %+v", got, err, a)
		}
		for name, lookup := range map[string]func() (int64, error){
			"code":           func() (int64, error) { return tx.Drivers().IDByCode(s.org1, "00002") },
			"third-party id": func() (int64, error) { return tx.Drivers().IDByThirdPartyID(s.org1, "tp-2") },
			"QR":             func() (int64, error) { return tx.Drivers().IDByQR("FCDRV1-2") },
		} {
			if id, err := lookup(); err != nil || id != b.ID {
				t.Errorf("by %s: %d, %v; want %d", name, id, err, b.ID)
			}
		}
		for name, lookup := range map[string]func() (int64, error){
			"code of another organization":           func() (int64, error) { return tx.Drivers().IDByCode(s.org2, "00002") },
			"third-party id of another organization": func() (int64, error) { return tx.Drivers().IDByThirdPartyID(s.org2, "tp-2") },
			"unknown QR":                             func() (int64, error) { return tx.Drivers().IDByQR("FCDRV1-9") },
		} {
			if id, err := lookup(); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("by %s: %d, %v; want ErrNotFound", name, id, err)
			}
		}
		if _, err := tx.Drivers().Get(b.ID + 100); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get of no driver: %v; want ErrNotFound", err)
		}
		return nil
	})

	// An update moves the lookups to the new code, third-party id and QR payload.
	moved := *b
	moved.Code, moved.ThirdPartyID, moved.QRPayload, moved.IsActive = "00022", "tp-22", "FCDRV1-22", true
	moved.UpdatedAt = at.Add(time.Hour)
	s.update(t, func(t *tx) error { return t.Drivers().Update(&moved) })
	s.view(t, func(tx *tx) error {
		if got, err := tx.Drivers().Get(b.ID); err != nil || !sameDriver(got, &moved) {
			t.Errorf("Get after Update = %+v, %v; want %+v", got, err, moved)
		}
		if id, err := tx.Drivers().IDByCode(s.org1, "00022"); err != nil || id != b.ID {
			t.Errorf("by the new code: %d, %v", id, err)
		}
		if id, err := tx.Drivers().IDByThirdPartyID(s.org1, "tp-22"); err != nil || id != b.ID {
			t.Errorf("by the new third-party id: %d, %v", id, err)
		}
		if id, err := tx.Drivers().IDByQR("FCDRV1-22"); err != nil || id != b.ID {
			t.Errorf("by the new QR payload: %d, %v", id, err)
		}
		for _, err := range []error{
			second(tx.Drivers().IDByCode(s.org1, "00002")),
			second(tx.Drivers().IDByThirdPartyID(s.org1, "tp-2")),
			second(tx.Drivers().IDByQR("FCDRV1-2")),
		} {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("an old lookup after Update: %v; want ErrNotFound", err)
			}
		}
		return nil
	})

	// The same code and third-party id in another organization are no conflict.
	other := driver(s.org2, 11, "Cy", "Doe", "", true, at)
	other.Code, other.ThirdPartyID = "00001", "tp-1"
	s.update(t, func(t *tx) error { return t.Drivers().Insert(other) })
	for name, d := range map[string]*store.Driver{
		"a code used in the organization":           {OrganizationID: s.org1, ThirdPartyID: "tp-x", Code: "00001", QRPayload: "q-x"},
		"a third-party id used in the organization": {OrganizationID: s.org1, ThirdPartyID: "tp-1", Code: "00099", QRPayload: "q-y"},
		"a QR payload used anywhere":                {OrganizationID: s.org2, ThirdPartyID: "tp-z", Code: "00098", QRPayload: "FCDRV1-1"},
	} {
		err := s.e.update(context.Background(), func(t *tx) error { return t.Drivers().Insert(d) })
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("Insert with %s: %v; want ErrConflict", name, err)
		}
	}
	clash := moved
	clash.Code = "00001"
	if err := s.e.update(context.Background(), func(t *tx) error { return t.Drivers().Update(&clash) }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Update to a code used in the organization: %v; want ErrConflict", err)
	}

	missing := driver(s.org1, 7, "", "", "", true, at)
	missing.ID = other.ID + 100
	err := s.e.update(context.Background(), func(t *tx) error { return t.Drivers().Update(missing) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Update of no driver: %v; want ErrNotFound", err)
	}
	s.update(t, func(t *tx) error { return t.Drivers().Delete(a.ID) })
	s.view(t, func(tx *tx) error {
		if _, err := tx.Drivers().Get(a.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get after Delete: %v; want ErrNotFound", err)
		}
		if _, err := tx.Drivers().IDByQR("FCDRV1-1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("by QR after Delete: %v; want ErrNotFound", err)
		}
		return nil
	})
	if err := s.e.update(context.Background(), func(t *tx) error { return t.Drivers().Delete(a.ID) }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete of no driver: %v; want ErrNotFound", err)
	}
	// The deleted driver's code is free again.
	again := driver(s.org1, 1, "Ann", "Lee", "", true, at)
	s.update(t, func(t *tx) error { return t.Drivers().Insert(again) })
	if again.ID <= other.ID {
		t.Errorf("a new driver got id %d; want one greater than every id given before (%d)", again.ID, other.ID)
	}
}

// second is the error of a lookup.
func second(_ int64, err error) error { return err }

// TestDriverListAnswersAsTheStoreOrders lists drivers with every filter,
// sort key and direction, and pages, and expects what the store's own
// rules (DriverFilter.Match, SortDrivers) make of all the drivers.
func TestDriverListAnswersAsTheStoreOrders(t *testing.T) {
	t.Parallel()
	s := seedDrivers(t)
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	all := []*store.Driver{
		driver(s.org1, 1, "bob", "Young", "L3", true, at),
		driver(s.org1, 2, "Anna", "young", "L1", false, at),
		driver(s.org2, 3, "Aaron", "adams", "L3", true, at),
		driver(s.org1, 4, "anna", "Bates", "l2", true, at),
		driver(s.org2, 5, "Émile", "Zola", "B9", true, at),
		driver(s.org1, 6, "", "", "", false, at),
		driver(s.org1, 7, "Zoë", "O'Neil", "L1", true, at),
	}
	s.update(t, func(t *tx) error {
		for _, d := range all {
			if err := t.Drivers().Insert(d); err != nil {
				return err
			}
		}
		return nil
	})
	var every []store.Driver
	for _, d := range all {
		every = append(every, *d)
	}
	yes, no := true, false
	filters := map[string]store.DriverFilter{
		"none":                              {},
		"an organization":                   {OrganizationIDs: map[int64]bool{s.org1: true}},
		"an organization admitted, one not": {OrganizationIDs: map[int64]bool{s.org1: false, s.org2: true}},
		"no organization":                   {OrganizationIDs: map[int64]bool{}},
		"an id":                             {ID: all[2].ID},
		"a third-party id":                  {ThirdPartyID: "tp-4"},
		"active":                            {IsActive: &yes},
		"inactive":                          {IsActive: &no},
		"a first name":                      {FirstName: regexp.MustCompile("(?i)^ann")},
		"a last name":                       {LastName: regexp.MustCompile("(?i)young$")},
		"an accent":                         {FirstName: regexp.MustCompile("(?i)é")},
		"a word":                            {LastName: regexp.MustCompile(`(?i)\bneil`)},
		"both names and more":               {FirstName: regexp.MustCompile("(?i)a"), LastName: regexp.MustCompile("(?i)[st]"), IsActive: &yes, OrganizationIDs: map[int64]bool{s.org1: true, s.org2: true}},
		// {300} is beyond PostgreSQL's counts: the expression is applied after the query.
		"an expression PostgreSQL lacks": {FirstName: regexp.MustCompile("(?i)a{300}|^b"), IsActive: &yes},
	}
	pages := []store.Page{{}, {Limit: 2}, {Limit: 2, Offset: 2}, {Limit: 3, Offset: 5}, {Offset: 100}, {Limit: 1, Offset: 6}}
	keys := []string{"", store.DriverByCreatedAt, store.DriverByDrivingLicense, store.DriverByFirstName, store.DriverByLastName}
	s.view(t, func(tx *tx) error {
		for name, f := range filters {
			var matching []store.Driver
			for _, d := range every {
				if f.Match(&d) {
					matching = append(matching, d)
				}
			}
			for _, key := range keys {
				for _, desc := range []bool{false, true} {
					for _, p := range pages {
						o := store.Sort{Key: key, Desc: desc}
						want, wantTotal, err := store.SortDrivers(slices.Clone(matching), o, p)
						if err != nil {
							t.Fatal(err)
						}
						got, total, err := tx.Drivers().List(f, o, p)
						if err != nil {
							t.Fatalf("%s, %+v, %+v: %v", name, o, p, err)
						}
						if !slices.Equal(driverIDList(got), driverIDList(want)) || total != wantTotal {
							t.Errorf("%s, %+v, %+v: %v of %d; want %v of %d", name, o, p, driverIDList(got), total, driverIDList(want), wantTotal)
						}
					}
				}
			}
		}
		for _, d := range all[:1] {
			got, _, err := tx.Drivers().List(store.DriverFilter{ID: d.ID}, store.Sort{}, store.Page{})
			if err != nil || len(got) != 1 || !sameDriver(&got[0], d) {
				t.Errorf("List by id = %+v, %v; want %+v", got, err, d)
			}
		}
		if _, _, err := tx.Drivers().List(store.DriverFilter{}, store.Sort{Key: "age"}, store.Page{}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("List by an unknown key: %v; want ErrInvalid", err)
		}
		return nil
	})
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

func driverIDList(ds []store.Driver) []int64 {
	ids := []int64{}
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids
}
