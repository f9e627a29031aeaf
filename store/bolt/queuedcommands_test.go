package bolt_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
)

// A command the older version queued (under imei, 0, the bucket's sequence)
// stays first in the queue: new commands take the next numbers of the same
// sequence. Lookups and deletes by id take the oldest command with that id.
func TestQueuedCommandKeys(t *testing.T) {
	f := newDeviceFixture(t)
	imei := f.dev.IMEI
	err := f.bolt.Update(func(btx *bbolt.Tx) error {
		b := btx.Bucket([]byte("device_commands"))
		if err := b.SetSequence(1); err != nil {
			return err
		}
		return b.Put(deviceStateKey(imei, 1), fmt.Appendf(nil,
			`{"id":"old","imei":%q,"name":"reboot","args":{"delay":5},"queuedAt":"2026-03-10T09:00:00Z"}`, imei))
	})
	if err != nil {
		t.Fatal(err)
	}
	f.update(func(tx *store.Tx) error {
		for _, id := range []string{"new", "old"} {
			if err := tx.QueueCommand(&store.QueuedCommand{ID: id, IMEI: imei, Name: "format"}); err != nil {
				return err
			}
		}
		return nil
	})
	want := [][]byte{deviceStateKey(imei, 1), deviceStateKey(imei, 2), deviceStateKey(imei, 3)}
	if got := f.keys("device_commands", []byte(imei)); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("command keys %q, want %q", got, want)
	}
	f.view(func(tx *store.Tx) error {
		cmds, err := tx.QueuedCommands(imei)
		if err != nil {
			return err
		}
		var ids []string
		for _, c := range cmds {
			ids = append(ids, c.ID+"/"+c.Name)
		}
		if want := []string{"old/reboot", "new/format", "old/format"}; !slices.Equal(ids, want) {
			t.Errorf("queue %q, want %q", ids, want)
		}
		if c, err := tx.QueuedCommand(imei, "old"); err != nil || c.Name != "reboot" || string(c.Args) != `{"delay":5}` {
			t.Errorf("oldest command old %+v %v", c, err)
		}
		if _, err := tx.QueuedCommand(imei, "none"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown command: %v, want not found", err)
		}
		return nil
	})
	f.update(func(tx *store.Tx) error {
		if ok, err := tx.DeleteQueuedCommand(imei, "old"); !ok || err != nil {
			t.Errorf("delete old: %v %v", ok, err)
		}
		return nil
	})
	want = [][]byte{deviceStateKey(imei, 2), deviceStateKey(imei, 3)}
	if got := f.keys("device_commands", []byte(imei)); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("command keys after deleting the oldest old %q, want %q", got, want)
	}
	var c store.QueuedCommand
	if err := json.Unmarshal(f.get("device_commands", deviceStateKey(imei, 3)), &c); err != nil || c.ID != "old" || c.QueuedAt.IsZero() {
		t.Errorf("stored command %+v %v", c, err)
	}
}
