package store_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// TestDeleteOrganization: an organization holding a device is not deleted;
// once empty it goes with its users, groups, drivers, recipients and
// invitations, and only the retention purge still finds its record.
func TestDeleteOrganization(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		var other *Partner
		var keep *Organization
		u := &User{Email: "ops@fleet.example", PartnerID: f.partner.ID, OrganizationID: f.org.ID, AccessLevel: AccessEditor}
		contact := &User{Email: "contact@partner.example", PartnerID: f.partner.ID, AccessLevel: AccessEditor}
		driver := &Driver{OrganizationID: f.org.ID, ThirdPartyID: "D-1", FirstName: "Ann", IsActive: true}
		recipient := &AlarmRecipient{Kind: RecipientAlarms, Email: "alarms@fleet.example", ReportIntervalSeconds: 3600, PartnerID: f.partner.ID, OrganizationID: f.org.ID}
		var group *Group
		f.update(func(tx *Tx) error {
			var err error
			if other, err = tx.CreatePartner("Other"); err != nil {
				return err
			}
			if keep, err = tx.CreateOrganization(f.partner.ID, "Fleet two", []byte("salt")); err != nil {
				return err
			}
			for _, x := range []*User{u, contact} {
				if err := tx.CreateUser(x); err != nil {
					return err
				}
			}
			if err := tx.SetInviteToken(u, "invite", f.clock.Now().Add(time.Hour)); err != nil {
				return err
			}
			if group, err = tx.CreateGroup(f.org.ID, "Trucks"); err != nil {
				return err
			}
			if err := tx.CreateDriver(driver); err != nil {
				return err
			}
			if err := tx.AddAlarmRecipient(recipient); err != nil {
				return err
			}
			o, err := tx.Organization(f.org.ID)
			if err != nil {
				return err
			}
			o.ExclusivePartnerOnly, o.InvitedPartnerIDs = false, []int64{other.ID}
			return tx.UpdateOrganization(o)
		})
		d := f.addDevice(1, f.org, f.partner.ID)

		del := func() error {
			return f.db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error { _, err := tx.DeleteOrganization(f.org.ID); return err })
		}
		if err := del(); !errors.Is(err, ErrConflict) {
			t.Fatalf("deleting an organization with a device: %v", err)
		}
		f.view(func(tx *Tx) error {
			if _, err := tx.User(u.ID); err != nil {
				t.Fatalf("a refused deletion deleted the user: %v", err)
			}
			return nil
		})
		f.update(func(tx *Tx) error { return tx.RemoveDevice(d.IMEI) })
		if err := del(); err != nil {
			t.Fatal(err)
		}

		f.view(func(tx *Tx) error {
			if _, err := tx.Organization(f.org.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the deleted organization: %v", err)
			}
			if _, err := tx.User(u.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("its user: %v", err)
			}
			if _, err := tx.InvitedUser("invite"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("its user's invitation: %v", err)
			}
			if _, err := tx.User(contact.ID); err != nil {
				t.Fatalf("the partner's contact: %v", err)
			}
			if _, err := tx.Group(group.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("its group: %v", err)
			}
			if ds, _, err := tx.Drivers(DriverFilter{OrganizationIDs: map[int64]bool{f.org.ID: true}}, Sort{}, Page{}); err != nil || len(ds) != 0 {
				t.Fatalf("its drivers: %v %v", ds, err)
			}
			if rs, err := tx.AlarmRecipients(func(r *AlarmRecipient) bool { return r.OrganizationID == f.org.ID }); err != nil || len(rs) != 0 {
				t.Fatalf("its recipients: %v %v", rs, err)
			}
			for _, tc := range []struct {
				name   string
				filter OrganizationFilter
				want   []int64
			}{
				{"all", OrganizationFilter{}, []int64{keep.ID}},
				{"the partner's", OrganizationFilter{PartnerID: f.partner.ID}, []int64{keep.ID}},
				{"inviting the other partner", OrganizationFilter{InvitedPartnerID: other.ID}, nil},
				{"with the deleted", OrganizationFilter{WithDeleted: true}, []int64{f.org.ID, keep.ID}},
			} {
				orgs, n, err := tx.Organizations(tc.filter, Page{})
				if err != nil || n != len(tc.want) || len(orgs) != len(tc.want) {
					t.Fatalf("%s: %d %v %v", tc.name, n, orgs, err)
				}
				for i := range orgs {
					if orgs[i].ID != tc.want[i] {
						t.Fatalf("%s: %v", tc.name, orgs)
					}
				}
			}
			orgs, _, _ := tx.Organizations(OrganizationFilter{WithDeleted: true, IDs: map[int64]bool{f.org.ID: true}}, Page{})
			if len(orgs) != 1 || orgs[0].DeletedAt.IsZero() || orgs[0].Name != "Fleet one" || len(orgs[0].InvitedPartnerIDs) != 0 {
				t.Fatalf("the deleted record: %+v", orgs)
			}
			return nil
		})
		if err := del(); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleting twice: %v", err)
		}
		entries, _, err := f.db.AuditLog(t.Context(), AuditFilter{Action: "organization.delete"}, Page{})
		if err != nil || len(entries) != 1 || entries[0].OrganizationID != f.org.ID {
			t.Fatalf("audit: %+v %v", entries, err)
		}
		// The e-mail of its user is free again.
		f.update(func(tx *Tx) error {
			return tx.CreateUser(&User{Email: "ops@fleet.example", PartnerID: f.partner.ID, OrganizationID: keep.ID, AccessLevel: AccessEditor})
		})
	})
}
