package postgres

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// testTime is a time with microseconds, which timestamptz keeps.
var testTime = time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)

// directory is what seedDirectory inserts: two partners, an organization
// of the first shared with the second, and a group in it.
type directory struct {
	p, q  *store.Partner
	org   *store.Organization
	group *store.Group
}

// seedDirectory inserts the directory most tests start from.
func seedDirectory(t *testing.T, e *Engine) directory {
	t.Helper()
	s := seeder{t, e, testTime}
	d := directory{p: s.partner("P"), q: s.partner("Q")}
	d.org = s.organization(store.Organization{Name: "Fleet", PartnerID: d.p.ID, PartnerIDs: []int64{d.p.ID, d.q.ID},
		Retention: store.Retention{PurgeDays: 31}})
	d.group = &store.Group{OrganizationID: d.org.ID, Name: "North", CreatedAt: testTime}
	write(t, e, func(t *tx) error { return t.Groups().Insert(d.group) })
	return d
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
