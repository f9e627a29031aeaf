package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// TestDeviceLinkAndCredentialRows: what the schema keeps beyond the engine
// contract (the engine suite, store/enginetest, tests the records
// themselves). A device's link outlives a removal of the device that did
// not drop it (the store drops it itself, and the broker keeps links of
// devices outside the inventory); a credential's hash must be a SHA-256,
// a device not in the inventory has no credential, and a removed device's
// goes with it.
func TestDeviceLinkAndCredentialRows(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a, b := f.imeis[0], f.imeis[1]
	hash := make([]byte, 32)
	f.update(func(tx *tx) error {
		if err := tx.DeviceLinks().Put(&store.DeviceLink{IMEI: a, Presence: store.PresenceOffline}); err != nil {
			return err
		}
		return tx.DeviceCredentials().Put(&store.DeviceCredential{IMEI: b, TokenHash: hash, Generation: 1})
	})
	err := f.e.update(context.Background(), func(tx *tx) error {
		return tx.DeviceCredentials().Put(&store.DeviceCredential{IMEI: a, TokenHash: []byte("short")})
	})
	if err == nil {
		t.Error("a token hash of 5 bytes was stored")
	}
	err = f.e.update(context.Background(), func(tx *tx) error {
		return tx.DeviceCredentials().Put(&store.DeviceCredential{IMEI: "000000000000000", TokenHash: hash})
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("credential of an unknown device: %v; want not found", err)
	}
	f.removeDevice(a)
	f.removeDevice(b)
	f.view(func(tx *tx) error {
		if _, err := tx.DeviceLinks().Get(a); err != nil {
			t.Errorf("the link of a device removed by a transaction that did not drop it: %v", err)
		}
		if _, err := tx.DeviceCredentials().Get(b); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("credential of the removed device: %v; want not found", err)
		}
		return nil
	})
}
