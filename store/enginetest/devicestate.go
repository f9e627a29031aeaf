package enginetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// deviceStateTests are the tests of the records of a device's state.
var deviceStateTests = []test{
	{"QueuedCommands", testQueuedCommands},
}

// testQueuedCommands queues commands of two devices, one id twice: each
// queue lists in the order queued, lookups and deletes by id take the
// oldest with that id, the arguments come back byte for byte, a device not
// in the inventory has no queue and a removed device's goes with it.
func testQueuedCommands(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	s := seeder{t, e, testTime}
	a, b, c := testIMEI(1), testIMEI(2), testIMEI(3)
	for _, imei := range []string{a, b, c} {
		s.device(store.Device{IMEI: imei, OrganizationID: d.org.ID, PartnerID: d.p.ID, Ownership: 1})
	}
	at := testTime
	cmds := []store.QueuedCommand{
		{ID: "old", IMEI: a, Name: "reboot", Args: json.RawMessage(`{"delay":5}`), QueuedAt: at},
		{ID: "x", IMEI: b, Name: "format", QueuedAt: at},
		{ID: "new", IMEI: a, Name: "format", QueuedAt: at.Add(time.Second)},
		{ID: "old", IMEI: a, Name: "privacyMode", Args: json.RawMessage(`{"mode": "on"}`), QueuedAt: at.Add(2 * time.Second)},
	}
	write(t, e, func(r store.Records) error {
		for i := range cmds {
			if err := r.QueuedCommands().Add(&cmds[i]); err != nil {
				return err
			}
		}
		return nil
	})
	list := func(imei string) []store.QueuedCommand {
		t.Helper()
		var q []store.QueuedCommand
		read(t, e, func(r store.Records) (err error) { q, err = r.QueuedCommands().List(imei); return err })
		return q
	}
	equal := func(a, b store.QueuedCommand) bool {
		return a.ID == b.ID && a.IMEI == b.IMEI && a.Name == b.Name && jsonEqual(t, a.Args, b.Args) && a.QueuedAt.Equal(b.QueuedAt)
	}
	if got, want := list(a), []store.QueuedCommand{cmds[0], cmds[2], cmds[3]}; !slices.EqualFunc(got, want, equal) {
		t.Fatalf("queue of a = %+v\nwant %+v", got, want)
	}
	if got := list(b); len(got) != 1 || !equal(got[0], cmds[1]) || got[0].Args != nil {
		t.Fatalf("queue of b = %+v", got)
	}
	if got := list(c); len(got) != 0 {
		t.Fatalf("queue of a device without commands = %+v", got)
	}
	read(t, e, func(r store.Records) error {
		if got, err := r.QueuedCommands().Get(a, "old"); err != nil || !equal(*got, cmds[0]) {
			t.Errorf("Get(old) = %+v, %v; want the oldest", got, err)
		}
		_, err := r.QueuedCommands().Get(a, "x")
		wantErr(t, "Get of another device's command", err, store.ErrNotFound)
		return nil
	})
	write(t, e, func(r store.Records) error {
		if ok, err := r.QueuedCommands().Delete(a, "old"); !ok || err != nil {
			t.Errorf("Delete(old) = %v, %v; want true", ok, err)
		}
		if ok, err := r.QueuedCommands().Delete(a, "none"); ok || err != nil {
			t.Errorf("Delete(none) = %v, %v; want false", ok, err)
		}
		return nil
	})
	if got, want := list(a), []store.QueuedCommand{cmds[2], cmds[3]}; !slices.EqualFunc(got, want, equal) {
		t.Fatalf("queue after deleting the oldest old = %+v\nwant %+v", got, want)
	}
	read(t, e, func(r store.Records) error {
		if got, err := r.QueuedCommands().Get(a, "old"); err != nil || !equal(*got, cmds[3]) {
			t.Errorf("Get(old) after the delete = %+v, %v; want the later one", got, err)
		}
		return nil
	})
}
