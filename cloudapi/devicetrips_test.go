package cloudapi

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// driveFixture is one device's drive: a 10-minute trip northwards with GPS
// every minute (the fastest at 90 km/h) and two harsh-driving events, then
// a 2-minute trip without GPS. It returns the GPS track.
func driveFixture(e *fleetEnv, imei string, t0 time.Time) []store.GPSPoint {
	e.t.Helper()
	at := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	var track []store.GPSPoint
	for i := 0; i <= 10; i++ {
		speed := 40.0
		if i == 5 {
			speed = 90
		}
		track = append(track, store.GPSPoint{Time: t0.Add(time.Duration(i+1) * time.Minute), Lat: 48 + 0.01*float64(i),
			Lon: 11, Speed: speed, Accuracy: 3})
	}
	e.fleetUpdate(func(tx *store.Tx) error {
		dev, err := tx.Device(imei)
		if err != nil {
			return err
		}
		// speedLimit events count once the configuration sets a limit: 120
		// km/h, above the drive's fastest fix, so the cloud adds none of its own.
		ds, err := tx.DeviceSettings(imei)
		if err != nil {
			return err
		}
		ev := store.DefaultEventConfig()
		ev.SpeedLimitKmh = 120
		ds.Events = &ev
		if err := tx.PutDeviceSettings(ds, "test.events"); err != nil {
			return err
		}
		for _, ev := range []protocol.Event{
			{ID: "on1", Type: "accOn", Time: at(time.Minute)},
			{ID: "acc", Type: "acceleration", Time: at(5 * time.Minute)},
			{ID: "spd", Type: "speedLimit", Time: at(6 * time.Minute)},
			{ID: "btn", Type: "button", Time: at(7 * time.Minute)},
			{ID: "off1", Type: "accOff", Time: at(11 * time.Minute)},
			{ID: "on2", Type: "accOn", Time: at(20 * time.Minute)},
			{ID: "off2", Type: "accOff", Time: at(22 * time.Minute)},
		} {
			if err := broker.IngestEvent(tx, dev, ev); err != nil {
				return err
			}
		}
		_, err = tx.AddGPS(dev, track)
		return err
	})
	return track
}

func TestDeviceTrips(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	t0 := e.clock.Now()
	track := driveFixture(e, e.devices[0], t0)
	e.clock.Advance(30 * time.Minute)
	window := "?start=" + isoTime(t0) + "&end=" + isoTime(t0.Add(time.Hour))
	path := devPath(e.devices[0], "/trips"+window)

	r := e.do("GET", path, e.viewerToken, nil).want(http.StatusOK)
	if n := len(r.list("data")); n != 2 {
		t.Fatalf("%d trips, want 2: %s", n, r.raw)
	}
	miles := store.TrackLength(trackPoints(track)) / metersPerMile
	if r.num("data.0.duration") != 600 || math.Abs(r.num("data.0.distance")-miles) > 0.001 || r.num("data.0.maxSpeed") != 25 ||
		r.num("data.0.eventsCount") != 3 || r.num("data.0.start.lat") != 48 || r.num("data.0.end.lat") != 48.1 ||
		r.num("data.0.start.time") != float64(track[0].Time.Unix()) || r.num("data.0.start.speed") != 40/3.6 {
		t.Fatalf("first trip (%.3f miles): %s", miles, r.raw)
	}
	if r.num("data.1.duration") != 120 || r.num("data.1.distance") != 0 || r.num("data.1.eventsCount") != 0 ||
		r.num("data.1.start.time") != float64(t0.Add(20*time.Minute).Unix()) || r.num("data.1.start.lat") != 0 {
		t.Fatalf("trip without GPS: %s", r.raw)
	}
	if n := len(e.do("GET", path+"&minimumDistance=1", e.adminToken, nil).want(http.StatusOK).list("data")); n != 1 {
		t.Fatalf("%d trips of a mile or more, want 1", n)
	}
	later := "?start=" + isoTime(t0.Add(15*time.Minute)) + "&end=" + isoTime(t0.Add(time.Hour))
	if n := len(e.do("GET", devPath(e.devices[0], "/trips"+later), e.partnerToken, nil).want(http.StatusOK).list("data")); n != 1 {
		t.Fatalf("%d trips after the first, want 1", n)
	}

	e.do("GET", devPath(e.devices[0], "/trips?end="+isoTime(t0)), e.adminToken, nil).wantError(400, nameBadRequest, "start")
	e.do("GET", devPath(e.devices[0], "/trips?start="+isoTime(t0)+"&end="+isoTime(t0.Add(40*24*time.Hour))), e.adminToken, nil).
		wantError(400, nameBadRequest, "end", "31 days")
	e.do("GET", path+"&minimumDistance=-1", e.adminToken, nil).wantError(400, nameBadRequest, "minimumDistance")
	e.do("GET", path, e.rivalToken, nil).wantError(404, nameNotFound)
	e.do("GET", devPath(e.devices[3], "/trips"+window), e.adminToken, nil).wantError(404, nameNotFound)
}

func trackPoints(pts []store.GPSPoint) []store.TrackPoint {
	out := make([]store.TrackPoint, len(pts))
	for i, p := range pts {
		out[i] = store.TrackPoint{Time: p.Time, Lat: p.Lat, Lon: p.Lon}
	}
	return out
}

func TestDeviceScore(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	t0 := e.clock.Now()
	track := driveFixture(e, e.devices[0], t0)
	e.clock.Advance(30 * time.Minute)
	window := "?start=" + isoTime(t0) + "&end=" + isoTime(t0.Add(time.Hour))

	// Two harsh-driving events over about 11 km: under the 100 km floor
	// the score is the count. The button press and power events do not count.
	r := e.do("GET", devPath(e.devices[0], "/score"+window), e.viewerToken, nil).want(http.StatusOK)
	km := store.TrackLength(trackPoints(track)) / 1000
	if r.num("data.score") != 2 || r.num("data.events") != 2 || math.Abs(r.num("data.distanceKm")-km) > 0.001 {
		t.Fatalf("score over %.3f km: %s", km, r.raw)
	}
	// A window of the quiet part scores 0.
	quiet := "?start=" + isoTime(t0.Add(8*time.Minute)) + "&end=" + isoTime(t0.Add(time.Hour))
	if r := e.do("GET", devPath(e.devices[0], "/score"+quiet), e.adminToken, nil).want(http.StatusOK); r.num("data.score") != 0 {
		t.Fatalf("quiet window: %s", r.raw)
	}
	e.do("GET", devPath(e.devices[0], "/score?start=yesterday&end="+isoTime(t0)), e.adminToken, nil).wantError(400, nameBadRequest, "start")
	e.do("GET", devPath(e.devices[0], "/score?start="+isoTime(t0)+"&end="+isoTime(t0.Add(-time.Hour))), e.adminToken, nil).
		wantError(400, nameBadRequest, "end")
	e.do("GET", devPath(e.devices[0], "/score"+window), e.org2Token, nil).wantError(404, nameNotFound)
	e.do("GET", devPath(e.rivalDevices[0], "/score"+window), e.partnerToken, nil).wantError(404, nameNotFound)
}

func TestSafetyScore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		events int
		km     float64
		want   float64
	}{
		{0, 500, 0},
		{3, 0, 3},      // no distance: the count
		{3, 50, 3},     // under the floor: the count
		{3, 300, 1},    // per 100 km
		{1, 300, 0.33}, // rounded to hundredths
		{10, 1000, 1},
	}
	for _, tt := range tests {
		if got := safetyScore(tt.events, tt.km); got != tt.want {
			t.Errorf("safetyScore(%d, %v) = %v, want %v", tt.events, tt.km, got, tt.want)
		}
	}
}
