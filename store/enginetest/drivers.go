package enginetest

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Two devices the session tests check drivers in at, in IMEI order.
const (
	sessionIMEI1 = "357660100000017"
	sessionIMEI2 = "357660100000025"
)

// driverTests are the tests of drivers, their sessions, PIN failures
// and device assignments.
var driverTests = []test{
	{"DriverSetKeepsDriversAndTheirLookups", testDriverSetKeepsDriversAndTheirLookups},
	{"DriverList", testDriverList},
	{"DriverListIgnoresCaseBeyondASCII", testDriverListIgnoresCaseBeyondASCII},
	{"DriverSessionsOpenAndEnd", testDriverSessionsOpenAndEnd},
	{"DriverSessionsPurge", testDriverSessionsPurge},
	{"DriverPinFailuresAreKeptPerDevice", testDriverPinFailuresAreKeptPerDevice},
	{"DriverAssignmentsByDeviceAndDriver", testDriverAssignmentsByDeviceAndDriver},
}

// driverSeed is an engine with the directory records the driver records
// reference: one partner and two organizations.
type driverSeed struct {
	e          store.Engine
	org1, org2 int64
}

// seedDrivers inserts the partner and organizations.
func seedDrivers(t *testing.T, e store.Engine) driverSeed {
	t.Helper()
	s := seeder{t, e, testTime}
	p := s.partner("Partner").ID
	org := func(name string) int64 {
		return s.organization(store.Organization{Name: name, PartnerID: p, SSOSalt: []byte("salt")}).ID
	}
	return driverSeed{e: e, org1: org("One"), org2: org("Two")}
}

// update runs fn in a write transaction and fails the test on its error.
func (s driverSeed) update(t *testing.T, fn func(t store.Records) error) {
	t.Helper()
	write(t, s.e, fn)
}

// view runs fn in a read transaction and fails the test on its error.
func (s driverSeed) view(t *testing.T, fn func(t store.Records) error) {
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

// insertDrivers inserts all, in one transaction, and returns ids, which
// gives the ids of drivers numbered from 1 as in all.
func (s driverSeed) insertDrivers(t *testing.T, all []*store.Driver) (ids func(ns ...int) []int64) {
	t.Helper()
	s.update(t, func(t store.Records) error {
		for _, d := range all {
			if err := t.Drivers().Insert(d); err != nil {
				return err
			}
		}
		return nil
	})
	return func(ns ...int) []int64 {
		out := []int64{}
		for _, n := range ns {
			out = append(out, all[n-1].ID)
		}
		return out
	}
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

// second is the error of a lookup.
func second(_ int64, err error) error { return err }

// driverIDList are the ids of ds, in their order.
func driverIDList(ds []store.Driver) []int64 {
	return idList(ds, func(d *store.Driver) int64 { return d.ID })
}

// testDriverSetKeepsDriversAndTheirLookups inserts, reads, finds, updates
// and deletes drivers, and expects NotFound where DriverSet promises it.
func testDriverSetKeepsDriversAndTheirLookups(t *testing.T, e store.Engine) {
	s := seedDrivers(t, e)
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	a, b := driver(s.org1, 1, "Ann", "Lee", "L1", true, at), driver(s.org1, 2, "Bob", "Ray", "", false, at)
	s.update(t, func(t store.Records) error {
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
	s.view(t, func(tx store.Records) error {
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
	s.update(t, func(t store.Records) error { return t.Drivers().Update(&moved) })
	s.view(t, func(tx store.Records) error {
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
	s.update(t, func(t store.Records) error { return t.Drivers().Insert(other) })
	s.view(t, func(tx store.Records) error {
		for org, want := range map[int64]int64{s.org1: a.ID, s.org2: other.ID} {
			if id, err := tx.Drivers().IDByCode(org, "00001"); err != nil || id != want {
				t.Errorf("by code 00001 in organization %d: %d, %v; want %d", org, id, err, want)
			}
			if id, err := tx.Drivers().IDByThirdPartyID(org, "tp-1"); err != nil || id != want {
				t.Errorf("by third-party id tp-1 in organization %d: %d, %v; want %d", org, id, err, want)
			}
		}
		return nil
	})

	missing := driver(s.org1, 7, "", "", "", true, at)
	missing.ID = other.ID + 100
	err := s.e.Update(t.Context(), func(t store.Records) error { return t.Drivers().Update(missing) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Update of no driver: %v; want ErrNotFound", err)
	}
	s.update(t, func(t store.Records) error { return t.Drivers().Delete(a.ID) })
	s.view(t, func(tx store.Records) error {
		if _, err := tx.Drivers().Get(a.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get after Delete: %v; want ErrNotFound", err)
		}
		if _, err := tx.Drivers().IDByQR("FCDRV1-1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("by QR after Delete: %v; want ErrNotFound", err)
		}
		return nil
	})
	if err := s.e.Update(t.Context(), func(t store.Records) error { return t.Drivers().Delete(a.ID) }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete of no driver: %v; want ErrNotFound", err)
	}
	// The deleted driver's code is free again.
	again := driver(s.org1, 1, "Ann", "Lee", "", true, at)
	s.update(t, func(t store.Records) error { return t.Drivers().Insert(again) })
	if again.ID <= other.ID {
		t.Errorf("a new driver got id %d; want one greater than every id given before (%d)", again.ID, other.ID)
	}
}

// testDriverList lists drivers with every filter, sort key and direction,
// and pages of each order.
func testDriverList(t *testing.T, e store.Engine) {
	s := seedDrivers(t, e)
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
	ids := s.insertDrivers(t, all)
	yes, no := true, false
	org1 := map[int64]bool{s.org1: true}
	filters := []struct {
		name string
		f    store.DriverFilter
		want []int64
	}{
		{"none", store.DriverFilter{}, ids(1, 2, 3, 4, 5, 6, 7)},
		{"an organization", store.DriverFilter{OrganizationIDs: org1}, ids(1, 2, 4, 6, 7)},
		{"an organization admitted, one not", store.DriverFilter{OrganizationIDs: map[int64]bool{s.org1: false, s.org2: true}}, ids(3, 5)},
		{"no organization", store.DriverFilter{OrganizationIDs: map[int64]bool{}}, ids()},
		{"an id", store.DriverFilter{ID: all[2].ID}, ids(3)},
		{"a third-party id", store.DriverFilter{ThirdPartyID: "tp-4"}, ids(4)},
		{"active", store.DriverFilter{IsActive: &yes}, ids(1, 3, 4, 5, 7)},
		{"inactive", store.DriverFilter{IsActive: &no}, ids(2, 6)},
		{"a first name", store.DriverFilter{FirstName: regexp.MustCompile("(?i)^ann")}, ids(2, 4)},
		{"a last name", store.DriverFilter{LastName: regexp.MustCompile("(?i)young$")}, ids(1, 2)},
		{"an accent in any case", store.DriverFilter{FirstName: regexp.MustCompile("(?i)é")}, ids(5)},
		{"a word", store.DriverFilter{LastName: regexp.MustCompile(`(?i)\bneil`)}, ids(7)},
		{"both names and more", store.DriverFilter{FirstName: regexp.MustCompile("(?i)a"), LastName: regexp.MustCompile("(?i)[st]"),
			IsActive: &yes, OrganizationIDs: map[int64]bool{s.org1: true, s.org2: true}}, ids(3, 4)},
		// {300} is beyond what some engines' expressions count: an engine
		// may apply it after its query.
		{"an expression of large counts", store.DriverFilter{FirstName: regexp.MustCompile("(?i)a{300}|^b"), IsActive: &yes}, ids(1)},
	}
	// Each order, ascending; descending is its reverse, ties included.
	orders := []struct {
		key  string
		f    store.DriverFilter
		want []int64
	}{
		{"", store.DriverFilter{}, ids(1, 2, 3, 4, 5, 6, 7)},
		{store.DriverByCreatedAt, store.DriverFilter{}, ids(1, 2, 3, 4, 5, 6, 7)},
		// Byte order: "" < "B9" < "L1" < "L3" < "l2"; equal licenses by id.
		{store.DriverByDrivingLicense, store.DriverFilter{}, ids(6, 5, 2, 7, 1, 3, 4)},
		// In any case: "" < "anna" = "Anna" < "bob" < "zoë".
		{store.DriverByFirstName, store.DriverFilter{OrganizationIDs: org1}, ids(6, 2, 4, 1, 7)},
		// In any case, by code point: "" < "aaron" < "anna" = "Anna" < "bob" < "zoë" < "émile".
		{store.DriverByFirstName, store.DriverFilter{}, ids(6, 3, 2, 4, 1, 7, 5)},
		// In any case: "" < "adams" < "bates" < "o'neil" < "young" = "Young" < "zola".
		{store.DriverByLastName, store.DriverFilter{}, ids(6, 3, 4, 7, 1, 2, 5)},
	}
	pages := []store.Page{{}, {Limit: 2}, {Limit: 2, Offset: 2}, {Limit: 3, Offset: 5}, {Offset: 100}, {Limit: 1, Offset: 6}}
	s.view(t, func(tx store.Records) error {
		for _, c := range filters {
			got, total, err := tx.Drivers().List(c.f, store.Sort{}, store.Page{})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if !slices.Equal(driverIDList(got), c.want) || total != len(c.want) {
				t.Errorf("%s: %v of %d; want %v", c.name, driverIDList(got), total, c.want)
			}
		}
		for _, c := range orders {
			for _, desc := range []bool{false, true} {
				want := slices.Clone(c.want)
				if desc {
					slices.Reverse(want)
				}
				for _, p := range pages {
					o := store.Sort{Key: c.key, Desc: desc}
					got, total, err := tx.Drivers().List(c.f, o, p)
					if err != nil {
						t.Fatalf("%+v, %+v: %v", o, p, err)
					}
					if w := pageOf(want, p); !slices.Equal(driverIDList(got), w) || total != len(want) {
						t.Errorf("%+v, %+v: %v of %d; want %v of %d", o, p, driverIDList(got), total, w, len(want))
					}
				}
			}
		}
		got, _, err := tx.Drivers().List(store.DriverFilter{ID: all[0].ID}, store.Sort{}, store.Page{})
		if err != nil || len(got) != 1 || !sameDriver(&got[0], all[0]) {
			t.Errorf("List by id = %+v, %v; want %+v", got, err, all[0])
		}
		if _, _, err := tx.Drivers().List(store.DriverFilter{}, store.Sort{Key: "age"}, store.Page{}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("List by an unknown key: %v; want ErrInvalid", err)
		}
		return nil
	})
}

// testDriverListIgnoresCaseBeyondASCII sorts drivers whose names differ in
// the case of letters beyond ASCII: they sort together, equal ones in id
// order, as store.FoldCase keys them (final sigma is sigma, é is no e).
func testDriverListIgnoresCaseBeyondASCII(t *testing.T, e store.Engine) {
	s := seedDrivers(t, e)
	all := []*store.Driver{
		driver(s.org1, 1, "ölaf", "ΟΔΥΣΣΕΥΣ", "", true, testTime),
		driver(s.org1, 2, "Émile", "οδυσσευς", "", true, testTime),
		driver(s.org1, 3, "Zoë", "Adams", "", true, testTime),
		driver(s.org1, 4, "Ölaf", "Οδυσσευσ", "", true, testTime),
		driver(s.org1, 5, "émile", "adams", "", true, testTime),
		driver(s.org1, 6, "zoe", "Émile", "", true, testTime),
	}
	ids := s.insertDrivers(t, all)
	orders := []struct {
		key  string
		want []int64
	}{
		// "zoe" < "zoë" < "émile" = "Émile" < "ölaf" = "Ölaf".
		{store.DriverByFirstName, ids(6, 3, 2, 5, 1, 4)},
		// "adams" = "Adams" < "émile" < "οδυσσευσ" (every spelling).
		{store.DriverByLastName, ids(3, 5, 6, 1, 2, 4)},
	}
	s.view(t, func(tx store.Records) error {
		for _, c := range orders {
			for _, desc := range []bool{false, true} {
				want := slices.Clone(c.want)
				if desc {
					slices.Reverse(want)
				}
				o := store.Sort{Key: c.key, Desc: desc}
				got, _, err := tx.Drivers().List(store.DriverFilter{}, o, store.Page{})
				if err != nil {
					t.Fatalf("%+v: %v", o, err)
				}
				if !slices.Equal(driverIDList(got), want) {
					t.Errorf("%+v: %v; want %v", o, driverIDList(got), want)
				}
			}
		}
		return nil
	})
}

// sameSession reports whether two sessions are equal, their times compared
// as instants.
func sameSession(a, b *store.DriverSession) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	if !x.Start.Equal(y.Start) || !x.End.Equal(y.End) {
		return false
	}
	x.Start, x.End, y.Start, y.End = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return x == y
}

// sessionStarts are the starts of sessions.
func sessionStarts(ss []store.DriverSession) []time.Time {
	var out []time.Time
	for _, s := range ss {
		out = append(out, s.Start)
	}
	return out
}

// testDriverSessionsPurge purges the ended sessions of a device that its
// cutoffs make due, in batches of the limit, and never its open session
// however old; a purge without a limit deletes every due session in one
// batch, more than a default batch of them.
func testDriverSessionsPurge(t *testing.T, e store.Engine) {
	s := seedDrivers(t, e)
	base := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	const ended = store.DefaultPurgeBatch + 100
	// Sessions a minute apart, each ended after 30 s, then an open one.
	s.update(t, func(r store.Records) error {
		for i := range ended + 1 {
			ds := &store.DriverSession{IMEI: sessionIMEI1, OrganizationID: s.org1, DriverID: 7,
				Start: base.Add(time.Duration(i) * time.Minute), Method: "pin", Ownership: 1}
			if err := r.DriverSessions().Begin(ds); err != nil {
				return err
			}
			if i == ended {
				break
			}
			ds.End, ds.EndedBy = ds.Start.Add(30*time.Second), "device"
			if err := r.DriverSessions().End(ds); err != nil {
				return err
			}
		}
		return nil
	})
	owners := func(cut time.Time) map[string]*store.OwnerCutoffs {
		return map[string]*store.OwnerCutoffs{sessionIMEI1: OwnerCutoffs(t, store.Cutoffs{s.org1: cut}, map[int64]int64{1: s.org1})}
	}
	left := func() int {
		t.Helper()
		var ss []store.DriverSession
		s.view(t, func(r store.Records) (err error) {
			ss, err = r.DriverSessions().StartedBy(sessionIMEI1, base.AddDate(1, 0, 0))
			return err
		})
		return len(ss)
	}
	// The first ten sessions are due, in batches of four.
	ten := owners(base.Add(10 * time.Minute))
	deleted, batches := purgeAll(t, e, 4, func(r store.Records, from []byte) (int, []byte, error) {
		return r.DriverSessions().Purge(SeriesPurge(ten, from, 4))
	})
	if deleted != 10 || batches < 3 {
		t.Errorf("purged %d sessions in %d batches; want 10 in batches of 4", deleted, batches)
	}
	if n := left(); n != ended+1-10 {
		t.Errorf("%d sessions left; want %d", n, ended+1-10)
	}
	// Every session is due: without a limit, every ended one goes in one
	// batch, and the open one stays.
	all := owners(base.AddDate(0, 6, 0))
	if deleted, batches := purgeAll(t, e, math.MaxInt, func(r store.Records, from []byte) (int, []byte, error) {
		return r.DriverSessions().Purge(SeriesPurge(all, from, 0))
	}); deleted != ended-10 || batches != 1 {
		t.Errorf("a purge without a limit deleted %d in %d batches; want %d in one", deleted, batches, ended-10)
	}
	if n := left(); n != 1 {
		t.Errorf("%d sessions left; want the open one", n)
	}
}

// testDriverSessionsOpenAndEnd begins, ends and replaces sessions of two
// devices and reads them back by every method of DriverSessionSet.
func testDriverSessionsOpenAndEnd(t *testing.T, e store.Engine) {
	s := seedDrivers(t, e)
	t0 := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	// The start is kept to the millisecond.
	first := &store.DriverSession{IMEI: sessionIMEI2, OrganizationID: s.org1, DriverID: 7, Start: t0.Add(1500 * time.Microsecond),
		Method: "pin", EventID: "c1", Ownership: 3}
	other := &store.DriverSession{IMEI: sessionIMEI1, OrganizationID: s.org2, DriverID: 8, Start: t0, Method: "qr"}
	s.view(t, func(tx store.Records) error {
		if cur, err := tx.DriverSessions().Current(sessionIMEI2); err != nil || cur != nil {
			t.Errorf("Current with nobody checked in = %+v, %v; want nil", cur, err)
		}
		if all, err := tx.DriverSessions().AllCurrent(); err != nil || len(all) != 0 {
			t.Errorf("AllCurrent of no session = %+v, %v", all, err)
		}
		return nil
	})
	s.update(t, func(t store.Records) error {
		if err := t.DriverSessions().Begin(first); err != nil {
			return err
		}
		return t.DriverSessions().Begin(other)
	})
	kept := *first
	kept.Start = t0.Add(time.Millisecond)
	s.view(t, func(tx store.Records) error {
		if cur, err := tx.DriverSessions().Current(sessionIMEI2); err != nil || !sameSession(cur, &kept) {
			t.Errorf("Current = %+v, %v; want %+v", cur, err, kept)
		}
		all, err := tx.DriverSessions().AllCurrent()
		if err != nil || len(all) != 2 || !sameSession(&all[0], other) || !sameSession(&all[1], &kept) {
			t.Errorf("AllCurrent = %+v, %v; want the sessions of %s and %s in IMEI order", all, err, sessionIMEI1, sessionIMEI2)
		}
		return nil
	})

	ended := kept
	ended.End, ended.EndedBy = t0.Add(time.Hour), "checkIn"
	second := &store.DriverSession{IMEI: sessionIMEI2, OrganizationID: s.org1, DriverID: 9, Start: t0.Add(time.Hour), Method: "device", EventID: "c2"}
	s.update(t, func(t store.Records) error {
		if err := t.DriverSessions().End(&ended); err != nil {
			return err
		}
		return t.DriverSessions().Begin(second)
	})
	s.view(t, func(tx store.Records) error {
		if cur, err := tx.DriverSessions().Current(sessionIMEI2); err != nil || !sameSession(cur, second) {
			t.Errorf("Current after a new check-in = %+v, %v; want %+v", cur, err, second)
		}
		for _, tc := range []struct {
			at   time.Time
			want *store.DriverSession
		}{
			{t0.Add(999 * time.Microsecond), nil},
			{t0.Add(time.Millisecond), &ended},
			{t0.Add(1999 * time.Microsecond), &ended}, // the same millisecond
			{t0.Add(time.Hour - time.Millisecond), &ended},
			{t0.Add(time.Hour + 500*time.Microsecond), second},
			{t0.AddDate(1, 0, 0), second},
		} {
			if got, err := tx.DriverSessions().LastStarted(sessionIMEI2, tc.at); err != nil || !sameSession(got, tc.want) {
				t.Errorf("LastStarted(%s) = %+v, %v; want %+v", tc.at, got, err, tc.want)
			}
		}
		for _, tc := range []struct {
			until time.Time
			want  []time.Time
		}{
			{t0, nil},
			{t0.Add(time.Millisecond), []time.Time{kept.Start}},
			{t0.Add(time.Hour), []time.Time{kept.Start, second.Start}},
		} {
			got, err := tx.DriverSessions().StartedBy(sessionIMEI2, tc.until)
			if err != nil || !slices.EqualFunc(sessionStarts(got), tc.want, time.Time.Equal) {
				t.Errorf("StartedBy(%s) started at %v, %v; want %v", tc.until, sessionStarts(got), err, tc.want)
			}
		}
		all, err := tx.DriverSessions().StartedBy(sessionIMEI2, t0.AddDate(1, 0, 0))
		if err != nil || len(all) != 2 || !sameSession(&all[0], &ended) {
			t.Errorf("StartedBy = %+v, %v; want the ended session first", all, err)
		}
		return nil
	})

	// A check-in at the same millisecond replaces the session that started then.
	ended2 := *second
	ended2.End, ended2.EndedBy = t0.Add(2*time.Hour), "device"
	again := &store.DriverSession{IMEI: sessionIMEI2, OrganizationID: s.org1, DriverID: 10, Start: t0.Add(time.Hour + 300*time.Microsecond),
		Method: "qr", EventID: "c3"}
	s.update(t, func(t store.Records) error {
		if err := t.DriverSessions().End(&ended2); err != nil {
			return err
		}
		return t.DriverSessions().Begin(again)
	})
	s.view(t, func(tx store.Records) error {
		all, err := tx.DriverSessions().StartedBy(sessionIMEI2, t0.AddDate(1, 0, 0))
		if err != nil || len(all) != 2 || all[1].DriverID != 10 || !all[1].End.IsZero() {
			t.Errorf("StartedBy after a check-in at the same millisecond = %+v, %v; want the new session in place of the old", all, err)
		}
		return nil
	})

	// With the device's session ended, End finds none open.
	s.update(t, func(t store.Records) error {
		e := *again
		e.End, e.EndedBy = t0.Add(3*time.Hour), "api"
		return t.DriverSessions().End(&e)
	})
	err := s.e.Update(t.Context(), func(t store.Records) error {
		e := *again
		e.End, e.EndedBy = t0.Add(4*time.Hour), "api"
		return t.DriverSessions().End(&e)
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("End with no session open: %v; want ErrNotFound", err)
	}
	s.view(t, func(tx store.Records) error {
		if cur, err := tx.DriverSessions().Current(sessionIMEI2); err != nil || cur != nil {
			t.Errorf("Current after End = %+v, %v; want nil", cur, err)
		}
		all, err := tx.DriverSessions().AllCurrent()
		if err != nil || len(all) != 1 || all[0].IMEI != sessionIMEI1 {
			t.Errorf("AllCurrent = %+v, %v; want the session of %s alone", all, err, sessionIMEI1)
		}
		if got, err := tx.DriverSessions().LastStarted(sessionIMEI2, t0.AddDate(1, 0, 0)); err != nil || got == nil || got.EndedBy != "api" {
			t.Errorf("LastStarted = %+v, %v; want the session ended by the API", got, err)
		}
		return nil
	})
}

// testDriverPinFailuresAreKeptPerDevice puts, reads and forgets the wrong
// PINs of two devices.
func testDriverPinFailuresAreKeptPerDevice(t *testing.T, e store.Engine) {
	s := seedDrivers(t, e)
	t0 := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	times := []time.Time{t0.Add(time.Minute), t0, t0.Add(time.Second)} // as the store keeps them
	s.update(t, func(t store.Records) error {
		if err := t.DriverPinFailures().Put(sessionIMEI1, times[:1]); err != nil {
			return err
		}
		if err := t.DriverPinFailures().Put(sessionIMEI1, times); err != nil {
			return err
		}
		return t.DriverPinFailures().Put(sessionIMEI2, times[2:])
	})
	s.view(t, func(tx store.Records) error {
		if got, err := tx.DriverPinFailures().Get(sessionIMEI1); err != nil || !slices.EqualFunc(got, times, time.Time.Equal) {
			t.Errorf("Get = %v, %v; want %v", got, err, times)
		}
		if got, err := tx.DriverPinFailures().Get("357660100000033"); err != nil || len(got) != 0 {
			t.Errorf("Get of a device without wrong PINs = %v, %v; want none", got, err)
		}
		return nil
	})
	s.update(t, func(t store.Records) error {
		if err := t.DriverPinFailures().Delete(sessionIMEI1); err != nil {
			return err
		}
		if err := t.DriverPinFailures().Delete("357660100000033"); err != nil {
			return err
		}
		return t.DriverPinFailures().Put(sessionIMEI2, nil)
	})
	s.view(t, func(tx store.Records) error {
		for _, imei := range []string{sessionIMEI1, sessionIMEI2} {
			if got, err := tx.DriverPinFailures().Get(imei); err != nil || len(got) != 0 {
				t.Errorf("Get(%s) after Delete / Put of none = %v, %v; want none", imei, got, err)
			}
		}
		return nil
	})
}

// assignmentIDs are the ids of as, in their order.
func assignmentIDs(as []store.DriverAssignment) []int64 {
	return idList(as, func(a *store.DriverAssignment) int64 { return a.ID })
}

// testDriverAssignmentsByDeviceAndDriver inserts, reads, moves and deletes
// assignments, in the orders DriverAssignmentSet promises.
func testDriverAssignmentsByDeviceAndDriver(t *testing.T, e store.Engine) {
	s := seedDrivers(t, e)
	t0 := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	d1, d2 := driver(s.org1, 1, "Ann", "", "", true, t0), driver(s.org1, 2, "Bob", "", "", true, t0)
	s.update(t, func(t store.Records) error {
		if err := t.Drivers().Insert(d1); err != nil {
			return err
		}
		return t.Drivers().Insert(d2)
	})
	as := []*store.DriverAssignment{
		{OrganizationID: s.org1, DriverID: d1.ID, IMEI: sessionIMEI2, Start: t0.Add(2 * time.Hour), End: t0.Add(3 * time.Hour), CreatedAt: t0, Ownership: 1},
		{OrganizationID: s.org1, DriverID: d1.ID, IMEI: sessionIMEI1, Start: t0.Add(5 * time.Hour), CreatedAt: t0, Ownership: 1},
		{OrganizationID: s.org1, DriverID: d2.ID, IMEI: sessionIMEI2, Start: t0, End: t0.Add(time.Hour), CreatedAt: t0},
		{OrganizationID: s.org1, DriverID: d1.ID, IMEI: sessionIMEI2, Start: t0.Add(2 * time.Hour), CreatedAt: t0.Add(time.Minute)},
	}
	s.update(t, func(t store.Records) error {
		for _, a := range as {
			if err := t.DriverAssignments().Insert(a); err != nil {
				return err
			}
		}
		return nil
	})
	for i := 1; i < len(as); i++ {
		if as[i].ID <= as[i-1].ID {
			t.Fatalf("assignment ids %d then %d; want increasing ids", as[i-1].ID, as[i].ID)
		}
	}
	s.view(t, func(tx store.Records) error {
		got, err := tx.DriverAssignments().ByDevice(sessionIMEI2)
		if want := []int64{as[2].ID, as[0].ID, as[3].ID}; err != nil || !slices.Equal(assignmentIDs(got), want) {
			t.Errorf("ByDevice = %v, %v; want %v (by start, then id)", assignmentIDs(got), err, want)
		}
		if err == nil && (!got[1].End.Equal(as[0].End) || !got[1].Start.Equal(as[0].Start) || got[1].Ownership != 1 || !got[2].End.IsZero()) {
			t.Errorf("ByDevice read %+v and %+v; want %+v and no end", got[1], got[2], *as[0])
		}
		got, err = tx.DriverAssignments().ByDriver(d1.ID)
		if want := []int64{as[1].ID, as[0].ID, as[3].ID}; err != nil || !slices.Equal(assignmentIDs(got), want) {
			t.Errorf("ByDriver = %v, %v; want %v (by device, start, then id)", assignmentIDs(got), err, want)
		}
		if got, err := tx.DriverAssignments().ByDevice("357660100000033"); err != nil || len(got) != 0 {
			t.Errorf("ByDevice of a device without assignments = %v, %v", got, err)
		}
		return nil
	})

	// An update may move an assignment to another device and start.
	moved := *as[0]
	moved.IMEI, moved.Start, moved.End = sessionIMEI1, t0, t0.Add(30*time.Minute)
	s.update(t, func(t store.Records) error { return t.DriverAssignments().Update(&moved) })
	s.view(t, func(tx store.Records) error {
		got, err := tx.DriverAssignments().ByDevice(sessionIMEI1)
		if want := []int64{moved.ID, as[1].ID}; err != nil || !slices.Equal(assignmentIDs(got), want) || !got[0].End.Equal(moved.End) {
			t.Errorf("ByDevice after moving = %+v, %v; want %v", got, err, want)
		}
		return nil
	})
	for name, fn := range map[string]func(t store.Records) error{
		"Update": func(t store.Records) error {
			a := moved
			a.ID += 100
			return t.DriverAssignments().Update(&a)
		},
		"Delete": func(t store.Records) error { return t.DriverAssignments().Delete(moved.ID + 100) },
	} {
		if err := s.e.Update(t.Context(), fn); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of no assignment: %v; want ErrNotFound", name, err)
		}
	}

	// A driver goes with its assignments, in one transaction.
	s.update(t, func(t store.Records) error {
		if err := t.Drivers().Delete(d2.ID); err != nil {
			return err
		}
		return t.DriverAssignments().Delete(as[2].ID)
	})
	s.view(t, func(tx store.Records) error {
		if got, err := tx.DriverAssignments().ByDriver(d2.ID); err != nil || len(got) != 0 {
			t.Errorf("ByDriver of a deleted driver = %v, %v; want none", got, err)
		}
		if got, err := tx.DriverAssignments().ByDevice(sessionIMEI2); err != nil || !slices.Equal(assignmentIDs(got), []int64{as[3].ID}) {
			t.Errorf("ByDevice after Delete = %v, %v; want %d", assignmentIDs(got), err, as[3].ID)
		}
		return nil
	})
}
