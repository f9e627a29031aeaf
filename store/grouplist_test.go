package store_test

import (
	"fmt"
	"slices"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// TestGroupsList lists an organization's groups, not another's.
func TestGroupsList(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		var other *Organization
		f.update(func(tx *Tx) error {
			var err error
			if other, err = tx.CreateOrganization(f.partner.ID, "Fleet two", []byte("salt")); err != nil {
				return err
			}
			for i, org := range []int64{f.org.ID, other.ID, f.org.ID, f.org.ID} {
				if _, err := tx.CreateGroup(org, fmt.Sprintf("Group %d", i+1)); err != nil {
					return err
				}
			}
			return nil
		})
		tests := []struct {
			name      string
			org       int64
			page      Page
			wantIDs   []int64
			wantTotal int
		}{
			{"one organization's groups in id order", f.org.ID, Page{}, []int64{1, 3, 4}, 3},
			{"the other's", other.ID, Page{}, []int64{2}, 1},
			{"a page", f.org.ID, Page{Limit: 1, Offset: 1}, []int64{3}, 3},
			{"a page past the end", f.org.ID, Page{Limit: 5, Offset: 3}, []int64{}, 3},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f.view(func(tx *Tx) error {
					got, total, err := tx.Groups(tc.org, tc.page)
					if err != nil {
						return err
					}
					ids := []int64{}
					for _, g := range got {
						ids = append(ids, g.ID)
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
