package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestQueuedCommandArgsByteForByte: a queued command's arguments come back
// byte for byte, spacing included; a command of a device not in the
// inventory is refused, and the device's removal removes its queue with
// it (the schema's foreign key and its cascade). The engine suite, store/enginetest,
// tests the queues themselves and compares arguments as JSON, since bbolt
// keeps them compacted.
func TestQueuedCommandArgsByteForByte(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	args := json.RawMessage(`{"mode": "on",  "n" : [1, 2]}`)
	f.update(func(tx *tx) error {
		return tx.QueuedCommands().Add(&store.QueuedCommand{ID: "c", IMEI: f.imeis[0], Name: "privacyMode", Args: args,
			QueuedAt: time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)})
	})
	f.view(func(tx *tx) error {
		q, err := tx.QueuedCommands().List(f.imeis[0])
		if err != nil {
			return err
		}
		if len(q) != 1 || string(q[0].Args) != string(args) {
			t.Errorf("queue = %+v; want one command with arguments %s", q, args)
		}
		return nil
	})
	err := f.e.update(context.Background(), func(tx *tx) error {
		return tx.QueuedCommands().Add(&store.QueuedCommand{ID: "1", IMEI: "000000000000000", Name: "x", QueuedAt: time.Now()})
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("command of an unknown device: %v; want not found", err)
	}
	f.removeDevice(f.imeis[0])
	if n := f.count(`queued_commands WHERE imei = $1`, f.imeis[0]); n != 0 {
		t.Errorf("%d queued commands of the removed device left", n)
	}
}
