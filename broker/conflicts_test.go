package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
)

// conflictingEngine is a real bbolt engine whose next write transactions,
// once armed, lose a transaction conflict (store.ErrTxConflict), as
// PostgreSQL aborts a serializable transaction that met another: a
// genuine conflict cannot be provoked at will.
type conflictingEngine struct {
	store.Engine
	// left is how many write transactions still lose; below 0 none does.
	left atomic.Int64
	lost atomic.Int64
	// err, when set before left, is the error they fail with instead.
	err error
}

func (e *conflictingEngine) Update(ctx context.Context, fn func(store.Records) error) error {
	if e.left.Add(-1) >= 0 {
		e.lost.Add(1)
		if e.err != nil {
			return e.err
		}
		return fmt.Errorf("%w: could not serialize access (simulated)", store.ErrTxConflict)
	}
	return e.Engine.Update(ctx, fn)
}

// newConflictEnv starts a broker over a conflictingEngine on bbolt, not
// yet armed.
func newConflictEnv(t *testing.T) (*env, *conflictingEngine) {
	t.Helper()
	return newConflictEnvOver(t, func() (store.Engine, error) {
		return boltstore.OpenEngine(filepath.Join(t.TempDir(), "fleetcam.db"), time.Second)
	})
}

// newConflictEnvOver starts a broker over a conflictingEngine on the
// engine open returns, not yet armed.
func newConflictEnvOver(t *testing.T, open func() (store.Engine, error)) (*env, *conflictingEngine) {
	t.Helper()
	ce := &conflictingEngine{}
	ce.left.Store(-1 << 40)
	e := newEnvOn(t, nil, nil, func(now func() time.Time) *store.DB {
		eng, err := open()
		if err != nil {
			t.Fatal(err)
		}
		ce.Engine = eng
		db, err := store.New(ce, store.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
	return e, ce
}

// TestCommitConflictRetried: a device message whose commit loses a few
// transaction conflicts is committed again until it is stored; the device
// gets its PUBACK, stays connected and its next message is stored too;
// every conflict is counted.
func TestCommitConflictRetried(t *testing.T) {
	e, ce := newConflictEnv(t)
	id := e.addDevice(1)
	d, _ := e.bootstrap(id)
	ev := protocol.Event{ID: "ev-1", Type: "deceleration", Time: e.clock.Now().UnixMilli(), Lat: 52.1, Lon: 4.3, Speed: 61}

	const conflicts = 4
	ce.lost.Store(0)
	ce.left.Store(conflicts)
	pr, err := d.publish(protocol.TopicEvent, ev)
	if err != nil || pr.ReasonCode != 0 {
		t.Fatalf("publish through %d conflicts: %v %+v; want a PUBACK 0x00", conflicts, err, pr)
	}
	if n := ce.lost.Load(); n != conflicts {
		t.Fatalf("%d transactions lost a conflict; want %d", n, conflicts)
	}
	if n := e.metric("fleetcam_store_commit_conflicts_total", map[string]string{"result": "retried"}); n != conflicts {
		t.Fatalf("fleetcam_store_commit_conflicts_total{result=retried} = %v; want %d", n, conflicts)
	}
	if n := e.metric("fleetcam_store_commit_conflicts_total", map[string]string{"result": "expired"}); n != 0 {
		t.Fatalf("fleetcam_store_commit_conflicts_total{result=expired} = %v; want 0", n)
	}
	ev2 := ev
	ev2.ID = "ev-2"
	if pr, err := d.publish(protocol.TopicEvent, ev2); err != nil || pr.ReasonCode != 0 {
		t.Fatalf("the next publish on the same connection: %v %+v", err, pr)
	}
	if !e.srv.Online(id) {
		t.Fatal("the device was disconnected")
	}
	var stored []string
	err = e.db.View(t.Context(), func(tx *store.Tx) error {
		events, _, err := tx.DeviceEvents(id, e.clock.Now().Add(-time.Hour), e.clock.Now().Add(time.Hour), store.Page{})
		for _, x := range events {
			if x.DeviceEventID != "" {
				stored = append(stored, x.DeviceEventID)
			}
		}
		return err
	})
	if err != nil || len(stored) != 2 {
		t.Fatalf("stored device events %v, %v; want ev-1 and ev-2", stored, err)
	}
}

// TestCommitConflictOutlastingTheWait: a message whose commit keeps
// losing conflicts is tried again no longer than the device's keepalive
// interval: then it is not acknowledged and the device is disconnected
// (0x83), to send it again on its next connection.
func TestCommitConflictOutlastingTheWait(t *testing.T) {
	e, ce := newConflictEnv(t)
	id := e.addDevice(1)
	d, token := e.bootstrap(id)
	d.close()
	rc, ack := e.rawConnectWith(5, id, id, token, func(pk *packets.Packet) { pk.Connect.Keepalive = 1 })
	if ack.ReasonCode != 0 {
		t.Fatalf("connack 0x%02X", ack.ReasonCode)
	}
	ce.left.Store(1 << 40)
	ev := protocol.Event{ID: "ev-1", Type: "deceleration", Time: e.clock.Now().UnixMilli(), Lat: 52.1, Lon: 4.3, Speed: 61}
	start := time.Now()
	rc.Write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, PacketID: 1,
		TopicName: protocol.Topic(id, protocol.TopicEvent), Payload: pahoPublish("", ev).Payload})
	for {
		pk, err := rc.ReadWithin(2 * time.Minute)
		if err != nil {
			t.Fatalf("no DISCONNECT: %v", err)
		}
		if pk.FixedHeader.Type == packets.Puback {
			t.Fatalf("PUBACK 0x%02X for a message never committed", pk.ReasonCode)
		}
		if pk.FixedHeader.Type == packets.Disconnect {
			if pk.ReasonCode != 0x83 {
				t.Fatalf("DISCONNECT 0x%02X; want 0x83", pk.ReasonCode)
			}
			break
		}
	}
	ce.left.Store(-1 << 40)
	t.Logf("disconnected %s after the first conflict (keepalive 1s)", time.Since(start).Round(time.Millisecond))
	if n := e.metric("fleetcam_store_commit_conflicts_total", map[string]string{"result": "expired"}); n != 1 {
		t.Fatalf("fleetcam_store_commit_conflicts_total{result=expired} = %v; want 1", n)
	}
	if n := e.metric("fleetcam_store_commit_conflicts_total", map[string]string{"result": "retried"}); n < 1 {
		t.Fatalf("fleetcam_store_commit_conflicts_total{result=retried} = %v; want the tries before", n)
	}
}

// TestConnectionRecordsThroughConflicts: the records of a connection, its
// start and its end, are committed again after transaction conflicts, so
// that the store says what the connection is.
func TestConnectionRecordsThroughConflicts(t *testing.T) {
	e, ce := newConflictEnv(t)
	id := e.addDevice(1)
	d, token := e.bootstrap(id)
	d.close()
	waitFor(t, "the device offline", func() bool { return e.link(id).Presence == store.PresenceOffline })

	ce.left.Store(3)
	d, err := e.connect(id, token, connectOpts{clean: true, subscribe: true})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the connection recorded online through the conflicts", func() bool {
		return e.link(id).Presence == store.PresenceOnline
	})
	ce.left.Store(3)
	d.close()
	waitFor(t, "the end of the connection recorded through the conflicts", func() bool {
		return e.link(id).Presence == store.PresenceOffline
	})
	if n := e.metric("fleetcam_store_commit_conflicts_total", map[string]string{"result": "retried"}); n != 6 {
		t.Fatalf("fleetcam_store_commit_conflicts_total{result=retried} = %v; want 6", n)
	}
}
