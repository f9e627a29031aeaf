package broker

import (
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// TestGPSOffByPrivacy: while the privacy settings or privacy mode turn GPS
// off, a GPS batch is acknowledged (0x00, so the device does not send it
// again) and nothing of it is stored or sent to webhooks, and an event is
// stored without the location the device put in it. Privacy mode that
// keeps gpsTracking on takes GPS again.
func TestGPSOffByPrivacy(t *testing.T) {
	e := newEnv(t, nil)
	id := e.addDevice(1)
	e.setGPSWebhook("https://receiver.example.com/gps")
	d, _ := e.bootstrap(id)
	t0 := e.clock.Now()
	settle := func(change func(tx *store.Tx) error) {
		t.Helper()
		if err := e.db.Update(t.Context(), store.Actor{Source: "test"}, change); err != nil {
			t.Fatal(err)
		}
	}
	send := func(sec int) {
		t.Helper()
		batch := protocol.GPSBatch{Samples: []protocol.GPSSample{{Time: t0.Add(time.Duration(sec) * time.Second).UnixMilli(),
			Lat: 52, Lon: 4.5, Speed: 30, Accuracy: 4}}}
		if pr, err := d.publish(protocol.TopicGPS, batch); err != nil || pr.ReasonCode != 0 {
			t.Fatalf("gps at %ds: %v %+v, want it acknowledged", sec, err, pr)
		}
	}
	stored := func() int {
		t.Helper()
		var pts []store.GPSPoint
		err := e.db.View(t.Context(), func(tx *store.Tx) (err error) {
			pts, err = tx.GPS(id, t0.Add(-time.Minute), t0.Add(time.Hour), 0)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(pts)
	}

	settle(func(tx *store.Tx) error {
		ds, err := tx.DeviceSettings(id)
		if err != nil {
			return err
		}
		p := store.DefaultPrivacyConfig()
		p.GPSEnabled = false
		ds.Privacy = &p
		return tx.PutDeviceSettings(ds, "test.privacy")
	})
	send(1)
	if n := stored(); n != 0 {
		t.Fatalf("%d samples stored with privacy gpsEnabled false", n)
	}
	ev := protocol.Event{ID: "ev-1", Type: "deceleration", Time: t0.Add(time.Second).UnixMilli(), Lat: 52.1, Lon: 4.3, Alt: 3,
		Speed: 61, Accuracy: 4}
	if pr, err := d.publish(protocol.TopicEvent, ev); err != nil || pr.ReasonCode != 0 {
		t.Fatalf("event: %v %+v", err, pr)
	}

	// GPS on again, but privacy mode on with gpsTracking disabled.
	settle(func(tx *store.Tx) error {
		ds, err := tx.DeviceSettings(id)
		if err != nil {
			return err
		}
		ds.Privacy = nil
		if err := tx.PutDeviceSettings(ds, "test.privacy"); err != nil {
			return err
		}
		_, err = tx.SetPrivacyMode(id, store.PrivacyModeOn, false)
		return err
	})
	send(2)
	if n := stored(); n != 0 {
		t.Fatalf("%d samples stored in privacy mode without gpsTracking", n)
	}
	ev.ID, ev.Type = "ev-2", "button"
	settle(func(tx *store.Tx) error {
		return tx.SetPrivacyModeConfig(id, store.PrivacyModeConfig{OtherEvents: true}, false)
	})
	if pr, err := d.publish(protocol.TopicEvent, ev); err != nil || pr.ReasonCode != 0 {
		t.Fatalf("event in privacy mode: %v %+v", err, pr)
	}
	if n := len(e.messages(store.MessageGPS)); n != 0 {
		t.Fatalf("%d gps webhook messages of samples the cloud dropped", n)
	}
	var events []store.Event
	err := e.db.View(t.Context(), func(tx *store.Tx) (err error) {
		events, _, err = tx.DeviceEvents(id, t0.Add(-time.Hour), t0.Add(time.Hour), store.Page{})
		return err
	})
	if err != nil || len(events) != 3 { // the device's activation and the two reported
		t.Fatalf("events %+v %v, want 3", events, err)
	}
	for _, got := range events {
		if got.Lat != 0 || got.Lon != 0 || got.Alt != 0 || got.Accuracy != 0 {
			t.Fatalf("event %s stored with a location while GPS is off: %+v", got.DeviceEventID, got)
		}
	}

	// Privacy mode keeping gpsTracking on takes GPS again.
	settle(func(tx *store.Tx) error {
		return tx.SetPrivacyModeConfig(id, store.PrivacyModeConfig{GPSTracking: true}, false)
	})
	send(3)
	if n := stored(); n != 1 {
		t.Fatalf("%d samples stored in privacy mode with gpsTracking, want 1", n)
	}
}
