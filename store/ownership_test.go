package store_test

import (
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// TestUpdateDeviceKeepsItsOwnership: changing a device does not start a
// new ownership nor move its start.
func TestUpdateDeviceKeepsItsOwnership(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		f.clock.Advance(time.Hour)
		f.update(func(tx *Tx) error {
			d := *dev
			d.Name, d.Ownership, d.CreatedAt = "Renamed", 0, f.clock.Now()
			return tx.UpdateDevice(&d, "device.update")
		})
		f.view(func(tx *Tx) error {
			d, err := tx.Device(dev.IMEI)
			if err != nil || d.Name != "Renamed" || d.Ownership != dev.Ownership || !d.CreatedAt.Equal(dev.CreatedAt) {
				t.Errorf("device after update %+v %v, want ownership %d from %s", d, err, dev.Ownership, dev.CreatedAt)
			}
			return nil
		})
	})
}

// TestDeviceEventIDsAreUniquePerOwnership: a device reset for its next
// owner may count its event ids from the start again; its first event
// under the new owner is stored, not taken for a redelivery of the old
// owner's, while a redelivery within the ownership still is one.
func TestDeviceEventIDsAreUniquePerOwnership(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		ingest := func(dev *Device) IngestResult {
			t.Helper()
			var res IngestResult
			f.update(func(tx *Tx) error {
				var err error
				res, err = tx.IngestEvent(dev, EventInput{DeviceEventID: "1", Type: EventAccident, Time: f.clock.Now()})
				return err
			})
			return res
		}
		first := ingest(dev)
		if again := ingest(dev); again.Created || again.Event.ID != first.Event.ID {
			t.Fatalf("redelivery within the ownership: %+v", again)
		}
		f.update(func(tx *Tx) error { return tx.RemoveDevice(dev.IMEI) })
		moved := f.addDevice(1, f.org, f.partner.ID)
		next := ingest(moved)
		if !next.Created || next.Event.ID == first.Event.ID || next.Event.Ownership != moved.Ownership {
			t.Fatalf("the new owner's first event %+v, want a new one", next)
		}
		if again := ingest(moved); again.Created || again.Event.ID != next.Event.ID {
			t.Fatalf("redelivery within the new ownership: %+v", again)
		}
	})
}
