package postgres

import (
	"slices"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// TestOrganizations stores an organization with every field set, its
// partners and invitations in an order that is not the ids', reads it back
// as stored, and replaces its lists.
func TestOrganizations(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	var r *store.Partner
	write(t, e, func(tx *tx) error {
		r = &store.Partner{Name: "R", CreatedAt: testTime}
		return tx.Partners().Insert(r)
	})
	// Partner 999 does not exist: an invitation names a partner as given.
	o := &store.Organization{Name: "Shared", PartnerID: d.q.ID, PartnerIDs: []int64{d.q.ID, r.ID, d.p.ID},
		InvitedPartnerIDs: []int64{999, d.p.ID + 100}, IsOrganizationProfileEnabled: true, SSOSalt: []byte{0, 1, 2, 255},
		Retention: store.Retention{PurgeDays: 31, PurgeDaysFrontCamera: 7, PurgeDaysRearCamera: 3,
			PurgeDaysAuxiliaryCameras: 2, DeviceRetentionMinutes: 600},
		LiveVideoTimeoutSeconds: 120, DefaultDataProfileID: 42, CreatedAt: testTime}
	// Without salt or invitations, exclusive.
	plain := &store.Organization{Name: "Plain", PartnerID: d.p.ID, PartnerIDs: []int64{d.p.ID},
		ExclusivePartnerOnly: true, Retention: store.Retention{PurgeDays: 31}, CreatedAt: testTime}
	write(t, e, func(tx *tx) error {
		for _, o := range []*store.Organization{o, plain} {
			if err := tx.Organizations().Insert(o); err != nil {
				return err
			}
		}
		return nil
	})
	if o.ID <= d.org.ID || plain.ID <= o.ID {
		t.Fatalf("organization ids %d, %d, %d; want increasing", d.org.ID, o.ID, plain.ID)
	}
	get := func(id int64) (got *store.Organization) {
		t.Helper()
		read(t, e, func(tx *tx) (err error) {
			got, err = tx.Organizations().Get(id)
			return err
		})
		return got
	}
	wantEqual(t, "the organization", get(o.ID), o)
	wantEqual(t, "the plain organization", get(plain.ID), plain)
	read(t, e, func(tx *tx) error {
		_, err := tx.Organizations().Get(plain.ID + 1)
		wantErr(t, "an unknown organization", err, store.ErrNotFound)
		return nil
	})

	// r leaves, p moves first, q's invitation is accepted by another
	// partner id, and a partner named twice is admitted once.
	changed := *o
	changed.Name, changed.ExclusivePartnerOnly, changed.SSOSalt = "Renamed", true, []byte("salt")
	changed.PartnerIDs = []int64{d.p.ID, d.q.ID, d.p.ID}
	changed.InvitedPartnerIDs = []int64{r.ID, 999}
	changed.Retention = store.Retention{PurgeDays: 90}
	changed.LiveVideoTimeoutSeconds, changed.DefaultDataProfileID = 0, 0
	write(t, e, func(tx *tx) error {
		if err := tx.Organizations().Put(&changed); err != nil {
			return err
		}
		unknown := *plain
		unknown.ID = plain.ID + 1
		wantErr(t, "Put of an unknown organization", tx.Organizations().Put(&unknown), store.ErrNotFound)
		return nil
	})
	want := changed
	want.PartnerIDs = []int64{d.p.ID, d.q.ID}
	wantEqual(t, "the organization put", get(o.ID), &want)

	// Emptied lists are nil, as the record leaves a list it has none of.
	changed.PartnerIDs, changed.InvitedPartnerIDs = []int64{}, nil
	write(t, e, func(tx *tx) error { return tx.Organizations().Put(&changed) })
	got := get(o.ID)
	if got.PartnerIDs != nil || got.InvitedPartnerIDs != nil {
		t.Errorf("emptied lists read %#v, %#v; want nil", got.PartnerIDs, got.InvitedPartnerIDs)
	}
}

// TestOrganizationsList lists four organizations as OrganizationFilter
// selects them, in id order:
//
//	   creator  shares with  invites
//	1  p        q            -
//	2  q        -            p
//	3  p        q            -
//	4  q        -            -
func TestOrganizationsList(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	p, q := d.p.ID, d.q.ID
	ids := []int64{d.org.ID}
	write(t, e, func(tx *tx) error {
		for _, o := range []*store.Organization{
			{Name: "Two", PartnerID: q, PartnerIDs: []int64{q}, InvitedPartnerIDs: []int64{p}},
			{Name: "Three", PartnerID: p, PartnerIDs: []int64{p, q}},
			{Name: "Four", PartnerID: q, PartnerIDs: []int64{q}},
		} {
			o.CreatedAt = testTime
			if err := tx.Organizations().Insert(o); err != nil {
				return err
			}
			ids = append(ids, o.ID)
		}
		return nil
	})
	tests := []struct {
		name      string
		filter    store.OrganizationFilter
		page      store.Page
		wantIDs   []int64
		wantTotal int
	}{
		{"everything in id order", store.OrganizationFilter{}, store.Page{}, ids, 4},
		{"created by or shared with a partner", store.OrganizationFilter{PartnerID: q}, store.Page{}, ids, 4},
		{"created by or shared with p", store.OrganizationFilter{PartnerID: p}, store.Page{}, []int64{ids[0], ids[2]}, 2},
		{"inviting a partner", store.OrganizationFilter{InvitedPartnerID: p}, store.Page{}, []int64{ids[1]}, 1},
		{"inviting no one", store.OrganizationFilter{InvitedPartnerID: q}, store.Page{}, nil, 0},
		{"ids", store.OrganizationFilter{IDs: map[int64]bool{ids[2]: true, ids[3]: true}}, store.Page{}, ids[2:], 2},
		{"ids set false", store.OrganizationFilter{IDs: map[int64]bool{ids[2]: true, ids[3]: false}}, store.Page{}, ids[2:3], 1},
		{"no id", store.OrganizationFilter{IDs: map[int64]bool{}}, store.Page{}, nil, 0},
		{"ids and partner", store.OrganizationFilter{IDs: map[int64]bool{ids[1]: true, ids[2]: true}, PartnerID: p}, store.Page{}, ids[2:3], 1},
		{"partner and invitation", store.OrganizationFilter{PartnerID: q, InvitedPartnerID: p}, store.Page{}, ids[1:2], 1},
		{"a page", store.OrganizationFilter{PartnerID: q}, store.Page{Limit: 2, Offset: 1}, ids[1:3], 4},
		{"a page past the end", store.OrganizationFilter{}, store.Page{Limit: 10, Offset: 4}, nil, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read(t, e, func(tx *tx) error {
				got, total, err := tx.Organizations().List(tc.filter, tc.page)
				if err != nil {
					return err
				}
				var gotIDs []int64
				for _, o := range got {
					gotIDs = append(gotIDs, o.ID)
					if !tc.filter.Match(&o) {
						t.Errorf("organization %d does not match the filter", o.ID)
					}
				}
				if !slices.Equal(gotIDs, tc.wantIDs) || total != tc.wantTotal {
					t.Errorf("got %v of %d, want %v of %d", gotIDs, total, tc.wantIDs, tc.wantTotal)
				}
				return nil
			})
		})
	}
}

// TestGroups stores groups of two organizations and lists each's.
func TestGroups(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	other := &store.Organization{Name: "Other", PartnerID: d.q.ID, PartnerIDs: []int64{d.q.ID}, CreatedAt: testTime}
	ids := []int64{d.group.ID}
	write(t, e, func(tx *tx) error {
		if err := tx.Organizations().Insert(other); err != nil {
			return err
		}
		for _, g := range []*store.Group{
			{OrganizationID: other.ID, Name: "Elsewhere"},
			{OrganizationID: d.org.ID, Name: "South"},
			{OrganizationID: d.org.ID, Name: "East"},
		} {
			g.CreatedAt = testTime
			if err := tx.Groups().Insert(g); err != nil {
				return err
			}
			ids = append(ids, g.ID)
		}
		return nil
	})
	if !increasing(ids) {
		t.Fatalf("group ids %v; want increasing", ids)
	}
	read(t, e, func(tx *tx) error {
		g, err := tx.Groups().Get(ids[2])
		if err != nil {
			return err
		}
		wantEqual(t, "group", g, &store.Group{ID: ids[2], OrganizationID: d.org.ID, Name: "South", CreatedAt: testTime})
		_, err = tx.Groups().Get(ids[3] + 1)
		wantErr(t, "an unknown group", err, store.ErrNotFound)
		for _, tc := range []struct {
			org       int64
			page      store.Page
			wantIDs   []int64
			wantTotal int
		}{
			{d.org.ID, store.Page{}, []int64{ids[0], ids[2], ids[3]}, 3},
			{d.org.ID, store.Page{Limit: 1, Offset: 1}, []int64{ids[2]}, 3},
			{d.org.ID, store.Page{Offset: 2}, []int64{ids[3]}, 3},
			{d.org.ID, store.Page{Offset: 3}, nil, 3},
			{other.ID, store.Page{}, []int64{ids[1]}, 1},
			{other.ID + 1, store.Page{}, nil, 0},
		} {
			got, total, err := tx.Groups().List(tc.org, tc.page)
			if err != nil {
				return err
			}
			var gotIDs []int64
			for _, g := range got {
				gotIDs = append(gotIDs, g.ID)
			}
			if !slices.Equal(gotIDs, tc.wantIDs) || total != tc.wantTotal {
				t.Errorf("groups of %d, %+v: got %v of %d, want %v of %d", tc.org, tc.page, gotIDs, total, tc.wantIDs, tc.wantTotal)
			}
		}
		return nil
	})
}
