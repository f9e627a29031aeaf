package postgres

import (
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
