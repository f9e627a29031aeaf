package store_test

import (
	"errors"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestCreateOrganizationDefaults(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, _ := openTest(t)
		pid, oid := seed(t, db)
		db.View(t.Context(), func(tx *Tx) error {
			o, err := tx.Organization(oid)
			if err != nil {
				t.Fatal(err)
			}
			if !o.ExclusivePartnerOnly || o.IsOrganizationProfileEnabled || o.Retention.PurgeDays != DefaultPurgeDays ||
				len(o.PartnerIDs) != 1 || o.PartnerIDs[0] != pid || string(o.SSOSalt) != "salt" {
				t.Fatalf("defaults %+v", o)
			}
			return nil
		})
		err := db.Update(t.Context(), Actor{}, func(tx *Tx) error {
			_, err := tx.CreateOrganization(99, "Orphan", nil)
			return err
		})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("organization of an unknown partner: %v", err)
		}
	})
}

func TestRetentionMediaPurgeDays(t *testing.T) {
	t.Parallel()
	r := Retention{PurgeDays: 31, PurgeDaysRearCamera: 7, PurgeDaysAuxiliaryCameras: 90}
	for cam, want := range map[int]int{1: 31, 2: 7, 3: 31, 50: 90, 61: 90} {
		if got := r.MediaPurgeDays(cam); got != want {
			t.Errorf("camera %d: %d days, want %d", cam, got, want)
		}
	}
}

func TestUpdateOrganizationPartners(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, _ := openTest(t)
		pid, oid := seed(t, db)
		var other int64
		mustUpdate(t, db, func(tx *Tx) error {
			p, err := tx.CreatePartner("Other")
			other = p.ID
			return err
		})
		update := func(fn func(o *Organization)) error {
			return db.Update(t.Context(), Actor{}, func(tx *Tx) error {
				o, err := tx.Organization(oid)
				if err != nil {
					return err
				}
				fn(o)
				return tx.UpdateOrganization(o)
			})
		}
		tests := []struct {
			name string
			fn   func(o *Organization)
			want error
		}{
			{"other partner while exclusive", func(o *Organization) { o.PartnerIDs = []int64{pid, other} }, ErrInvalid},
			{"unknown partner", func(o *Organization) { o.ExclusivePartnerOnly, o.PartnerIDs = false, []int64{pid, 77} }, ErrNotFound},
			{"new creator", func(o *Organization) { o.PartnerID = other }, ErrInvalid},
			{"share", func(o *Organization) { o.ExclusivePartnerOnly, o.PartnerIDs = false, []int64{other} }, nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				if err := update(tc.fn); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
			})
		}
		db.View(t.Context(), func(tx *Tx) error {
			o, _ := tx.Organization(oid)
			if len(o.PartnerIDs) != 2 || o.PartnerIDs[0] != pid || !o.HasPartner(other) {
				t.Fatalf("shared organization %+v", o)
			}
			return nil
		})
		mustUpdate(t, db, func(tx *Tx) error {
			return tx.AddDevice(&Device{IMEI: "490154203237518", Name: "x", OrganizationID: oid, PartnerID: other})
		})
		if err := update(func(o *Organization) { o.ExclusivePartnerOnly, o.PartnerIDs = true, []int64{pid} }); !errors.Is(err, ErrConflict) {
			t.Fatalf("dropping a partner with devices: %v", err)
		}
	})
}
