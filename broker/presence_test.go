package broker

import (
	"errors"
	"testing"

	"github.com/fleetcam/fleetcam/store"
	"github.com/prometheus/client_golang/prometheus"
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

// TestPresenceRepairedOnceTheStoreIsBack: a connection whose online record
// could not be committed when it began, and one whose offline record could
// not be committed when it ended (the store unreachable), are recorded by
// the broker itself once the store can be written again.
func TestPresenceRepairedOnceTheStoreIsBack(t *testing.T) {
	e, ce := newConflictEnv(t)
	comes, goes := e.addDevice(1), e.addDevice(2)
	d, token := e.bootstrap(comes)
	d.close()
	d, _ = e.bootstrap(goes)
	waitFor(t, "the devices recorded", func() bool {
		return e.link(comes).Presence == store.PresenceOffline && e.link(goes).Presence == store.PresenceOnline
	})

	ce.err = store.Unavailable(errors.New("connection refused (simulated)"))
	ce.lost.Store(0)
	ce.left.Store(1 << 40)
	if _, err := e.connect(comes, token, connectOpts{clean: true, subscribe: true}); err != nil {
		t.Fatal(err)
	}
	d.close()
	waitFor(t, "both records to fail", func() bool {
		return len(e.srv.unrecorded.list()) == 1 && len(e.srv.unsaved.list()) == 1 && !e.srv.Online(goes)
	})
	ce.left.Store(-1 << 40)
	waitFor(t, "both records written once the store is back", func() bool {
		return e.link(comes).Presence == store.PresenceOnline && e.link(goes).Presence == store.PresenceOffline
	})
	waitFor(t, "nothing left to write", func() bool {
		return len(e.srv.unrecorded.list()) == 0 && len(e.srv.unsaved.list()) == 0
	})
}

// TestShutdownRecordsDevicesOffline: closing the broker ends its devices'
// connections, and each device's end is recorded with one deviceStatus
// message, offline from online, before Close returns; the next start
// finds nothing left to mark offline and emits nothing more.
func TestShutdownRecordsDevicesOffline(t *testing.T) {
	e := newEnv(t, nil)
	devs := []string{e.addDevice(1), e.addDevice(2)}
	for _, imei := range devs {
		e.bootstrap(imei)
	}
	waitFor(t, "both devices online", func() bool {
		return e.link(devs[0]).Presence == store.PresenceOnline && e.link(devs[1]).Presence == store.PresenceOnline
	})
	offline := func() map[string]int {
		t.Helper()
		n := map[string]int{}
		err := e.db.View(t.Context(), func(tx *store.Tx) error {
			msgs, err := tx.MessagesAfter(0, 0)
			for _, m := range msgs {
				if m.SubType == store.SystemDeviceStatus && m.Presence != nil && m.Presence.Status == store.PresenceOffline {
					if m.Presence.Previous != store.PresenceOnline || m.OrganizationID != e.org.ID {
						t.Errorf("offline message %+v, presence %+v", m, m.Presence)
					}
					n[m.IMEI]++
				}
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	for _, imei := range devs {
		if dl := e.link(imei); dl.Presence != store.PresenceOffline {
			t.Errorf("after Close device %s reads %s", imei, dl.Presence)
		}
	}
	if got := offline(); got[devs[0]] != 1 || got[devs[1]] != 1 || len(got) != 2 {
		t.Fatalf("offline messages per device after Close: %v, want one each", got)
	}

	srv, err := New(e.cfg, e.db, nil, prometheus.NewRegistry(), e.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if got := offline(); got[devs[0]] != 1 || got[devs[1]] != 1 || len(got) != 2 {
		t.Fatalf("offline messages per device after a restart: %v, want still one each", got)
	}
}
