package store_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// TestUserManagement: settings and access level change alone; a password
// change ends the token generation and the open tokens; a reset token
// replaces the older ones, works once and expires; a deleted user frees
// its e-mail and its tokens.
func TestUserManagement(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		u := &User{Email: "ops@example.com", Name: "Ops", PasswordHash: []byte("old"), PartnerID: f.partner.ID,
			OrganizationID: f.org.ID, AccessLevel: AccessEditor}
		f.update(func(tx *Tx) error { return tx.CreateUser(u) })

		f.update(func(tx *Tx) error {
			c := *u
			c.Name, c.AccessLevel, c.Settings = "Operations", AccessViewer, UserSettings{Measurement: MeasurementImperial, TimeFormat: TimeFormatAMPM}
			c.Email, c.PasswordHash = "other@example.com", []byte("ignored")
			return tx.UpdateUser(&c, "user.update")
		})
		f.view(func(tx *Tx) error {
			got, err := tx.User(u.ID)
			if err != nil {
				return err
			}
			if got.Name != "Operations" || got.AccessLevel != AccessViewer || got.Settings.Measurement != MeasurementImperial ||
				got.Settings.TimeFormat != TimeFormatAMPM || got.Email != "ops@example.com" || string(got.PasswordHash) != "old" {
				t.Fatalf("after update: %+v", got)
			}
			return nil
		})
		err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error {
			c := *u
			c.Settings.Measurement = 3
			return tx.UpdateUser(&c, "user.update")
		})
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("measurement 3: %v", err)
		}

		// Two reset tokens: only the newer works, once.
		f.update(func(tx *Tx) error {
			if _, err := tx.SetResetToken(u.ID, "first", f.clock.Now().Add(time.Hour)); err != nil {
				return err
			}
			_, err := tx.SetResetToken(u.ID, "second", f.clock.Now().Add(time.Hour))
			return err
		})
		redeem := func(token string) error {
			return f.db.Update(t.Context(), Actor{}, func(tx *Tx) error {
				_, err := tx.RedeemInviteToken(token, []byte("new"))
				return err
			})
		}
		if err := redeem("first"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the replaced token: %v", err)
		}
		if err := redeem("second"); err != nil {
			t.Fatal(err)
		}
		if err := redeem("second"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the token again: %v", err)
		}
		f.view(func(tx *Tx) error {
			got, _ := tx.User(u.ID)
			if string(got.PasswordHash) != "new" || got.TokenGeneration != 1 || !got.InviteExpiresAt.IsZero() {
				t.Fatalf("after the reset: %+v", got)
			}
			return nil
		})
		// An expired token does not work.
		f.update(func(tx *Tx) error {
			_, err := tx.SetResetToken(u.ID, "third", f.clock.Now().Add(time.Minute))
			return err
		})
		f.clock.Advance(2 * time.Minute)
		if err := redeem("third"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an expired token: %v", err)
		}

		// A password change forgets the open tokens and moves the generation on.
		f.update(func(tx *Tx) error {
			_, err := tx.SetResetToken(u.ID, "fourth", f.clock.Now().Add(time.Hour))
			return err
		})
		f.update(func(tx *Tx) error {
			got, err := tx.SetPassword(u.ID, []byte("changed"), "user.changePassword")
			if err == nil && got.TokenGeneration != 2 {
				t.Errorf("generation %d after the change", got.TokenGeneration)
			}
			return err
		})
		if err := redeem("fourth"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a token from before the change: %v", err)
		}

		// Deleting frees the e-mail; the user and its tokens are gone.
		f.update(func(tx *Tx) error {
			_, err := tx.SetResetToken(u.ID, "fifth", f.clock.Now().Add(time.Hour))
			return err
		})
		f.update(func(tx *Tx) error { return tx.DeleteUser(u.ID) })
		f.view(func(tx *Tx) error {
			if _, err := tx.User(u.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the deleted user: %v", err)
			}
			if _, err := tx.UserByEmail("ops@example.com"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the deleted user's e-mail: %v", err)
			}
			if _, err := tx.InvitedUser("fifth"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the deleted user's token: %v", err)
			}
			return nil
		})
		if err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { return tx.DeleteUser(u.ID) }); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleting twice: %v", err)
		}
		f.update(func(tx *Tx) error { return tx.CreateUser(&User{Email: "ops@example.com", PartnerID: f.partner.ID}) })

		var actions []string
		entries, _, err := f.db.AuditLog(t.Context(), AuditFilter{EntityType: "user"}, Page{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			actions = append(actions, e.Action)
		}
		for _, want := range []string{"user.update", "user.passwordReset.request", "user.setPassword", "user.changePassword", "user.delete"} {
			found := false
			for _, a := range actions {
				found = found || a == want
			}
			if !found {
				t.Errorf("no %s in the audit log: %v", want, actions)
			}
		}
	})
}

// TestGroupEdit: a renamed group keeps its devices; a deleted group's
// devices stay in the organization in no group.
func TestGroupEdit(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		var g, keep *Group
		f.update(func(tx *Tx) error {
			var err error
			if g, err = tx.CreateGroup(f.org.ID, "Trucks"); err != nil {
				return err
			}
			keep, err = tx.CreateGroup(f.org.ID, "Vans")
			return err
		})
		d1, d2, d3 := f.addDevice(1, f.org, f.partner.ID), f.addDevice(2, f.org, f.partner.ID), f.addDevice(3, f.org, f.partner.ID)
		f.update(func(tx *Tx) error {
			for _, d := range []*Device{d1, d2} {
				d.GroupID = g.ID
				if err := tx.UpdateDevice(d, "device.group"); err != nil {
					return err
				}
			}
			d3.GroupID = keep.ID
			return tx.UpdateDevice(d3, "device.group")
		})
		f.update(func(tx *Tx) error { _, err := tx.RenameGroup(g.ID, "Lorries"); return err })
		f.view(func(tx *Tx) error {
			got, err := tx.Group(g.ID)
			if err != nil || got.Name != "Lorries" || got.OrganizationID != f.org.ID {
				t.Fatalf("renamed: %+v %v", got, err)
			}
			return nil
		})
		var moved []string
		f.update(func(tx *Tx) error { var err error; moved, err = tx.DeleteGroup(g.ID); return err })
		if len(moved) != 2 || moved[0] != d1.IMEI || moved[1] != d2.IMEI {
			t.Fatalf("moved %v", moved)
		}
		f.view(func(tx *Tx) error {
			if _, err := tx.Group(g.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("deleted group: %v", err)
			}
			for _, want := range []struct {
				imei  string
				group int64
			}{{d1.IMEI, 0}, {d2.IMEI, 0}, {d3.IMEI, keep.ID}} {
				d, err := tx.Device(want.imei)
				if err != nil || d.GroupID != want.group || d.OrganizationID != f.org.ID {
					t.Fatalf("device %s: %+v %v", want.imei, d, err)
				}
			}
			return nil
		})
		for _, fn := range []func(tx *Tx) error{
			func(tx *Tx) error { _, err := tx.RenameGroup(g.ID, "x"); return err },
			func(tx *Tx) error { _, err := tx.DeleteGroup(g.ID); return err },
		} {
			if err := f.db.Update(t.Context(), Actor{}, fn); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a deleted group: %v", err)
			}
		}
	})
}
