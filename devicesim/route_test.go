package devicesim

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestRouteInterpolation(t *testing.T) {
	// Two points 1 km apart on a meridian, 60 s apart, then back in 60 s.
	dLat := 1000 / earthRadius * 180 / math.Pi
	r, err := NewRoute("line", []Waypoint{
		{Lat: 10, Lon: 20, Ele: 100, At: 0},
		{Lat: 10 + dLat, Lon: 20, Ele: 200, At: time.Minute},
		{Lat: 10, Lon: 20, Ele: 100, At: 2 * time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		at      time.Duration
		lat     float64
		alt     float64
		speed   float64
		heading float64
	}{
		{"start", 0, 10, 100, 60, 0},
		{"quarter", 15 * time.Second, 10 + dLat/4, 125, 60, 0},
		{"half way out", 30 * time.Second, 10 + dLat/2, 150, 60, 0},
		{"turning point", time.Minute, 10 + dLat, 200, 60, 180},
		{"on the way back", 90 * time.Second, 10 + dLat/2, 150, 60, 180},
		{"next lap", 2*time.Minute + 30*time.Second, 10 + dLat/2, 150, 60, 0},
		{"before the start", -30 * time.Second, 10 + dLat/2, 150, 60, 180},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := r.At(tc.at)
			if !near(p.Lat, tc.lat, 1e-9) || !near(p.Lon, 20, 1e-9) || !near(p.Alt, tc.alt, 1e-6) {
				t.Fatalf("position %+v, want lat %v alt %v", p, tc.lat, tc.alt)
			}
			if !near(p.Speed, tc.speed, 0.01) || !near(p.Heading, tc.heading, 0.01) {
				t.Fatalf("speed %.3f heading %.3f, want %v %v", p.Speed, p.Heading, tc.speed, tc.heading)
			}
		})
	}
	if r.Duration() != 2*time.Minute || !near(r.Length(), 2000, 0.5) {
		t.Fatalf("duration %s length %.1f", r.Duration(), r.Length())
	}
}

func TestBuiltinRoutes(t *testing.T) {
	for _, name := range RouteNames() {
		r, err := BuiltinRoute(name)
		if err != nil {
			t.Fatal(err)
		}
		first, last := r.Points[0], r.Points[len(r.Points)-1]
		if distance(first.Lat, first.Lon, last.Lat, last.Lon) > 50 {
			t.Fatalf("%s does not end where it starts", name)
		}
		// Positions one second apart are never further apart than the top speed allows.
		maxSpeed := 0.0
		prev := r.At(0)
		for s := time.Second; s <= r.Duration(); s += time.Second {
			p := r.At(s)
			if m := distance(prev.Lat, prev.Lon, p.Lat, p.Lon); m > 115/3.6+0.5 {
				t.Fatalf("%s jumps %.1f m at %s", name, m, s)
			}
			maxSpeed = max(maxSpeed, p.Speed)
			prev = p
		}
		if maxSpeed < 20 {
			t.Fatalf("%s never moves faster than %.1f km/h", name, maxSpeed)
		}
	}
	if _, err := BuiltinRoute("moon"); !errors.Is(err, ErrInvalidRoute) {
		t.Fatalf("unknown route: %v", err)
	}
	if c := CityLoop(); c.Length() < 2000 || c.Length() > 8000 {
		t.Fatalf("city loop is %.0f m", c.Length())
	}
}

const gpxTimed = `<?xml version="1.0" encoding="UTF-8"?>
<gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1">
 <trk><name>t</name>
  <trkseg>
   <trkpt lat="48.0000" lon="11.0000"><ele>500</ele><time>2024-05-01T10:00:00Z</time></trkpt>
   <trkpt lat="48.0090" lon="11.0000"><ele>510</ele><time>2024-05-01T10:01:00Z</time></trkpt>
  </trkseg>
  <trkseg>
   <trkpt lat="48.0090" lon="11.0000"><ele>510</ele><time>2024-05-01T10:01:30Z</time></trkpt>
   <trkpt lat="48.0180" lon="11.0000"><ele>520</ele><time>2024-05-01T10:02:30Z</time></trkpt>
  </trkseg>
 </trk>
</gpx>`

func TestParseGPX(t *testing.T) {
	r, err := ParseGPX(strings.NewReader(gpxTimed), "timed", 50)
	if err != nil {
		t.Fatal(err)
	}
	// 4 points out, 3 back; 150 s each way.
	if len(r.Points) != 7 || r.Duration() != 300*time.Second {
		t.Fatalf("%d points over %s", len(r.Points), r.Duration())
	}
	legKmh := distance(48, 11, 48.009, 11) / 60 * 3.6
	for _, tc := range []struct {
		at    time.Duration
		lat   float64
		ele   float64
		speed float64
	}{
		{30 * time.Second, 48.0045, 505, legKmh},
		{75 * time.Second, 48.0090, 510, 0}, // the 30 s stop between segments
		{120 * time.Second, 48.0135, 515, legKmh},
		{150 * time.Second, 48.0180, 520, legKmh},
		{270 * time.Second, 48.0045, 505, legKmh}, // driving back
	} {
		p := r.At(tc.at)
		if !near(p.Lat, tc.lat, 1e-9) || !near(p.Alt, tc.ele, 1e-6) || !near(p.Speed, tc.speed, 0.01) {
			t.Fatalf("at %s: %+v, want lat %v ele %v speed %.2f", tc.at, p, tc.lat, tc.ele, tc.speed)
		}
	}

	untimed := `<gpx><rte><rtept lat="1" lon="1"/><rtept lat="1.001" lon="1"/></rte></gpx>`
	r, err = ParseGPX(strings.NewReader(untimed), "untimed", 36)
	if err != nil {
		t.Fatal(err)
	}
	if p := r.At(time.Second); !near(p.Speed, 36, 1e-6) {
		t.Fatalf("untimed speed %.3f, want 36", p.Speed)
	}

	for _, tc := range []struct{ name, doc, want string }{
		{"not xml", "hello", "not a GPX document"},
		{"one point", `<gpx><trk><trkseg><trkpt lat="1" lon="1"/></trkseg></trk></gpx>`, "at least 2"},
		{"bad lat", `<gpx><trk><trkseg><trkpt lat="north" lon="1"/><trkpt lat="1" lon="1"/></trkseg></trk></gpx>`, `point 0: lat "north"`},
		{"lat out of range", `<gpx><trk><trkseg><trkpt lat="91" lon="1"/><trkpt lat="1" lon="1"/></trkseg></trk></gpx>`, "within ±90"},
		{"bad ele", `<gpx><trk><trkseg><trkpt lat="1" lon="1"><ele>high</ele></trkpt><trkpt lat="1" lon="2"/></trkseg></trk></gpx>`, `ele "high"`},
		{"bad time", `<gpx><trk><trkseg><trkpt lat="1" lon="1"><time>noon</time></trkpt><trkpt lat="1" lon="2"/></trkseg></trk></gpx>`, `time "noon"`},
		{"time goes back", `<gpx><trk><trkseg><trkpt lat="1" lon="1"><time>2024-01-01T10:00:00Z</time></trkpt><trkpt lat="1" lon="2"><time>2024-01-01T09:00:00Z</time></trkpt></trkseg></trk></gpx>`, "point 1: time goes back"},
		{"no speed for untimed", `<gpx><trk><trkseg><trkpt lat="1" lon="1"/><trkpt lat="1" lon="2"/></trkseg></trk></gpx>`, "speed above 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			speed := 50.0
			if tc.name == "no speed for untimed" {
				speed = 0
			}
			_, err := ParseGPX(strings.NewReader(tc.doc), tc.name, speed)
			if !errors.Is(err, ErrInvalidRoute) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInvalidRoute mentioning %q", err, tc.want)
			}
		})
	}
}
