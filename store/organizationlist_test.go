package store_test

import (
	"slices"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// TestOrganizationsList lists four organizations:
//
//	id creator  shared with  invites
//	1  p        -            -
//	2  q        -            p
//	3  p        q            -
//	4  q        -            -
func TestOrganizationsList(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		p := f.partner.ID
		var q int64
		f.update(func(tx *Tx) error {
			other, err := tx.CreatePartner("Other partner")
			if err != nil {
				return err
			}
			q = other.ID
			for _, o := range []*Organization{
				{Name: "Two", PartnerID: q, InvitedPartnerIDs: []int64{p}},
				{Name: "Three", PartnerID: p, PartnerIDs: []int64{p, q}},
				{Name: "Four", PartnerID: q},
			} {
				if err := tx.AddOrganization(o); err != nil {
					return err
				}
			}
			return nil
		})
		tests := []struct {
			name      string
			filter    OrganizationFilter
			page      Page
			wantIDs   []int64
			wantTotal int
		}{
			{"everything in id order", OrganizationFilter{}, Page{}, []int64{1, 2, 3, 4}, 4},
			{"created by or shared with a partner", OrganizationFilter{PartnerID: q}, Page{}, []int64{2, 3, 4}, 3},
			{"inviting a partner", OrganizationFilter{InvitedPartnerID: p}, Page{}, []int64{2}, 1},
			{"inviting no one", OrganizationFilter{InvitedPartnerID: q}, Page{}, []int64{}, 0},
			{"ids", OrganizationFilter{IDs: map[int64]bool{3: true, 4: true}}, Page{}, []int64{3, 4}, 2},
			{"no id", OrganizationFilter{IDs: map[int64]bool{}}, Page{}, []int64{}, 0},
			{"ids and partner", OrganizationFilter{IDs: map[int64]bool{1: true, 3: true}, PartnerID: q}, Page{}, []int64{3}, 1},
			{"a page", OrganizationFilter{PartnerID: q}, Page{Limit: 1, Offset: 1}, []int64{3}, 3},
			{"a page past the end", OrganizationFilter{}, Page{Limit: 10, Offset: 4}, []int64{}, 4},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f.view(func(tx *Tx) error {
					got, total, err := tx.Organizations(tc.filter, tc.page)
					if err != nil {
						return err
					}
					ids := []int64{}
					for _, o := range got {
						ids = append(ids, o.ID)
					}
					if !slices.Equal(ids, tc.wantIDs) || total != tc.wantTotal {
						t.Errorf("got %v of %d, want %v of %d", ids, total, tc.wantIDs, tc.wantTotal)
					}
					return nil
				})
			})
		}
	})
}
