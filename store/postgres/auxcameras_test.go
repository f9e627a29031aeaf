package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// TestDeviceStateRowsNeedTheDevice: the cameras and the billing record of
// a device not in the inventory are refused, and a removed device's go
// with it (the schema's foreign keys and their cascade). The engine suite,
// store/enginetest, tests the records themselves.
func TestDeviceStateRowsNeedTheDevice(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	b := f.imeis[1]
	cams := []store.AuxCamera{{CameraID: 50, Kind: "wired"}}
	billing := func(imei string) *store.DeviceBilling {
		return &store.DeviceBilling{IMEI: imei, AuxBillingStatus: store.AuxBillingEnable}
	}
	err := f.e.update(context.Background(), func(tx *tx) error { return tx.AuxCameras().Put("000000000000000", cams) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cameras of an unknown device: %v; want not found", err)
	}
	err = f.e.update(context.Background(), func(tx *tx) error { return tx.DeviceBillings().Put(billing("000000000000000")) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("billing of an unknown device: %v; want not found", err)
	}
	f.update(func(tx *tx) error {
		if err := tx.AuxCameras().Put(b, cams); err != nil {
			return err
		}
		return tx.DeviceBillings().Put(billing(b))
	})
	f.removeDevice(b)
	if n, m := f.count(`aux_cameras WHERE imei = $1`, b), f.count(`device_billing WHERE imei = $1`, b); n != 0 || m != 0 {
		t.Errorf("%d cameras and %d billing records of the removed device left", n, m)
	}
}
