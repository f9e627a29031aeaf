package postgres

import (
	"fmt"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// testIMEI is the IMEI of test device n.
func testIMEI(n int) string { return fmt.Sprintf("35%013d", n) }

// TestDeviceStampIsTheRowsRevision: every write of a device's row gives it
// a new stamp, a write that leaves the record as it was too, and so does
// adding again a device removed (the engine suite tests the stamps of
// what changes).
func TestDeviceStampIsTheRowsRevision(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	dev := &store.Device{IMEI: testIMEI(1), Name: "Truck", OrganizationID: d.org.ID, PartnerID: d.p.ID,
		Status: store.DeviceActivated, CreatedAt: testTime}
	write(t, e, func(tx *tx) error { return tx.Devices().Insert(dev) })
	seen := map[uint64]string{}
	for _, step := range []struct {
		what  string
		write func(tx *tx) error
	}{
		{"after the insert", func(*tx) error { return nil }},
		{"after a put of the same record", func(tx *tx) error { return tx.Devices().Put(dev) }},
		{"after a removal and an add of the same record", func(tx *tx) error {
			if err := tx.Devices().Delete(dev.IMEI); err != nil {
				return err
			}
			return tx.Devices().Insert(dev)
		}},
	} {
		write(t, e, step.write)
		var s uint64
		read(t, e, func(tx *tx) (err error) { s, err = tx.Devices().Stamp(dev.IMEI); return err })
		if before, ok := seen[s]; ok {
			t.Fatalf("the stamp %s is %d, as it was %s", step.what, s, before)
		}
		seen[s] = step.what
	}
}

// TestDeviceGroupOfItsOrganization: the schema keeps a device out of
// another organization's group, as the store's rules do.
func TestDeviceGroupOfItsOrganization(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	var other *store.Organization
	write(t, e, func(tx *tx) error {
		other = &store.Organization{Name: "Other", PartnerID: d.p.ID, PartnerIDs: []int64{d.p.ID}, CreatedAt: testTime}
		return tx.Organizations().Insert(other)
	})
	err := e.update(t.Context(), func(tx *tx) error {
		return tx.Devices().Insert(&store.Device{IMEI: testIMEI(1), OrganizationID: other.ID, PartnerID: d.p.ID,
			GroupID: d.group.ID, Status: store.DeviceActivated, CreatedAt: testTime})
	})
	if err == nil {
		t.Fatal("a device went into a group of another organization")
	}
}
