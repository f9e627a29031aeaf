package postgres

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestAuxCameras stores a device's cameras in their order, replaces them,
// keeps a list left empty apart from one never stored, and drops the list
// with the device.
func TestAuxCameras(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a, b := f.imeis[0], f.imeis[1]
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	cams := []store.AuxCamera{
		{CameraID: 52, SerialNumber: "S52", SSID: "AUX-52", Kind: "wifi", Paired: true, Connected: true, PairedAt: at, ChangedAt: at.Add(time.Minute)},
		{CameraID: 50, Kind: "wired"},
	}
	get := func(imei string) ([]store.AuxCamera, error) {
		t.Helper()
		var got []store.AuxCamera
		err := f.e.view(context.Background(), func(tx *tx) (err error) { got, err = tx.AuxCameras().Get(imei); return err })
		return got, err
	}
	if got, err := get(a); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cameras never stored: %v, %v; want not found", got, err)
	}
	f.update(func(tx *tx) error { return tx.AuxCameras().Put(a, cams) })
	if got, err := get(a); err != nil || !reflect.DeepEqual(got, cams) {
		t.Fatalf("Get = %+v, %v\nwant %+v", got, err, cams)
	}
	replaced := []store.AuxCamera{{CameraID: 50, Paired: true}, {CameraID: 51, SerialNumber: "S51"}}
	f.update(func(tx *tx) error { return tx.AuxCameras().Put(a, replaced) })
	if got, err := get(a); err != nil || !reflect.DeepEqual(got, replaced) {
		t.Fatalf("Get after a replace = %+v, %v\nwant %+v", got, err, replaced)
	}
	f.update(func(tx *tx) error { return tx.AuxCameras().Put(a, nil) })
	if got, err := get(a); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Get of a list left empty = %#v, %v; want an empty list", got, err)
	}
	f.update(func(tx *tx) error {
		if err := tx.AuxCameras().Delete(a); err != nil {
			return err
		}
		return tx.AuxCameras().Delete(f.imeis[2]) // none stored
	})
	if got, err := get(a); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cameras after Delete: %v, %v; want not found", got, err)
	}

	// A device not in the inventory has none; a removed device's go with it.
	err := f.e.update(context.Background(), func(tx *tx) error { return tx.AuxCameras().Put("000000000000000", cams) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cameras of an unknown device: %v; want not found", err)
	}
	f.update(func(tx *tx) error { return tx.AuxCameras().Put(b, cams) })
	f.removeDevice(b)
	if got, err := get(b); !errors.Is(err, store.ErrNotFound) || f.count(`aux_cameras`) != 0 {
		t.Fatalf("cameras of the removed device: %v, %v", got, err)
	}
}
