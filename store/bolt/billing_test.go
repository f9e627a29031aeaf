package bolt_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// A billing record the older version stored, JSON under the IMEI, is read
// and rewritten under the same key; a device without one starts with
// auxiliary billing disabled.
func TestDeviceBillingKeys(t *testing.T) {
	f := newDeviceFixture(t)
	imei := f.dev.IMEI
	f.view(func(tx *store.Tx) error {
		if b, err := tx.DeviceBilling(imei); err != nil || b.AuxBillingStatus != store.AuxBillingDisable || b.IMEI != imei || b.Refurbished {
			t.Errorf("billing of a device without a record %+v %v", b, err)
		}
		return nil
	})
	f.put("device_billing", []byte(imei), fmt.Appendf(nil,
		`{"imei":%q,"auxBillingStatus":"enable","auxBillingStatusUpdatedAt":"2026-03-01T00:00:00Z","refurbished":true}`, imei))
	f.view(func(tx *store.Tx) error {
		if b, err := tx.DeviceBilling(imei); err != nil || b.AuxBillingStatus != store.AuxBillingEnable || !b.Refurbished {
			t.Errorf("stored billing read as %+v %v", b, err)
		}
		return nil
	})
	if err := f.db.Update(t.Context(), store.Actor{}, func(tx *store.Tx) error {
		return tx.SetAuxBilling(imei, store.AuxBillingDisable)
	}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("aux billing of the refurbished device: %v, want conflict", err)
	}
	f.update(func(tx *store.Tx) error { return tx.SetRefurbished(imei, false) })
	var b store.DeviceBilling
	if err := json.Unmarshal(f.get("device_billing", []byte(imei)), &b); err != nil || b.Refurbished || b.AuxBillingStatus != store.AuxBillingEnable {
		t.Errorf("billing after SetRefurbished %+v %v", b, err)
	}
}
