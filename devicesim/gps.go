package devicesim

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// runGPS takes a fix every GPSInterval and publishes them in batches of
// GPSBatch (QoS 1, queued while offline); it also watches the geofences of
// the applied configuration.
func (d *Device) runGPS(ctx context.Context) {
	batch := d.o.GPSBatch
	if batch == 0 {
		batch = max(1, int(time.Second/d.o.GPSInterval))
	}
	t := time.NewTicker(d.o.GPSInterval)
	defer t.Stop()
	buf := make([]protocol.GPSSample, 0, batch)
	var last int64 // the millisecond of the last fix
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := d.now()
		if now.UnixMilli() <= last {
			// A tick delivered late and the next one on time can fall in one
			// millisecond (and a clock that stands still in every one): a
			// device has one fix a millisecond.
			now = time.UnixMilli(last + 1)
		}
		last = now.UnixMilli()
		if !d.sendsGPS() {
			continue // GPS is off by privacy: no fix is sent
		}
		s := d.Fix(now)
		d.watchFences(ctx, now, s)
		buf = append(buf, s)
		d.stats.gpsSamples.Add(1)
		if len(buf) < batch {
			continue
		}
		key := strconv.FormatInt(buf[0].Time, 10)
		if err := d.publishOrQueue(ctx, protocol.TopicGPS, protocol.GPSBatch{Samples: buf}, key); err != nil {
			d.setErr(err)
		}
		buf = make([]protocol.GPSSample, 0, batch)
	}
}

// Fix returns the GPS fix of the device at t.
func (d *Device) Fix(t time.Time) protocol.GPSSample {
	p := d.Position(t)
	return protocol.GPSSample{
		Time: t.UnixMilli(), Lat: round6(p.Lat), Lon: round6(p.Lon), Alt: math.Round(p.Alt*10) / 10,
		Speed: math.Round(p.Speed*10) / 10, Accuracy: 3 + math.Round(d.randFloat()*50)/10,
		Heading: math.Round(p.Heading),
	}
}

// watchFences reports a geoFence event for every geofence the fix crossed
// into or out of. The first fix only records where the device is, so a
// trip that starts inside a fence reports no "entered".
func (d *Device) watchFences(ctx context.Context, t time.Time, s protocol.GPSSample) {
	d.mu.Lock()
	var crossed []EventSpec
	if c := d.st.Config; c != nil {
		for _, g := range c.Geofences {
			in := inside(g, s.Lat, s.Lon)
			was, known := d.fences[g.ID]
			d.fences[g.ID] = in
			if known && was != in {
				path := "exited"
				if in {
					path = "entered"
				}
				crossed = append(crossed, EventSpec{Type: "geoFence", Time: t, GeoFenceID: g.ID, GeoFencePath: path})
			}
		}
	}
	d.mu.Unlock()
	for _, e := range crossed {
		d.emitQuiet(ctx, e)
	}
}

// inside reports whether (lat, lon) is within the geofence: a circle, or a
// polygon by ray casting.
func inside(g protocol.Geofence, lat, lon float64) bool {
	if g.Circle != nil {
		return distance(lat, lon, g.Circle.Center.Lat, g.Circle.Center.Lon) <= g.Circle.RadiusMeters
	}
	pts := g.Points
	in := false
	for i, j := 0, len(pts)-1; i < len(pts); j, i = i, i+1 {
		a, b := pts[i], pts[j]
		if (a.Lat > lat) != (b.Lat > lat) && lon < (b.Lon-a.Lon)*(lat-a.Lat)/(b.Lat-a.Lat)+a.Lon {
			in = !in
		}
	}
	return in
}
