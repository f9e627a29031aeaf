package store_test

import (
	"errors"
	"regexp"
	"slices"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func driverIDs(ds []Driver) []int64 {
	ids := []int64{}
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids
}

// TestDriversList lists four drivers of two organizations:
//
//	id third party  org   first  last    license  active
//	1  ann          one   bob    Young   L3       yes
//	2  cid          one   Anna   young   L1       no
//	3  dee          two   Aaron  adams   L3       yes
//	4  eve          one   anna   Bates   L2       yes
func TestDriversList(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		var two *Organization
		f.update(func(tx *Tx) error {
			var err error
			two, err = tx.CreateOrganization(f.partner.ID, "Fleet two", []byte("salt"))
			if err != nil {
				return err
			}
			for _, d := range []*Driver{
				{OrganizationID: f.org.ID, ThirdPartyID: "ann", FirstName: "bob", LastName: "Young", DrivingLicense: "L3"},
				{OrganizationID: f.org.ID, ThirdPartyID: "cid", FirstName: "Anna", LastName: "young", DrivingLicense: "L1"},
				{OrganizationID: two.ID, ThirdPartyID: "dee", FirstName: "Aaron", LastName: "adams", DrivingLicense: "L3"},
				{OrganizationID: f.org.ID, ThirdPartyID: "eve", FirstName: "anna", LastName: "Bates", DrivingLicense: "L2"},
			} {
				if err := tx.CreateDriver(d); err != nil {
					return err
				}
			}
			_, err = tx.UpdateDriver(2, DriverPatch{IsActive: boolp(false)})
			return err
		})
		tests := []struct {
			name      string
			filter    DriverFilter
			sort      Sort
			page      Page
			wantIDs   []int64
			wantTotal int
		}{
			{"everything in id order", DriverFilter{}, Sort{}, Page{}, []int64{1, 2, 3, 4}, 4},
			{"created first", DriverFilter{}, Sort{Key: DriverByCreatedAt}, Page{}, []int64{1, 2, 3, 4}, 4},
			{"created last", DriverFilter{}, Sort{Key: DriverByCreatedAt, Desc: true}, Page{}, []int64{4, 3, 2, 1}, 4},
			{"driving licence, ties in id order", DriverFilter{}, Sort{Key: DriverByDrivingLicense}, Page{}, []int64{2, 4, 1, 3}, 4},
			{"driving licence descending", DriverFilter{}, Sort{Key: DriverByDrivingLicense, Desc: true}, Page{}, []int64{3, 1, 4, 2}, 4},
			{"first name ignoring case", DriverFilter{}, Sort{Key: DriverByFirstName}, Page{}, []int64{3, 2, 4, 1}, 4},
			{"first name descending", DriverFilter{}, Sort{Key: DriverByFirstName, Desc: true}, Page{}, []int64{1, 4, 2, 3}, 4},
			{"last name ignoring case", DriverFilter{}, Sort{Key: DriverByLastName}, Page{}, []int64{3, 4, 1, 2}, 4},
			{"last name descending", DriverFilter{}, Sort{Key: DriverByLastName, Desc: true}, Page{}, []int64{2, 1, 4, 3}, 4},
			{"organizations", DriverFilter{OrganizationIDs: map[int64]bool{f.org.ID: true}}, Sort{}, Page{}, []int64{1, 2, 4}, 3},
			{"id", DriverFilter{ID: 3}, Sort{}, Page{}, []int64{3}, 1},
			{"third-party id", DriverFilter{ThirdPartyID: "eve"}, Sort{}, Page{}, []int64{4}, 1},
			{"first name pattern", DriverFilter{FirstName: regexp.MustCompile("(?i)^ann")}, Sort{}, Page{}, []int64{2, 4}, 2},
			{"last name pattern", DriverFilter{LastName: regexp.MustCompile("(?i)young")}, Sort{}, Page{}, []int64{1, 2}, 2},
			{"inactive", DriverFilter{IsActive: boolp(false)}, Sort{}, Page{}, []int64{2}, 1},
			{"a page of the sorted list", DriverFilter{}, Sort{Key: DriverByLastName}, Page{Limit: 2, Offset: 1}, []int64{4, 1}, 4},
			{"a page past the end", DriverFilter{}, Sort{}, Page{Limit: 2, Offset: 4}, []int64{}, 4},
			{"the total counts the filtered list", DriverFilter{IsActive: boolp(true)}, Sort{Key: DriverByFirstName}, Page{Limit: 1}, []int64{3}, 3},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f.view(func(tx *Tx) error {
					got, total, err := tx.Drivers(tc.filter, tc.sort, tc.page)
					if err != nil {
						return err
					}
					if ids := driverIDs(got); !slices.Equal(ids, tc.wantIDs) || total != tc.wantTotal {
						t.Errorf("got %v of %d, want %v of %d", ids, total, tc.wantIDs, tc.wantTotal)
					}
					return nil
				})
			})
		}
		t.Run("an unknown sort key is refused", func(t *testing.T) {
			err := f.db.View(t.Context(), func(tx *Tx) error {
				_, _, err := tx.Drivers(DriverFilter{}, Sort{Key: "name"}, Page{})
				return err
			})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	})
}
