package store

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Geofences and what the cloud learns from GPS: per device, whether the
// vehicle was inside or outside each geofence (to enforce that entered is
// created only on crossing in, never when a trip starts inside) and whether
// the vehicle is above the speed limit (speedLimit events, once per
// excursion). Positions for the events the cloud creates come from the
// stored GPS samples.

// Geofence is a circle a device watches; the API's shape (id, name, lat,
// lon, radius in meters). The id is the caller's.
type Geofence struct {
	ID     int64   `json:"id"`
	Name   string  `json:"name"`
	Lat    float64 `json:"lat"`
	Lon    float64 `json:"lon"`
	Radius float64 `json:"radius"`
}

// MaxGeofences is the most geofences one device holds.
const MaxGeofences = 99

// MaxGeofenceRadius bounds a geofence radius, in meters.
const MaxGeofenceRadius = 1_000_000

// ValidateGeofences reports the first geofence that breaks a rule, naming
// its index and member.
func ValidateGeofences(fs []Geofence) error {
	if len(fs) > MaxGeofences {
		return Invalid("", "geofences: at most %d per device", MaxGeofences)
	}
	seen := map[int64]bool{}
	for i, g := range fs {
		bad := func(rule string) error { return Invalid("", "[%d].%s", i, rule) }
		switch {
		case g.ID < 1:
			return bad("id must be a positive integer")
		case seen[g.ID]:
			return bad("id " + strconv.FormatInt(g.ID, 10) + " is used twice")
		case g.Name == "" || len(g.Name) > 100:
			return bad("name must be 1 to 100 characters")
		case math.IsNaN(g.Lat) || g.Lat < -90 || g.Lat > 90:
			return bad("lat must be from -90 to 90")
		case math.IsNaN(g.Lon) || g.Lon < -180 || g.Lon > 180:
			return bad("lon must be from -180 to 180")
		case math.IsNaN(g.Radius) || g.Radius <= 0 || g.Radius > MaxGeofenceRadius:
			return bad(fmt.Sprintf("radius must be above 0 and at most %d meters", MaxGeofenceRadius))
		}
		seen[g.ID] = true
	}
	return nil
}

// Contains reports whether the position lies inside the circle.
func (g Geofence) Contains(lat, lon float64) bool {
	return distanceMeters(g.Lat, g.Lon, lat, lon) <= g.Radius
}

// distanceMeters is the great-circle distance (haversine).
func distanceMeters(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371008.8
	rad := math.Pi / 180
	dLat, dLon := (lat2-lat1)*rad, (lon2-lon1)*rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * r * math.Asin(math.Min(1, math.Sqrt(a)))
}

func findGeofence(fs []Geofence, id int64) (Geofence, bool) {
	for _, g := range fs {
		if g.ID == id {
			return g, true
		}
	}
	return Geofence{}, false
}

// SetGeofences replaces the geofences of imei. They are part of the
// device's desired configuration, so its version goes up and the broker
// delivers them.
func (tx *Tx) SetGeofences(imei string, fs []Geofence) error {
	if err := ValidateGeofences(fs); err != nil {
		return err
	}
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return err
	}
	ds.Geofences = append([]Geofence{}, fs...)
	return tx.PutDeviceSettings(ds, "device.geofences.update")
}

// Geofences returns the geofences of imei.
func (tx *Tx) Geofences(imei string) ([]Geofence, error) {
	if _, err := tx.Device(imei); err != nil {
		return nil, err
	}
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return nil, err
	}
	return ds.Geofences, nil
}

// EnteredWindow is how close to a device's entered event the GPS must show
// the vehicle crossing in from outside.
const EnteredWindow = 10 * time.Minute

// FenceTransition is a change of side of one geofence: the first fix on
// the new side.
type FenceTransition struct {
	Time   time.Time `json:"t"`
	Inside bool      `json:"in"`
}

// maxFenceTransitions bounds the history kept per geofence.
const maxFenceTransitions = 4

// DeviceTrack is what GPS taught the cloud about one device: the latest
// transitions of each of its geofences, oldest first, and whether its last
// fix was above the speed limit.
type DeviceTrack struct {
	Fences    map[int64][]FenceTransition `json:"fences,omitempty"`
	OverLimit bool                        `json:"overLimit,omitempty"`
}

// dropDeviceTrack drops the geofence track of a removed device.
func dropDeviceTrack(tx *Tx, d *Device) error {
	return tx.rec.DeviceTracks().Delete(d.IMEI)
}

// deviceTrack returns the track of imei, empty when none is stored.
func (tx *Tx) deviceTrack(imei string) (*DeviceTrack, error) {
	t, err := tx.rec.DeviceTracks().Get(imei)
	switch {
	case isNotFound(err):
		t = &DeviceTrack{}
	case err != nil:
		return nil, err
	}
	if t.Fences == nil {
		t.Fences = map[int64][]FenceTransition{}
	}
	return t, nil
}

// TrackGPS learns from a device's new fixes, which AddGPS stored in this
// transaction: geofence sides and speed-limit excursions. It creates a
// speedLimit event at the first fix of each excursion above the event
// configuration's speed limit, through the event rules, and returns the
// events it created. A fix older than one already seen arrived out of order
// and teaches nothing. The device's track is written only when it changed,
// which for a device without geofences is only at the start and the end of
// an excursion: GPS is most of what devices send.
func (tx *Tx) TrackGPS(dev *Device, fixes []GPSPoint) ([]*Event, error) {
	if len(fixes) == 0 {
		return nil, nil
	}
	fences, speedLimit, err := tx.trackSettings(dev)
	if err != nil {
		return nil, err
	}
	t, err := tx.deviceTrack(dev.IMEI)
	if err != nil {
		return nil, err
	}
	var last time.Time // the latest fix seen before this one
	if prev, ok, err := tx.rec.GPSSamples().Latest(dev.IMEI, time.Time{}, endOfTime, GPSFilter{Except: fixes}); err != nil {
		return nil, err
	} else if ok {
		last = prev.Time
	}
	changed := false
	var created []*Event
	for _, f := range fixes {
		if f.Time.Before(last) {
			continue // out of order: already past it
		}
		last = f.Time
		for _, g := range fences {
			in := g.Contains(f.Lat, f.Lon)
			hist := t.Fences[g.ID]
			if n := len(hist); n == 0 || hist[n-1].Inside != in {
				hist = append(hist, FenceTransition{Time: f.Time, Inside: in})
				if len(hist) > maxFenceTransitions {
					hist = hist[len(hist)-maxFenceTransitions:]
				}
				t.Fences[g.ID], changed = hist, true
			}
		}
		limit := float64(speedLimit)
		switch {
		case limit <= 0 || f.Speed <= limit:
			changed = changed || t.OverLimit
			t.OverLimit = false
		case !t.OverLimit:
			t.OverLimit, changed = true, true
			res, err := tx.IngestEvent(dev, EventInput{
				DeviceEventID: "cloud-speedLimit-" + strconv.FormatInt(f.Time.UnixMilli(), 10), Type: EventSpeedLimit,
				Time: f.Time, Lat: f.Lat, Lon: f.Lon, Alt: f.Alt, Speed: f.Speed, Accuracy: f.Accuracy,
			})
			if err != nil {
				return nil, err
			}
			if res.Created {
				created = append(created, res.Event)
			}
		}
	}
	for id := range t.Fences {
		if _, ok := findGeofence(fences, id); !ok {
			delete(t.Fences, id)
			changed = true
		}
	}
	if !changed {
		return created, nil
	}
	return created, tx.rec.DeviceTracks().Put(dev.IMEI, t)
}

// trackSettings returns the two effective settings TrackGPS applies, the
// device's geofences and its speed limit, as EffectiveSettings resolves
// them but without reading the rest: it runs for every GPS message.
func (tx *Tx) trackSettings(dev *Device) ([]Geofence, int, error) {
	ds, err := tx.DeviceSettings(dev.IMEI)
	if err != nil {
		return nil, 0, err
	}
	os, err := tx.OrgSettings(dev.OrganizationID)
	if err != nil {
		return nil, 0, err
	}
	ev := DefaultEventConfig()
	pick(&ev, ds.Events, os.Events)
	return ds.Geofences, ev.SpeedLimitKmh, nil
}

// enteredAllowed reports whether GPS supports an entered event of fence at
// time at: the vehicle was last seen outside the fence before at, or GPS
// shows it crossing in from outside within EnteredWindow of at. A vehicle
// first seen inside (a trip that starts inside) never qualifies.
func (tx *Tx) enteredAllowed(imei string, fence int64, at time.Time) (bool, error) {
	t, err := tx.deviceTrack(imei)
	if err != nil {
		return false, err
	}
	hist := t.Fences[fence]
	for i, tr := range hist {
		if !tr.Inside && tr.Time.Before(at) && (i == len(hist)-1 || !hist[i+1].Time.Before(at)) {
			return true, nil // outside just before the event
		}
		if tr.Inside && i > 0 && !hist[i-1].Inside {
			if d := tr.Time.Sub(at); d <= EnteredWindow && d >= -EnteredWindow {
				return true, nil // crossing in around the event
			}
		}
	}
	return false, nil
}

// positionWindow is how far from an event a stored GPS sample still gives
// the event's position: an event the cloud creates for a device (a virtual
// event, a driver's check-out, the device's activation) is placed where
// the device's GPS was within this window of its time, or nowhere.
const positionWindow = 10 * time.Minute

// positionAt returns where dev was at time at: its last GPS sample of its
// current ownership at or before at, within positionWindow, else its first
// one after at within positionWindow. found is false when it has none that
// near: a sample further away tells nothing of where the event happened.
func (tx *Tx) positionAt(dev *Device, at time.Time) (p GPSPoint, found bool, err error) {
	samples, mine := tx.rec.GPSSamples(), GPSFilter{Holder: dev}
	p, found, err = samples.Latest(dev.IMEI, at.Add(-positionWindow), at, mine)
	if err != nil || found {
		return p, found, err
	}
	after, err := samples.Range(dev.IMEI, at.Add(time.Millisecond), at.Add(positionWindow), mine, 1)
	if err != nil || len(after) == 0 {
		return GPSPoint{}, false, err
	}
	return after[0], true, nil
}
