package store_test

import (
	"errors"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestValidIMEI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		imei string
		ok   bool
	}{
		{"490154203237518", true},
		{"356938035643809", true},
		{"490154203237517", false},
		{"49015420323751", false},
		{"4901542032375180", false},
		{"49015420323751a", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := ValidIMEI(tc.imei); got != tc.ok {
			t.Errorf("ValidIMEI(%q) = %v", tc.imei, got)
		}
	}
}

func TestDevicesInventory(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, _ := openTest(t)
		pid, oid := seed(t, db)
		var oid2 int64
		mustUpdate(t, db, func(tx *Tx) error {
			o, err := tx.CreateOrganization(pid, "Second", nil)
			oid2 = o.ID
			if err != nil {
				return err
			}
			for _, d := range []Device{
				{IMEI: "490154203237518", Name: "Alpha", OrganizationID: oid, PartnerID: pid},
				{IMEI: "356938035643809", Name: "Bravo", OrganizationID: oid, PartnerID: pid},
				{IMEI: "353918057929438", Name: "Charlie", OrganizationID: o.ID, PartnerID: pid},
			} {
				if err := tx.AddDevice(&d); err != nil {
					return err
				}
			}
			return nil
		})
		db.View(t.Context(), func(tx *Tx) error {
			page, total, err := tx.Devices(DeviceFilter{OrganizationID: oid}, Page{Limit: 1, Offset: 1})
			if err != nil || total != 2 || len(page) != 1 || page[0].Name != "Alpha" {
				t.Fatalf("organization page %v %d %v", page, total, err)
			}
			if _, total, _ := tx.Devices(DeviceFilter{OrganizationID: oid2}, Page{}); total != 1 {
				t.Fatalf("second organization holds %d", total)
			}
			if _, total, _ := tx.Devices(DeviceFilter{PartnerID: pid}, Page{}); total != 3 {
				t.Fatalf("partner holds %d", total)
			}
			if page, _, _ := tx.Devices(DeviceFilter{OrganizationID: oid, Name: "BRA"}, Page{}); len(page) != 1 || page[0].Name != "Bravo" {
				t.Fatalf("name filter %v", page)
			}
			d, _ := tx.Device("490154203237518")
			if d.Status != DevicePendingActivation {
				t.Fatalf("status %q", d.Status)
			}
			return nil
		})

		tests := []struct {
			name string
			d    Device
			want error
		}{
			{"bad IMEI", Device{IMEI: "490154203237517", OrganizationID: oid, PartnerID: pid}, ErrInvalid},
			{"IMEI in another organization", Device{IMEI: "353918057929438", OrganizationID: oid, PartnerID: pid}, ErrConflict},
			{"unknown organization", Device{IMEI: "351756051523993", OrganizationID: 99, PartnerID: pid}, ErrNotFound},
			{"partner not admitted", Device{IMEI: "351756051523993", OrganizationID: oid, PartnerID: 42}, ErrInvalid},
			{"group of another organization", Device{IMEI: "351756051523993", OrganizationID: oid, PartnerID: pid, GroupID: 5}, ErrNotFound},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				err := db.Update(t.Context(), Actor{}, func(tx *Tx) error { return tx.AddDevice(&tc.d) })
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
			})
		}
	})
}

func TestRemoveDeviceEmitsMessage(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, _ := openTest(t)
		pid, oid := seed(t, db)
		mustUpdate(t, db, func(tx *Tx) error {
			return tx.AddDevice(&Device{IMEI: "490154203237518", Name: "Alpha", OrganizationID: oid, PartnerID: pid})
		})
		mustUpdate(t, db, func(tx *Tx) error { return tx.RemoveDevice("490154203237518") })
		msgs := allMessages(t, db)
		if len(msgs) != 1 {
			t.Fatalf("messages %v", msgs)
		}
		m := msgs[0]
		if m.Kind != MessageSystem || m.SubType != SystemDeviceRemoved || m.IMEI != "490154203237518" || m.OrganizationID != oid ||
			m.Removed == nil || m.Removed.Name != "Alpha" {
			t.Fatalf("message %+v", m)
		}
		db.View(t.Context(), func(tx *Tx) error {
			if _, total, _ := tx.Devices(DeviceFilter{OrganizationID: oid}, Page{}); total != 0 {
				t.Fatalf("removed device still listed")
			}
			return nil
		})
		entries, _, _ := db.AuditLog(t.Context(), AuditFilter{Action: "device.remove"}, Page{})
		if len(entries) != 1 || string(entries[0].Before) == "" {
			t.Fatalf("removal audit %+v", entries)
		}
	})
}

func TestUpdateDeviceChecks(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, _ := openTest(t)
		pid, oid := seed(t, db)
		var other *Group
		mustUpdate(t, db, func(tx *Tx) error {
			o, err := tx.CreateOrganization(pid, "Second", nil)
			if err != nil {
				return err
			}
			if other, err = tx.CreateGroup(o.ID, "Elsewhere"); err != nil {
				return err
			}
			return tx.AddDevice(&Device{IMEI: "490154203237518", Name: "Alpha", OrganizationID: oid, PartnerID: pid})
		})
		for _, tc := range []struct {
			name string
			fn   func(d *Device)
			want error
		}{
			{"status", func(d *Device) { d.Status = "lost" }, ErrInvalid},
			{"organization", func(d *Device) { d.OrganizationID = 99 }, ErrInvalid},
			{"group of another organization", func(d *Device) { d.GroupID = other.ID }, ErrNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := db.Update(t.Context(), Actor{}, func(tx *Tx) error {
					d, _ := tx.Device("490154203237518")
					tc.fn(d)
					return tx.UpdateDevice(d, "test")
				})
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
			})
		}
	})
}
