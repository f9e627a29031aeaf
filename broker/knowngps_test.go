package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/pgtest"
	"github.com/fleetcam/fleetcam/store/postgres"
)

// TestLinkKnowsItsDevicesLatestGPS runs on PostgreSQL, whose group
// commit reads each device's latest GPS sample unless the device's
// connection knows it. A connection learns the latest stored sample from
// every job it commits: one stored before the device connected, then
// those its messages store, a resent one not among them; a commit that
// fails leaves it knowing none, and the next one learns it again.
func TestLinkKnowsItsDevicesLatestGPS(t *testing.T) {
	e, ce := newConflictEnvOver(t, func() (store.Engine, error) {
		return postgres.OpenEngine(context.Background(), pgtest.Database(t, ""), postgres.Options{})
	})
	id := e.addDevice(1)
	now := e.clock.Now()
	sample := func(sec int, lat float64) protocol.GPSSample {
		return protocol.GPSSample{Time: now.Add(time.Duration(sec) * time.Second).UnixMilli(), Lat: lat, Lon: 4.5, Speed: 30, Accuracy: 4}
	}
	err := e.db.Update(t.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		dev, err := tx.Device(id)
		if err != nil {
			return err
		}
		_, err = tx.AddGPS(dev, []store.GPSPoint{{Time: now.Add(-10 * time.Second), Lat: 40, Lon: 4.5}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := e.bootstrap(id)
	l := e.srv.links.byIMEI(id)
	if l == nil {
		t.Fatal("no link for the connected device")
	}
	knows := func(when string, lat float64, sec int) {
		t.Helper()
		k := l.knownGPS()
		if k == nil || k.Point.Lat != lat || !k.Point.Time.Equal(now.Add(time.Duration(sec)*time.Second)) {
			t.Fatalf("%s: the connection knows %+v; want the sample of lat %v at %+ds", when, k, lat, sec)
		}
	}
	knows("connected", 40, -10)
	for _, b := range []struct {
		samples []protocol.GPSSample
		lat     float64
		sec     int
	}{
		{[]protocol.GPSSample{sample(1, 41), sample(2, 42)}, 42, 2},
		{[]protocol.GPSSample{sample(1, 77), sample(3, 43)}, 43, 3},
	} {
		if pr, err := d.publish(protocol.TopicGPS, protocol.GPSBatch{Samples: b.samples}); err != nil || pr.ReasonCode != 0 {
			t.Fatalf("publish: %v %+v", err, pr)
		}
		knows("after a batch", b.lat, b.sec)
	}
	var lats []float64
	err = e.db.View(t.Context(), func(tx *store.Tx) error {
		got, err := tx.GPS(id, now.Add(-time.Minute), now.Add(time.Minute), 0)
		for _, p := range got {
			lats = append(lats, p.Lat)
		}
		return err
	})
	if err != nil || len(lats) != 4 || lats[0] != 40 || lats[1] != 41 || lats[2] != 42 || lats[3] != 43 {
		t.Fatalf("stored samples of lat %v (%v); want 40, 41, 42, 43", lats, err)
	}

	ce.err = errors.New("store unavailable (simulated)")
	ce.left.Store(1)
	if err := e.srv.commitLinked(l, func(*store.Tx) error { return nil }); err == nil {
		t.Fatal("a commit of the armed engine succeeded")
	}
	if k := l.knownGPS(); k != nil {
		t.Fatalf("after a failed commit the connection knows %+v; want none", k)
	}
	if err := e.srv.commitLinked(l, func(*store.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	knows("after the next commit", 43, 3)
}
