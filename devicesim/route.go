package devicesim

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Waypoint is a point of a route and when the vehicle passes it, counted
// from the start of the route.
type Waypoint struct {
	Lat, Lon, Ele float64
	At            time.Duration
}

// Route is a timed polyline a device drives round and round: at the end it
// starts again from the first point, so routes are closed loops (built-in
// and open GPX tracks are driven out and back).
type Route struct {
	Name   string
	Points []Waypoint
}

// Position is where a vehicle is, how fast it goes (km/h) and where it heads
// (degrees clockwise from north).
type Position struct {
	Lat, Lon, Alt float64
	Speed         float64
	Heading       float64
}

// NewRoute checks points and returns the route: at least two points,
// coordinates in range, times starting at 0 and never going back, and a
// positive total duration.
func NewRoute(name string, points []Waypoint) (*Route, error) {
	if len(points) < 2 {
		return nil, fmt.Errorf("devicesim: route %q needs at least 2 points, has %d: %w", name, len(points), ErrInvalidRoute)
	}
	for i, p := range points {
		if p.Lat < -90 || p.Lat > 90 || p.Lon < -180 || p.Lon > 180 || math.IsNaN(p.Lat) || math.IsNaN(p.Lon) {
			return nil, fmt.Errorf("devicesim: route %q point %d: lat must be within ±90 and lon within ±180: %w", name, i, ErrInvalidRoute)
		}
		if i == 0 && p.At != 0 {
			return nil, fmt.Errorf("devicesim: route %q point 0: time must be 0: %w", name, ErrInvalidRoute)
		}
		if i > 0 && p.At < points[i-1].At {
			return nil, fmt.Errorf("devicesim: route %q point %d: time goes back: %w", name, i, ErrInvalidRoute)
		}
	}
	if points[len(points)-1].At <= 0 {
		return nil, fmt.Errorf("devicesim: route %q takes no time: %w", name, ErrInvalidRoute)
	}
	return &Route{Name: name, Points: append([]Waypoint(nil), points...)}, nil
}

// PathPoint is a point of an untimed path: SpeedKmh is the speed of the leg
// to the next point, Dwell a stop at this point first (a traffic light).
type PathPoint struct {
	Lat, Lon, Ele float64
	SpeedKmh      float64
	Dwell         time.Duration
}

// RouteFromPath times a path from its leg speeds. A closed path (last point
// within 50 m of the first) is driven as is; an open one out and back.
func RouteFromPath(name string, path []PathPoint) (*Route, error) {
	if len(path) < 2 {
		return nil, fmt.Errorf("devicesim: route %q needs at least 2 points, has %d: %w", name, len(path), ErrInvalidRoute)
	}
	if n := len(path); distance(path[0].Lat, path[0].Lon, path[n-1].Lat, path[n-1].Lon) > 50 {
		// Out and back: the way back takes each leg at its outward speed.
		full := append(make([]PathPoint, 0, 2*n-1), path...)
		full[n-1].SpeedKmh = path[n-2].SpeedKmh
		for i := n - 2; i >= 0; i-- {
			p := path[i]
			p.SpeedKmh = 0
			if i > 0 {
				p.SpeedKmh = path[i-1].SpeedKmh
			}
			full = append(full, p)
		}
		path = full
	}
	var pts []Waypoint
	var at time.Duration
	for i, p := range path {
		if p.Dwell > 0 && i > 0 {
			pts = append(pts, Waypoint{Lat: p.Lat, Lon: p.Lon, Ele: p.Ele, At: at})
			at += p.Dwell
		}
		pts = append(pts, Waypoint{Lat: p.Lat, Lon: p.Lon, Ele: p.Ele, At: at})
		if i+1 < len(path) {
			if p.SpeedKmh <= 0 {
				return nil, fmt.Errorf("devicesim: route %q point %d: speed must be positive: %w", name, i, ErrInvalidRoute)
			}
			n := path[i+1]
			sec := distance(p.Lat, p.Lon, n.Lat, n.Lon) / (p.SpeedKmh / 3.6)
			at += time.Duration(sec * float64(time.Second))
		}
	}
	return NewRoute(name, pts)
}

// Duration is the time one lap takes.
func (r *Route) Duration() time.Duration { return r.Points[len(r.Points)-1].At }

// At returns the position t into the route, wrapping around laps.
func (r *Route) At(t time.Duration) Position {
	total := r.Duration()
	t %= total
	if t < 0 {
		t += total
	}
	pts := r.Points
	// i is the last point passed: pts[i].At <= t < pts[i+1].At.
	i := sort.Search(len(pts), func(k int) bool { return pts[k].At > t }) - 1
	i = max(0, min(i, len(pts)-2))
	a, b := pts[i], pts[i+1]
	f := 0.0
	if seg := b.At - a.At; seg > 0 {
		f = float64(t-a.At) / float64(seg)
	}
	pos := Position{
		Lat: a.Lat + (b.Lat-a.Lat)*f,
		Lon: a.Lon + (b.Lon-a.Lon)*f,
		Alt: a.Ele + (b.Ele-a.Ele)*f,
	}
	if seg := b.At - a.At; seg > 0 {
		pos.Speed = distance(a.Lat, a.Lon, b.Lat, b.Lon) / seg.Seconds() * 3.6
	}
	pos.Heading = r.heading(i)
	return pos
}

// heading is the bearing of the first leg from point i on that moves.
func (r *Route) heading(i int) float64 {
	for k := i; k < len(r.Points)-1; k++ {
		a, b := r.Points[k], r.Points[k+1]
		if a.Lat != b.Lat || a.Lon != b.Lon {
			return bearing(a.Lat, a.Lon, b.Lat, b.Lon)
		}
	}
	return 0
}

// Length is the distance of one lap in metres.
func (r *Route) Length() float64 {
	m := 0.0
	for i := 1; i < len(r.Points); i++ {
		m += distance(r.Points[i-1].Lat, r.Points[i-1].Lon, r.Points[i].Lat, r.Points[i].Lon)
	}
	return m
}

const earthRadius = 6371000.0 // metres

// distance is the great-circle distance in metres (haversine).
func distance(lat1, lon1, lat2, lon2 float64) float64 {
	p1, p2 := lat1*math.Pi/180, lat2*math.Pi/180
	dp, dl := p2-p1, (lon2-lon1)*math.Pi/180
	h := math.Sin(dp/2)*math.Sin(dp/2) + math.Cos(p1)*math.Cos(p2)*math.Sin(dl/2)*math.Sin(dl/2)
	return 2 * earthRadius * math.Asin(math.Sqrt(min(1, h)))
}

// bearing is the initial course from point 1 to point 2 in degrees [0, 360).
func bearing(lat1, lon1, lat2, lon2 float64) float64 {
	p1, p2 := lat1*math.Pi/180, lat2*math.Pi/180
	dl := (lon2 - lon1) * math.Pi / 180
	y := math.Sin(dl) * math.Cos(p2)
	x := math.Cos(p1)*math.Sin(p2) - math.Sin(p1)*math.Cos(p2)*math.Cos(dl)
	return math.Mod(math.Atan2(y, x)*180/math.Pi+360, 360)
}

// Built-in route names.
const (
	RouteCityLoop = "city-loop"
	RouteHighway  = "highway"
)

// RouteNames lists the built-in routes.
func RouteNames() []string { return []string{RouteCityLoop, RouteHighway} }

// BuiltinRoute returns the built-in route called name.
func BuiltinRoute(name string) (*Route, error) {
	switch name {
	case RouteCityLoop:
		return CityLoop(), nil
	case RouteHighway:
		return Highway(), nil
	}
	return nil, fmt.Errorf("devicesim: route %q is not built in (choose city-loop or highway): %w", name, ErrInvalidRoute)
}

// CityLoop is a closed loop of about 4 km through city blocks at 25–45 km/h
// with two traffic-light stops.
func CityLoop() *Route {
	r, err := RouteFromPath(RouteCityLoop, []PathPoint{
		{Lat: 37.77650, Lon: -122.41650, Ele: 16, SpeedKmh: 40},
		{Lat: 37.78120, Lon: -122.41060, Ele: 14, SpeedKmh: 35},
		{Lat: 37.78500, Lon: -122.40580, Ele: 12, SpeedKmh: 30, Dwell: 20 * time.Second},
		{Lat: 37.78100, Lon: -122.40050, Ele: 8, SpeedKmh: 45},
		{Lat: 37.77560, Lon: -122.40730, Ele: 9, SpeedKmh: 40},
		{Lat: 37.77220, Lon: -122.41150, Ele: 11, SpeedKmh: 25, Dwell: 30 * time.Second},
		{Lat: 37.77000, Lon: -122.41500, Ele: 14, SpeedKmh: 30},
		{Lat: 37.77650, Lon: -122.41650, Ele: 16},
	})
	if err != nil {
		panic(err) // a built-in route is a constant; its test keeps it valid
	}
	return r
}

// Highway is about 30 km of motorway at 90–110 km/h, driven out and back.
func Highway() *Route {
	r, err := RouteFromPath(RouteHighway, []PathPoint{
		{Lat: 37.82550, Lon: -122.31000, Ele: 5, SpeedKmh: 90},
		{Lat: 37.87250, Lon: -122.30150, Ele: 8, SpeedKmh: 105},
		{Lat: 37.92400, Lon: -122.32200, Ele: 20, SpeedKmh: 110},
		{Lat: 37.98200, Lon: -122.31050, Ele: 45, SpeedKmh: 100},
		{Lat: 38.04500, Lon: -122.23800, Ele: 30, SpeedKmh: 95},
		{Lat: 38.06900, Lon: -122.21900, Ele: 12},
	})
	if err != nil {
		panic(err)
	}
	return r
}
