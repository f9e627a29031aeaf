package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestQueuedCommands queues commands of two devices, one id twice: each
// queue lists in the order queued, lookups and deletes by id take the
// oldest with that id, the arguments come back byte for byte, a device not
// in the inventory has no queue and a removed device's goes with it.
func TestQueuedCommands(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a, b := f.imeis[0], f.imeis[1]
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	cmds := []store.QueuedCommand{
		{ID: "old", IMEI: a, Name: "reboot", Args: json.RawMessage(`{"delay":5}`), QueuedAt: at},
		{ID: "x", IMEI: b, Name: "format", QueuedAt: at},
		{ID: "new", IMEI: a, Name: "format", QueuedAt: at.Add(time.Second)},
		{ID: "old", IMEI: a, Name: "privacyMode", Args: json.RawMessage(`{"mode": "on"}`), QueuedAt: at.Add(2 * time.Second)},
	}
	f.update(func(tx *tx) error {
		for i := range cmds {
			if err := tx.QueuedCommands().Add(&cmds[i]); err != nil {
				return err
			}
		}
		return nil
	})
	list := func(imei string) []store.QueuedCommand {
		t.Helper()
		var q []store.QueuedCommand
		f.view(func(tx *tx) (err error) { q, err = tx.QueuedCommands().List(imei); return err })
		return q
	}
	equal := func(a, b store.QueuedCommand) bool {
		return a.ID == b.ID && a.IMEI == b.IMEI && a.Name == b.Name && string(a.Args) == string(b.Args) && a.QueuedAt.Equal(b.QueuedAt)
	}
	if got, want := list(a), []store.QueuedCommand{cmds[0], cmds[2], cmds[3]}; !slices.EqualFunc(got, want, equal) {
		t.Fatalf("queue of a = %+v\nwant %+v", got, want)
	}
	if got := list(b); len(got) != 1 || !equal(got[0], cmds[1]) || got[0].Args != nil {
		t.Fatalf("queue of b = %+v", got)
	}
	if got := list(f.imeis[2]); len(got) != 0 {
		t.Fatalf("queue of a device without commands = %+v", got)
	}
	f.view(func(tx *tx) error {
		if c, err := tx.QueuedCommands().Get(a, "old"); err != nil || !equal(*c, cmds[0]) {
			t.Errorf("Get(old) = %+v, %v; want the oldest", c, err)
		}
		if _, err := tx.QueuedCommands().Get(a, "x"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get of another device's command: %v; want not found", err)
		}
		return nil
	})
	f.update(func(tx *tx) error {
		if ok, err := tx.QueuedCommands().Delete(a, "old"); !ok || err != nil {
			t.Errorf("Delete(old) = %v, %v; want true", ok, err)
		}
		if ok, err := tx.QueuedCommands().Delete(a, "none"); ok || err != nil {
			t.Errorf("Delete(none) = %v, %v; want false", ok, err)
		}
		return nil
	})
	if got, want := list(a), []store.QueuedCommand{cmds[2], cmds[3]}; !slices.EqualFunc(got, want, equal) {
		t.Fatalf("queue after deleting the oldest old = %+v\nwant %+v", got, want)
	}
	f.view(func(tx *tx) error {
		if c, err := tx.QueuedCommands().Get(a, "old"); err != nil || !equal(*c, cmds[3]) {
			t.Errorf("Get(old) after the delete = %+v, %v; want the later one", c, err)
		}
		return nil
	})
	err := f.e.update(context.Background(), func(tx *tx) error {
		return tx.QueuedCommands().Add(&store.QueuedCommand{ID: "1", IMEI: "000000000000000", Name: "x", QueuedAt: at})
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("command of an unknown device: %v; want not found", err)
	}
	f.removeDevice(a)
	if got := list(a); len(got) != 0 {
		t.Fatalf("queue of the removed device = %+v", got)
	}
}
