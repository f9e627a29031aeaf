package store_test

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// TestExternalUsers: a user is added to other organizations once, listed
// as their external user, keeps them across other changes, and leaves
// them when removed or when the organization is deleted.
func TestExternalUsers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		var two, three *Organization
		u := &User{Email: "ops@fleet.example", Name: "Ops", PartnerID: f.partner.ID, OrganizationID: f.org.ID, AccessLevel: AccessEditor}
		f.update(func(tx *Tx) error {
			var err error
			if two, err = tx.CreateOrganization(f.partner.ID, "Fleet two", []byte("salt")); err != nil {
				return err
			}
			if three, err = tx.CreateOrganization(f.partner.ID, "Fleet three", []byte("salt")); err != nil {
				return err
			}
			return tx.CreateUser(u)
		})
		f.update(func(tx *Tx) error {
			for _, o := range []*Organization{two, three} {
				if _, err := tx.AddExternalUser(u.ID, o.ID); err != nil {
					return err
				}
			}
			return nil
		})
		for _, orgID := range []int64{two.ID, f.org.ID} {
			err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { _, err := tx.AddExternalUser(u.ID, orgID); return err })
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("adding to organization %d again: %v", orgID, err)
			}
		}
		// Other changes of the user keep its organizations.
		f.update(func(tx *Tx) error {
			c := *u
			c.Name = "Operations"
			return tx.UpdateUser(&c, "user.update")
		})
		f.update(func(tx *Tx) error { _, err := tx.SetPassword(u.ID, []byte("hash"), "user.changePassword"); return err })
		externals := func(orgID int64) []int64 {
			var ids []int64
			f.view(func(tx *Tx) error {
				users, n, err := tx.Users(UserFilter{ExternalOrganizationID: orgID}, Page{})
				if n != len(users) {
					t.Fatalf("%d users counted, %d listed", n, len(users))
				}
				for _, x := range users {
					ids = append(ids, x.ID)
				}
				return err
			})
			return ids
		}
		if got := externals(two.ID); !slices.Equal(got, []int64{u.ID}) {
			t.Fatalf("external users of two: %v", got)
		}
		f.view(func(tx *Tx) error {
			got, err := tx.User(u.ID)
			if err != nil || !slices.Equal(got.ExternalOrganizationIDs, []int64{two.ID, three.ID}) || got.Name != "Operations" {
				t.Fatalf("user %+v %v", got, err)
			}
			return nil
		})

		f.update(func(tx *Tx) error { _, err := tx.RemoveExternalUser(u.ID, two.ID); return err })
		if got := externals(two.ID); len(got) != 0 {
			t.Fatalf("removed, still listed: %v", got)
		}
		err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { _, err := tx.RemoveExternalUser(u.ID, two.ID); return err })
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("removing twice: %v", err)
		}
		// Deleting an organization takes it from its external users.
		f.update(func(tx *Tx) error { _, err := tx.DeleteOrganization(three.ID); return err })
		f.view(func(tx *Tx) error {
			got, err := tx.User(u.ID)
			if err != nil || len(got.ExternalOrganizationIDs) != 0 || got.OrganizationID != f.org.ID {
				t.Fatalf("after the deletion: %+v %v", got, err)
			}
			return nil
		})
		entries, _, err := f.db.AuditLog(t.Context(), AuditFilter{EntityType: "user", EntityID: strconv.FormatInt(u.ID, 10)}, Page{})
		if err != nil {
			t.Fatal(err)
		}
		var adds, removes int
		for _, e := range entries {
			switch e.Action {
			case "organization.externalUser.add":
				adds++
			case "organization.externalUser.remove":
				removes++
			}
		}
		if adds != 2 || removes != 2 {
			t.Fatalf("audit: %d adds, %d removes", adds, removes)
		}
	})
}
