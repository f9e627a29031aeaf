package cloudapi

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

func TestGeofencesReplaceAndPush(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	path := devPath(e.dev.IMEI, "/geofences")
	r := e.do("GET", path, e.partnerToken, nil).want(200)
	if len(r.list("data")) != 0 {
		t.Fatalf("initial %s", r.raw)
	}
	version := func() int64 {
		var v int64
		e.db.View(t.Context(), func(tx *store.Tx) error { eff, err := tx.EffectiveSettings(e.dev.IMEI); v = eff.Version; return err })
		return v
	}
	before := version()
	fences := []map[string]any{
		{"id": 1, "name": "Depot", "lat": 32.0, "lon": 34.8, "radius": 500},
		{"id": 2, "name": "Port", "lat": 32.8, "lon": 35.0, "radius": 1200},
	}
	e.do("PUT", path, e.partnerToken, fences).want(200)
	if version() != before+1 {
		t.Fatal("the configuration version did not go up")
	}
	if len(e.cmd.pushed) != 1 || e.cmd.pushed[0] != e.dev.IMEI {
		t.Fatalf("pushed %v", e.cmd.pushed)
	}
	r = e.do("GET", path, e.partnerToken, nil).want(200)
	if len(r.list("data")) != 2 || r.str("data.1.name") != "Port" || r.num("data.1.radius") != 1200 {
		t.Fatalf("after PUT %s", r.raw)
	}
	// PUT replaces: left-out geofences go.
	e.do("PUT", path, e.partnerToken, fences[1:]).want(200)
	if r := e.do("GET", path, e.partnerToken, nil).want(200); len(r.list("data")) != 1 || r.num("data.0.id") != 2 {
		t.Fatalf("after replace %s", r.raw)
	}
	bad := []struct {
		body  any
		field string
	}{
		{[]map[string]any{{"id": 1, "name": "x", "lat": 32.0, "lon": 34.8}}, "[0].radius"},
		{[]map[string]any{{"id": 1, "name": "x", "lat": 95.0, "lon": 34.8, "radius": 5}}, "[0].lat"},
		{[]map[string]any{fences[0], fences[0]}, "[1].id"},
		{[]map[string]any{{"id": 1, "name": "x", "lat": 1, "lon": 1, "radius": 5, "shape": "square"}}, "shape"},
		{map[string]any{"id": 1}, "array"},
	}
	for _, b := range bad {
		e.do("PUT", path, e.partnerToken, b.body).wantError(400, nameBadRequest, b.field)
	}
	many := make([]map[string]any, 100)
	for i := range many {
		many[i] = map[string]any{"id": i + 1, "name": "g", "lat": 1, "lon": 1, "radius": 5}
	}
	e.do("PUT", path, e.partnerToken, many).wantError(400, nameBadRequest, "99")
	viewer := e.orgUser(e.org.ID, "v@example.com", store.AccessViewer)
	e.do("PUT", path, viewer, fences).wantError(403, nameForbidden)
	e.do("GET", path, viewer, nil).want(200)
}

func TestGeofenceEventsThroughDeviceHooks(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	e.do("PUT", devPath(e.dev.IMEI, "/geofences"), e.partnerToken,
		[]map[string]any{{"id": 5, "name": "Depot", "lat": 32.0, "lon": 34.8, "radius": 500}}).want(200)
	fixes := func(points ...store.GPSPoint) {
		err := e.db.Update(t.Context(), store.Actor{Source: "device"}, func(tx *store.Tx) error {
			_, err := broker.IngestGPS(tx, e.dev, points)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	in := store.GPSPoint{Lat: 32.0, Lon: 34.8, Speed: 20}
	out := store.GPSPoint{Lat: 32.03, Lon: 34.8, Speed: 20}
	at := func(f store.GPSPoint, d time.Duration) store.GPSPoint { f.Time = evT0.Add(d); return f }
	entered := func(id string, d time.Duration) protocol.Event {
		return protocol.Event{ID: id, Type: "geoFence", Time: evTime(d), GeoFenceID: 5, GeoFencePath: "entered", Lat: 32, Lon: 34.8}
	}
	// The trip starts inside: the device's entered is dropped.
	fixes(at(in, 0), at(in, time.Minute))
	if id := e.report(e.dev, entered("start-inside", time.Minute)); id != 0 {
		t.Fatal("entered at the start of a trip inside was created")
	}
	// It leaves (exited) and comes back in (entered).
	fixes(at(out, 10*time.Minute), at(out, 20*time.Minute))
	exited := e.report(e.dev, protocol.Event{ID: "exit", Type: "geoFence", Time: evTime(10 * time.Minute), GeoFenceID: 5, GeoFencePath: "exited"})
	fixes(at(in, 30*time.Minute))
	back := e.report(e.dev, entered("back", 30*time.Minute))
	if exited == 0 || back == 0 {
		t.Fatalf("exited %d entered %d", exited, back)
	}
	r := e.do("GET", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", back)), e.partnerToken, nil).want(200)
	if r.num("data.geoFenceId") != 5 || r.str("data.eventType") != "geoFence" {
		t.Fatalf("geofence event %s", r.raw)
	}
	msgs := e.messages(store.MessageEvent)
	if ev := msgs[len(msgs)-1].Event; ev == nil || ev.Type != store.EventGeoFence || ev.GeoFence == nil ||
		*ev.GeoFence != (store.GeoFenceFact{ID: 5, Name: "Depot", Path: store.GeofenceEntered}) {
		t.Fatalf("event message fact %+v", ev)
	}
}

func TestSpeedLimitFromGPS(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		ds, _ := tx.DeviceSettings(e.dev.IMEI)
		ev := store.DefaultEventConfig()
		ev.SpeedLimitKmh = 100
		ds.Events = &ev
		return tx.PutDeviceSettings(ds, "test.events")
	})
	if err != nil {
		t.Fatal(err)
	}
	var points []store.GPSPoint
	for i, v := range []float64{80, 105, 120, 90, 101} {
		points = append(points, store.GPSPoint{Time: evT0.Add(time.Duration(i) * time.Second), Lat: 32, Lon: 34.8, Speed: v})
	}
	err = e.db.Update(t.Context(), store.Actor{}, func(tx *store.Tx) error {
		_, err := broker.IngestGPS(tx, e.dev, points)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", orgEventsPath(e.org.ID), e.partnerToken, map[string]any{"start": isoTime(evT0), "end": isoTime(evT0.Add(time.Minute)),
		"eventTypes": []string{"speedLimit"}}).want(200)
	if r.num("metadata.count") != 2 || r.num("data.0.speed") != 105 || r.num("data.1.speed") != 101 {
		t.Fatalf("speedLimit events %s", r.raw)
	}
	if ev := e.messages(store.MessageEvent)[0].Event; ev == nil || ev.Type != store.EventSpeedLimit {
		t.Fatalf("event message fact %+v, want a speedLimit event", ev)
	}
}
