package devicesim

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// gpxDoc is the part of a GPX 1.0/1.1 document a route needs.
type gpxDoc struct {
	XMLName xml.Name `xml:"gpx"`
	Tracks  []struct {
		Segments []struct {
			Points []gpxPoint `xml:"trkpt"`
		} `xml:"trkseg"`
	} `xml:"trk"`
	Routes []struct {
		Points []gpxPoint `xml:"rtept"`
	} `xml:"rte"`
}

type gpxPoint struct {
	Lat  string `xml:"lat,attr"`
	Lon  string `xml:"lon,attr"`
	Ele  string `xml:"ele"`
	Time string `xml:"time"`
}

// ParseGPX reads the track points (trkpt of every trk and trkseg, in
// order; rtept when there is no track) of a GPX document into a route. When
// every point has a time the route keeps the recorded timing; otherwise it
// is driven at speedKmh. An open track is driven out and back.
func ParseGPX(r io.Reader, name string, speedKmh float64) (*Route, error) {
	var doc gpxDoc
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("devicesim: gpx %q is not a GPX document: %v: %w", name, err, ErrInvalidRoute)
	}
	var raw []gpxPoint
	for _, t := range doc.Tracks {
		for _, s := range t.Segments {
			raw = append(raw, s.Points...)
		}
	}
	if len(raw) == 0 {
		for _, rt := range doc.Routes {
			raw = append(raw, rt.Points...)
		}
	}
	if len(raw) < 2 {
		return nil, fmt.Errorf("devicesim: gpx %q needs at least 2 trkpt, has %d: %w", name, len(raw), ErrInvalidRoute)
	}
	path := make([]PathPoint, len(raw))
	times := make([]time.Time, 0, len(raw))
	for i, p := range raw {
		lat, err := strconv.ParseFloat(strings.TrimSpace(p.Lat), 64)
		if err != nil {
			return nil, fmt.Errorf("devicesim: gpx %q point %d: lat %q must be a number: %w", name, i, p.Lat, ErrInvalidRoute)
		}
		lon, err := strconv.ParseFloat(strings.TrimSpace(p.Lon), 64)
		if err != nil {
			return nil, fmt.Errorf("devicesim: gpx %q point %d: lon %q must be a number: %w", name, i, p.Lon, ErrInvalidRoute)
		}
		var ele float64
		if s := strings.TrimSpace(p.Ele); s != "" {
			if ele, err = strconv.ParseFloat(s, 64); err != nil {
				return nil, fmt.Errorf("devicesim: gpx %q point %d: ele %q must be a number: %w", name, i, p.Ele, ErrInvalidRoute)
			}
		}
		path[i] = PathPoint{Lat: lat, Lon: lon, Ele: ele, SpeedKmh: speedKmh}
		if s := strings.TrimSpace(p.Time); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, fmt.Errorf("devicesim: gpx %q point %d: time %q must be RFC 3339: %w", name, i, p.Time, ErrInvalidRoute)
			}
			times = append(times, t)
		}
	}
	if len(times) != len(path) {
		if speedKmh <= 0 {
			return nil, fmt.Errorf("devicesim: gpx %q has points without time, so a speed above 0 km/h is required: %w", name, ErrInvalidRoute)
		}
		return RouteFromPath(name, path)
	}
	// Timed track: keep the recorded timing (stops included).
	pts := make([]Waypoint, len(path))
	for i, p := range path {
		pts[i] = Waypoint{Lat: p.Lat, Lon: p.Lon, Ele: p.Ele, At: times[i].Sub(times[0])}
		if i > 0 && times[i].Before(times[i-1]) {
			return nil, fmt.Errorf("devicesim: gpx %q point %d: time goes back: %w", name, i, ErrInvalidRoute)
		}
	}
	n := len(pts)
	if distance(pts[0].Lat, pts[0].Lon, pts[n-1].Lat, pts[n-1].Lon) > 50 {
		total := pts[n-1].At
		for i := n - 2; i >= 0; i-- {
			p := pts[i]
			p.At = 2*total - pts[i].At
			pts = append(pts, p)
		}
	}
	return NewRoute(name, pts)
}

// LoadGPX reads a GPX file; see ParseGPX.
func LoadGPX(path string, speedKmh float64) (*Route, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("devicesim: gpx: %w", err)
	}
	defer f.Close()
	return ParseGPX(f, path, speedKmh)
}
