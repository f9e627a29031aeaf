// Package enginetest is the suite every storage engine runs: the record
// sets of store.Records, written and read through the engine contract
// (store.Engine) alone, each test asserting the records, orders, pages and
// counts it expects, written out in the test. The store's rules are tested
// over every engine by the store's own suite (storetest.Run); this one
// tests what an engine promises beneath them, so that an engine that
// answers a query differently from the others fails here, by name.
//
// An engine runs it from its own tests:
//
//	func TestEngineSuite(t *testing.T) { enginetest.Run(t, openEngine) }
//
// where openEngine opens a new, empty engine for the test (Prepare done)
// and closes it when the test ends. What only one engine does (its file
// layout, its statements, plans and partitions) stays in that engine's own
// tests.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Opener opens a new, empty engine for t, prepared (its Prepare has run),
// and closes it when t ends.
type Opener func(t *testing.T) store.Engine

// Run runs every test of the suite on engines of open, each as a parallel
// subtest with an engine of its own.
func Run(t *testing.T, open Opener) {
	t.Helper()
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, open(t))
		})
	}
}

// test is one test of the suite: its subtest name and what it runs on a
// new engine.
type test struct {
	name string
	run  func(t *testing.T, e store.Engine)
}

// suite lists the tests Run runs, by group of record types.
var suite = slices.Concat(directoryTests, eventTests, driverTests, alarmTests, webhookTests, webhookConfigTests, messageTests, deviceStateTests, mediaTests, dataUsageTests, trackTests, keyedTests)

// testTime is a time with microseconds, the precision every engine keeps.
var testTime = time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)

// testIMEI is the IMEI of test device n.
func testIMEI(n int) string { return fmt.Sprintf("35%013d", n) }

// write runs fn in a read-write transaction and fails the test on its
// error.
func write(t *testing.T, e store.Engine, fn func(store.Records) error) {
	t.Helper()
	if err := e.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// read runs fn in a read-only transaction and fails the test on its error.
func read(t *testing.T, e store.Engine, fn func(store.Records) error) {
	t.Helper()
	if err := e.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// maintain brings an engine that keeps time series in partitions
// (store.Maintainer) to the partitions around at, as it has them around
// now: records of the tests' times then go where a running server would
// put them.
func maintain(t *testing.T, e store.Engine, at time.Time) {
	t.Helper()
	if m, ok := e.(store.Maintainer); ok {
		if err := m.Maintain(context.Background(), at); err != nil {
			t.Fatal(err)
		}
	}
}

// wantErr fails the test unless err is target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: %v; want %v", what, err, target)
	}
}

// wantEqual fails the test unless got and want are deeply equal.
func wantEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// increasing reports whether ids are each greater than the one before.
func increasing(ids []int64) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return false
		}
	}
	return true
}

// seeder inserts the directory records a test refers to (partners,
// organizations, devices) through the engine's own record sets. Each
// record is created at at and goes in a transaction of its own; an error
// fails the test.
type seeder struct {
	t  *testing.T
	e  store.Engine
	at time.Time
}

// partner inserts a partner named name.
func (s seeder) partner(name string) *store.Partner {
	s.t.Helper()
	p := &store.Partner{Name: name, CreatedAt: s.at}
	write(s.t, s.e, func(r store.Records) error { return r.Partners().Insert(p) })
	return p
}

// organization inserts o, created at s.at, and returns it with its id.
func (s seeder) organization(o store.Organization) *store.Organization {
	s.t.Helper()
	o.CreatedAt = s.at
	write(s.t, s.e, func(r store.Records) error { return r.Organizations().Insert(&o) })
	return &o
}

// device inserts d, activated and created at s.at.
func (s seeder) device(d store.Device) *store.Device {
	s.t.Helper()
	d.Status, d.CreatedAt = store.DeviceActivated, s.at
	write(s.t, s.e, func(r store.Records) error { return r.Devices().Insert(&d) })
	return &d
}

// directory is what seedDirectory inserts: two partners, an organization
// of the first shared with the second, and a group in it.
type directory struct {
	p, q  *store.Partner
	org   *store.Organization
	group *store.Group
}

// seedDirectory inserts the directory most tests start from.
func seedDirectory(t *testing.T, e store.Engine) directory {
	t.Helper()
	s := seeder{t, e, testTime}
	d := directory{p: s.partner("P"), q: s.partner("Q")}
	d.org = s.organization(store.Organization{Name: "Fleet", PartnerID: d.p.ID, PartnerIDs: []int64{d.p.ID, d.q.ID},
		Retention: store.Retention{PurgeDays: 31}})
	d.group = &store.Group{OrganizationID: d.org.ID, Name: "North", CreatedAt: testTime}
	write(t, e, func(r store.Records) error { return r.Groups().Insert(d.group) })
	return d
}

// pageOf is the page p of list.
func pageOf[T any](list []T, p store.Page) []T {
	list = list[min(p.Offset, len(list)):]
	if p.Limit > 0 {
		list = list[:min(p.Limit, len(list))]
	}
	return list
}

// idList is the id of each record of list, in its order.
func idList[T any](list []T, id func(*T) int64) []int64 {
	ids := []int64{}
	for i := range list {
		ids = append(ids, id(&list[i]))
	}
	return ids
}

// purgeAll runs purge, one batch a transaction from where the batch before
// ended, until it ends, fails the test when a batch deletes more than
// limit, and returns how many it deleted in how many batches.
func purgeAll(t *testing.T, e store.Engine, limit int, purge func(r store.Records, from []byte) (int, []byte, error)) (deleted, batches int) {
	t.Helper()
	var from []byte
	for {
		var n int
		write(t, e, func(r store.Records) (err error) { n, from, err = purge(r, from); return err })
		deleted, batches = deleted+n, batches+1
		if n > limit {
			t.Fatalf("a batch of limit %d deleted %d", limit, n)
		}
		if from == nil {
			return deleted, batches
		}
		if batches > 100 {
			t.Fatal("the purge does not end")
		}
	}
}
