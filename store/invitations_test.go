package store_test

import (
	"errors"
	"slices"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// TestOrganizationInvitations: an invitation names any id, holds nothing
// until the invited partner accepts, and only that partner can answer it.
func TestOrganizationInvitations(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, _ := openTest(t)
		pid, oid := seed(t, db)
		var other, third int64
		mustUpdate(t, db, func(tx *Tx) error {
			o, err := tx.CreatePartner("Other")
			if err != nil {
				return err
			}
			tp, err := tx.CreatePartner("Third")
			other, third = o.ID, tp.ID
			return err
		})
		invite := func(exclusive bool, ids ...int64) error {
			return db.Update(t.Context(), Actor{}, func(tx *Tx) error {
				o, err := tx.Organization(oid)
				if err != nil {
					return err
				}
				o.ExclusivePartnerOnly, o.InvitedPartnerIDs = exclusive, ids
				return tx.UpdateOrganization(o)
			})
		}
		answer := func(partnerID int64, accept bool) error {
			return db.Update(t.Context(), Actor{}, func(tx *Tx) error {
				_, err := tx.AnswerOrganizationInvitation(oid, partnerID, accept)
				return err
			})
		}
		if err := invite(true, other); !errors.Is(err, ErrInvalid) {
			t.Fatalf("an exclusive organization invites: %v", err)
		}
		if err := invite(false, make([]int64, MaxInvitedPartners+1)...); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%d invitations: %v", MaxInvitedPartners+1, err)
		}
		if err := invite(false, other, third, 777, pid); err != nil {
			t.Fatalf("invitations of a partner, of an unknown id and of the creator: %v", err)
		}
		db.View(t.Context(), func(tx *Tx) error {
			o, _ := tx.Organization(oid)
			if o.HasPartner(other) || !slices.Equal(o.InvitedPartnerIDs, []int64{other, third, 777}) {
				t.Fatalf("after inviting: %+v", o)
			}
			if got, _, _ := tx.Organizations(OrganizationFilter{InvitedPartnerID: other}, Page{}); len(got) != 1 || got[0].ID != oid {
				t.Fatalf("invitations of the other partner: %+v", got)
			}
			return nil
		})
		if err := answer(pid, true); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an uninvited partner accepts: %v", err)
		}
		if err := answer(777, true); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an id no partner has accepts: %v", err)
		}
		if err := answer(other, true); err != nil {
			t.Fatal(err)
		}
		if err := answer(third, false); err != nil {
			t.Fatal(err)
		}
		if err := answer(other, true); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an answered invitation is answered again: %v", err)
		}
		db.View(t.Context(), func(tx *Tx) error {
			o, _ := tx.Organization(oid)
			if !o.HasPartner(other) || o.HasPartner(third) || !slices.Equal(o.InvitedPartnerIDs, []int64{777}) {
				t.Fatalf("after the answers: %+v", o)
			}
			return nil
		})
	})
}
