package store_test

import (
	"fmt"
	"slices"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// TestUsersList lists four users: 1 and 3 of the partner, 2 and 4 of the
// organization.
func TestUsersList(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		f.update(func(tx *Tx) error {
			for i, org := range []int64{0, f.org.ID, 0, f.org.ID} {
				u := &User{Email: fmt.Sprintf("user%d@example.com", i+1), PartnerID: f.partner.ID, OrganizationID: org}
				if err := tx.CreateUser(u); err != nil {
					return err
				}
			}
			return nil
		})
		tests := []struct {
			name      string
			filter    UserFilter
			page      Page
			wantIDs   []int64
			wantTotal int
		}{
			{"everyone in id order", UserFilter{}, Page{}, []int64{1, 2, 3, 4}, 4},
			{"an organization's users", UserFilter{OrganizationID: f.org.ID}, Page{}, []int64{2, 4}, 2},
			{"partner users only", UserFilter{PartnerID: f.partner.ID, PartnerUsersOnly: true}, Page{}, []int64{1, 3}, 2},
			{"another partner's", UserFilter{PartnerID: f.partner.ID + 1}, Page{}, []int64{}, 0},
			{"a page", UserFilter{}, Page{Limit: 2, Offset: 1}, []int64{2, 3}, 4},
			{"a page of a filtered list", UserFilter{OrganizationID: f.org.ID}, Page{Limit: 1, Offset: 1}, []int64{4}, 2},
			{"a page past the end", UserFilter{}, Page{Limit: 2, Offset: 4}, []int64{}, 4},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f.view(func(tx *Tx) error {
					got, total, err := tx.Users(tc.filter, tc.page)
					if err != nil {
						return err
					}
					ids := []int64{}
					for _, u := range got {
						ids = append(ids, u.ID)
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
