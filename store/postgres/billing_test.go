package postgres

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestDeviceBillings stores, replaces and deletes billing records; a
// device not in the inventory has none, and a removed device's goes with
// it.
func TestDeviceBillings(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a, b := f.imeis[0], f.imeis[1]
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	get := func(imei string) (*store.DeviceBilling, error) {
		t.Helper()
		var got *store.DeviceBilling
		err := f.e.view(context.Background(), func(tx *tx) (err error) { got, err = tx.DeviceBillings().Get(imei); return err })
		return got, err
	}
	if got, err := get(a); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("billing never stored: %+v, %v; want not found", got, err)
	}
	first := &store.DeviceBilling{IMEI: a, AuxBillingStatus: store.AuxBillingDisable, SubscriptionUpdatedAt: at}
	second := &store.DeviceBilling{IMEI: a, AuxBillingStatus: store.AuxBillingEnable, AuxBillingUpdatedAt: at.Add(time.Hour), Refurbished: true}
	for _, want := range []*store.DeviceBilling{first, second} {
		f.update(func(tx *tx) error { return tx.DeviceBillings().Put(want) })
		if got, err := get(a); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Get = %+v, %v; want %+v", got, err, want)
		}
	}
	f.update(func(tx *tx) error {
		if err := tx.DeviceBillings().Delete(a); err != nil {
			return err
		}
		return tx.DeviceBillings().Delete(f.imeis[2])
	})
	if got, err := get(a); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("billing after Delete: %+v, %v", got, err)
	}
	err := f.e.update(context.Background(), func(tx *tx) error {
		return tx.DeviceBillings().Put(&store.DeviceBilling{IMEI: "000000000000000", AuxBillingStatus: store.AuxBillingDisable})
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("billing of an unknown device: %v; want not found", err)
	}
	f.update(func(tx *tx) error {
		return tx.DeviceBillings().Put(&store.DeviceBilling{IMEI: b, AuxBillingStatus: store.AuxBillingEnable})
	})
	f.removeDevice(b)
	if got, err := get(b); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("billing of the removed device: %+v, %v", got, err)
	}
}
