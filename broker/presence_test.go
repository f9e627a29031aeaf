package broker

import (
	"errors"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// TestRestorePresence: what the store says of this broker's connections
// after it stopped saying it (another node of a cluster took this one for
// dead and marked its devices offline; a device left while its offline
// record could not be committed) is made true again by RestorePresence:
// the device still connected reads online on its connection, the one
// that left reads offline.
func TestRestorePresence(t *testing.T) {
	e, ce := newConflictEnv(t)
	stays, leaves := e.addDevice(1), e.addDevice(2)
	e.bootstrap(stays)
	d, _ := e.bootstrap(leaves)
	conn := e.link(stays).ConnectionID
	waitFor(t, "both devices online", func() bool {
		return e.link(stays).Presence == store.PresenceOnline && e.link(leaves).Presence == store.PresenceOnline
	})

	// Marked offline by someone else while still connected.
	err := e.db.Update(t.Context(), store.Actor{Source: "cluster"}, func(tx *store.Tx) error {
		_, err := tx.MarkOffline(tx.Now(), conn)
		return err
	})
	if err != nil || e.link(stays).Presence != store.PresenceOffline {
		t.Fatalf("mark offline: %v, %+v", err, e.link(stays))
	}
	// Leaves while the store cannot be reached.
	ce.err = store.Unavailable(errors.New("connection refused (simulated)"))
	ce.lost.Store(0)
	ce.left.Store(1 << 40)
	d.close()
	waitFor(t, "the broker to see the device leave", func() bool { return !e.srv.Online(leaves) })
	waitFor(t, "the offline record to fail", func() bool { return ce.lost.Load() > 0 && len(e.srv.unsaved.list()) == 1 })
	ce.left.Store(-1 << 40)
	if e.link(leaves).Presence != store.PresenceOnline {
		t.Fatalf("the store says %+v of the device that left; want it still online, its offline record lost", e.link(leaves))
	}

	n, err := e.srv.RestorePresence(t.Context())
	if err != nil || n != 1 {
		t.Fatalf("RestorePresence: %d, %v; want 1 device restored", n, err)
	}
	if dl := e.link(stays); dl.Presence != store.PresenceOnline || dl.ConnectionID != conn {
		t.Fatalf("the connected device reads %+v; want online on %s", dl, conn)
	}
	if dl := e.link(leaves); dl.Presence != store.PresenceOffline || dl.ConnectionID != "" {
		t.Fatalf("the device that left reads %+v; want offline", dl)
	}
	if n := len(e.srv.unsaved.list()); n != 0 {
		t.Fatalf("%d offline records still unsaved", n)
	}
	if n, err := e.srv.RestorePresence(t.Context()); err != nil || n != 0 {
		t.Fatalf("RestorePresence again: %d, %v; want nothing to restore", n, err)
	}
}
