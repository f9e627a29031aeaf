package bolt_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
)

// Removing a device drops the state only a present device has, in every
// bucket that keeps some, and leaves other devices' state alone.
func TestRemoveDeviceDropsItsState(t *testing.T) {
	f := newFixture(t)
	imei, other := f.imei(1), f.imei(2)
	perDevice := []struct {
		bucket string
		key    func(imei string) []byte
	}{
		{"device_health_state", func(i string) []byte { return []byte(i) }},
		{"alarm_open", func(i string) []byte { return key(i, "7") }},
		{"aux_cameras", func(i string) []byte { return []byte(i) }},
		{"device_billing", func(i string) []byte { return []byte(i) }},
		{"data_usage", func(i string) []byte { return key(i, "", int64(1)) }},
		{"device_links", func(i string) []byte { return []byte(i) }},
		{"device_credentials", func(i string) []byte { return []byte(i) }},
		{"driver_pin_failures", func(i string) []byte { return []byte(i) }},
		{"device_tracks", func(i string) []byte { return []byte(i) }},
		{"device_hotspot", func(i string) []byte { return []byte(i) }},
		{"device_settings", func(i string) []byte { return []byte(i) }},
		{"trip_open", func(i string) []byte { return []byte(i) }},
	}
	for _, i := range []string{imei, other} {
		f.update(func(tx *Tx) error {
			return tx.AddDevice(&Device{IMEI: i, OrganizationID: f.org.ID, PartnerID: f.partner.ID})
		})
		for _, p := range perDevice {
			f.put(p.bucket, p.key(i), []byte("{}"))
		}
	}
	f.update(func(tx *Tx) error { return tx.RemoveDevice(imei) })
	for _, p := range perDevice {
		if f.get(p.bucket, p.key(imei)) != nil {
			t.Errorf("%s: the removed device's entry is still there", p.bucket)
		}
		if !bytes.Equal(f.get(p.bucket, p.key(other)), []byte("{}")) {
			t.Errorf("%s: the other device's entry went too", p.bucket)
		}
	}
}

// A device is its JSON under its IMEI in devices, and an empty entry under
// the organization's 8-byte id, 0 and the IMEI in org_devices. Devices an
// older version wrote are read, listed and removed; the devices the store
// adds are written so.
func TestDevicesLayout(t *testing.T) {
	f := newFixture(t)
	added := time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)
	old := f.imei(1)
	f.put("devices", []byte(old), fmt.Appendf(nil, `{"imei":%q,"name":"Old","organizationId":%d,"partnerId":%d,`+
		`"status":"activated","createdAt":"2025-06-01T08:00:00Z"}`, old, f.org.ID, f.partner.ID))
	f.put("org_devices", key(f.org.ID, old), nil)

	dev := f.addDevice(2, f.org, f.partner.ID)
	var stored Device
	if err := json.Unmarshal(f.get("devices", []byte(dev.IMEI)), &stored); err != nil || stored.Name != dev.Name ||
		stored.OrganizationID != f.org.ID || stored.Ownership != dev.Ownership || stored.Status != DevicePendingActivation {
		t.Errorf("added device stored as %+v (%v), want %+v", stored, err, dev)
	}
	if v := f.get("org_devices", key(f.org.ID, dev.IMEI)); v == nil || len(v) != 0 {
		t.Errorf("org_devices entry of the added device %q, want an empty one", v)
	}

	f.view(func(tx *Tx) error {
		d, err := tx.Device(old)
		if err != nil || d.Name != "Old" || d.Status != DeviceActivated || !d.CreatedAt.Equal(added) || d.Ownership != 0 {
			t.Errorf("device written before %+v %v", d, err)
		}
		for _, tc := range []struct {
			name string
			f    DeviceFilter
		}{
			{"of the organization", DeviceFilter{OrganizationID: f.org.ID}},
			{"of the partner", DeviceFilter{PartnerID: f.partner.ID}},
		} {
			list, n, err := tx.Devices(tc.f, Page{})
			if err != nil || n != 2 || list[0].IMEI != old || list[1].IMEI != dev.IMEI {
				t.Errorf("devices %s: %+v (%d) %v, want both in IMEI order", tc.name, list, n, err)
			}
		}
		if imeis, err := tx.OrgIMEIs(f.org.ID); err != nil || len(imeis) != 2 || imeis[0] != old || imeis[1] != dev.IMEI {
			t.Errorf("organization IMEIs %v %v", imeis, err)
		}
		return nil
	})

	f.update(func(tx *Tx) error { return tx.RemoveDevice(old) })
	if f.get("devices", []byte(old)) != nil || f.get("org_devices", key(f.org.ID, old)) != nil {
		t.Error("the removed device is still in devices or org_devices")
	}
	if f.get("org_devices", key(f.org.ID, dev.IMEI)) == nil {
		t.Error("removing a device took the other one off org_devices")
	}
}

// DeviceStamp is the FNV-1a hash of the stored record: it changes with
// the record, and a device that is gone has none.
func TestDeviceStampIsTheHashOfTheRecord(t *testing.T) {
	f := newFixture(t)
	dev := f.addDevice(1, f.org, f.partner.ID)
	stamp := func() (uint64, error) {
		var s uint64
		err := f.db.View(t.Context(), func(tx *Tx) error {
			var err error
			s, err = tx.DeviceStamp(dev.IMEI)
			return err
		})
		return s, err
	}
	hash := func() uint64 {
		h := fnv.New64a()
		h.Write(f.get("devices", []byte(dev.IMEI)))
		return h.Sum64()
	}
	before, err := stamp()
	if err != nil || before != hash() {
		t.Fatalf("stamp %x %v, want %x", before, err, hash())
	}
	f.update(func(tx *Tx) error {
		d, err := tx.Device(dev.IMEI)
		if err != nil {
			return err
		}
		d.Name = "Renamed"
		return tx.UpdateDevice(d, "device.update")
	})
	if after, err := stamp(); err != nil || after == before || after != hash() {
		t.Errorf("stamp after an update %x %v, want %x", after, err, hash())
	}
	f.update(func(tx *Tx) error { return tx.RemoveDevice(dev.IMEI) })
	if _, err := stamp(); !errors.Is(err, ErrNotFound) {
		t.Errorf("stamp of a removed device: %v, want ErrNotFound", err)
	}
}

// Groups are their JSON under their 8-byte id; the ids go on from the
// bucket's sequence.
func TestGroupsLayout(t *testing.T) {
	f := newFixture(t)
	f.put("groups", be8(7), fmt.Appendf(nil, `{"id":7,"organizationId":%d,"name":"Old","createdAt":"2025-06-01T08:00:00Z"}`, f.org.ID))
	f.setSequence("groups", 7)
	var g *Group
	f.update(func(tx *Tx) error {
		var err error
		g, err = tx.CreateGroup(f.org.ID, "New")
		return err
	})
	if g.ID != 8 {
		t.Errorf("new group id %d, want 8", g.ID)
	}
	var stored Group
	if err := json.Unmarshal(f.get("groups", be8(8)), &stored); err != nil || stored.Name != "New" || stored.OrganizationID != f.org.ID {
		t.Errorf("new group stored as %+v %v", stored, err)
	}
	f.view(func(tx *Tx) error {
		list, n, err := tx.Groups(f.org.ID, Page{})
		if err != nil || n != 2 || list[0].Name != "Old" || list[1].Name != "New" {
			t.Errorf("groups %+v (%d) %v, want the old one and the new one", list, n, err)
		}
		return nil
	})
}
