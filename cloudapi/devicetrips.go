package cloudapi

import (
	"math"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// metersPerMile converts the store's meters to the contract's miles.
const metersPerMile = 1609.344

// trackChunk is how many GPS samples a track walk reads at a time.
const trackChunk = 5000

// walkTrack calls fn with d's GPS samples from start to end inclusive,
// oldest first, reading them in chunks so that a long track is never held
// whole.
func walkTrack(tx *store.Tx, d *store.Device, start, end time.Time, fn func(p store.GPSPoint)) error {
	for from := start; !from.After(end); {
		pts, err := tx.DeviceGPS(d, from, end, trackChunk)
		if err != nil {
			return err
		}
		for _, p := range pts {
			fn(p)
		}
		if len(pts) < trackChunk {
			return nil
		}
		from = pts[len(pts)-1].Time.Add(time.Millisecond)
	}
	return nil
}

// deviceTripDTO is one trip of GET /devices/{imei}/trips.
// start and end are GPS samples as GET /devices/{imei}/gps gives them.
type deviceTripDTO struct {
	Start gpsSampleDTO `json:"start"`
	End   gpsSampleDTO `json:"end"`
	// Duration is in seconds; an open trip counts until now.
	Duration int64 `json:"duration"`
	// Distance is in miles.
	Distance float64 `json:"distance"`
	// MaxSpeed is in meters per second.
	MaxSpeed    float64 `json:"maxSpeed"`
	EventsCount int     `json:"eventsCount"`
	// InProgress marks a trip the device has not ended yet.
	InProgress bool `json:"inProgress"`
}

// tripEventTypes are the event types counted in a trip: every kind but the
// power on and off that delimit it.
var tripEventTypes = func() map[string]bool {
	out := map[string]bool{}
	for _, k := range store.EventKinds() {
		if k.API != "accOn" && k.API != "accOff" {
			out[k.API] = true
		}
	}
	return out
}()

// getDeviceTrips handles GET /devices/{imei}/trips?start&end[&minimumDistance]:
// the device's trips (power on to power off) that overlap the span, oldest
// first. start and end are the first and last GPS samples of the trip; a
// trip without GPS has the trip's start and end times there, at 0,0.
func (s *Server) getDeviceTrips(c *gin.Context) error {
	start, end, err := timeSpan(c)
	if err != nil {
		return err
	}
	var minMiles float64
	if v, given := c.GetQuery("minimumDistance"); given {
		if minMiles, err = strconv.ParseFloat(v, 64); err != nil || minMiles < 0 || math.IsInf(minMiles, 0) {
			return badField("minimumDistance", "must be a number of miles, 0 or more")
		}
	}
	out := []deviceTripDTO{}
	err = s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		trips, _, err := tx.Trips(store.TripFilter{IMEI: d.IMEI, OrganizationIDs: map[int64]bool{d.OrganizationID: true},
			Start: start, End: end}, store.Page{})
		if err != nil {
			return err
		}
		now := tx.Now()
		for _, t := range trips {
			miles := t.DistanceMeters / metersPerMile
			if miles < minMiles {
				continue
			}
			dto, err := deviceTrip(tx, d, &t.Trip, now)
			if err != nil {
				return err
			}
			dto.Distance = math.Round(miles*1000) / 1000
			out = append(out, dto)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// deviceTrip renders trip t of d from its GPS track and events.
func deviceTrip(tx *store.Tx, d *store.Device, t *store.Trip, now time.Time) (deviceTripDTO, error) {
	end := t.End
	if end.IsZero() {
		end = now
	}
	dto := deviceTripDTO{Duration: int64(t.Duration(now) / time.Second), InProgress: t.End.IsZero(),
		Start: gpsSampleDTO{Time: float64(t.Start.UnixMilli()) / 1000}, End: gpsSampleDTO{Time: float64(end.UnixMilli()) / 1000}}
	n := 0
	err := walkTrack(tx, d, t.Start, end, func(p store.GPSPoint) {
		if n == 0 {
			dto.Start = toGPSSample(p)
		}
		n++
		dto.End = toGPSSample(p)
		dto.MaxSpeed = max(dto.MaxSpeed, p.Speed/3.6)
	})
	if err != nil {
		return dto, err
	}
	_, dto.EventsCount, err = tx.QueryDeviceEvents(d, store.EventQuery{Start: t.Start, End: end, Types: tripEventTypes}, store.Page{Limit: 1})
	return dto, err
}

// scoreEventTypes are the driving-behaviour events a safety score counts:
// harsh driving, distraction, fatigue and the road-facing warnings. Power,
// check-in, tamper and other device events do not count.
var scoreEventTypes = map[string]bool{
	"acceleration": true, "deceleration": true, "accident": true, "sharpTurnLeft": true, "sharpRightTurn": true,
	"speedLimit": true, "tailgating": true, "laneWeaving": true, "cellPhoneUse": true, "distractedDriving": true,
	"smoking": true, "foodDrink": true, "driverUnbelted": true, "possibleFatigue": true, "gsensorHigh": true,
}

// scoreDistanceFloorKm is the distance below which a score is the plain
// count of events: a short drive does not inflate it.
const scoreDistanceFloorKm = 100

// safetyScore is the score of events counted over km kilometers driven:
// events per 100 km, counting at least 100 km; lower is better.
func safetyScore(events int, km float64) float64 {
	return math.Round(float64(events)*100/max(km, scoreDistanceFloorKm)*100) / 100
}

// scoreDTO answers GET /devices/{imei}/score.
type scoreDTO struct {
	Score float64 `json:"score"`
	// Events and DistanceKm are what the score was computed from.
	Events     int     `json:"events"`
	DistanceKm float64 `json:"distanceKm"`
}

// getDeviceScore handles GET /devices/{imei}/score?start&end: the device's
// safety score over the span, safetyScore of its driving-behaviour events
// and the length of its GPS track in the span.
func (s *Server) getDeviceScore(c *gin.Context) error {
	start, end, err := timeSpan(c)
	if err != nil {
		return err
	}
	var out scoreDTO
	err = s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		var meters float64
		var prev *store.GPSPoint
		err = walkTrack(tx, d, start, end, func(p store.GPSPoint) {
			if prev != nil {
				meters += store.Haversine(prev.Lat, prev.Lon, p.Lat, p.Lon)
			}
			prev = &p
		})
		if err != nil {
			return err
		}
		if _, out.Events, err = tx.QueryDeviceEvents(d, store.EventQuery{Start: start, End: end, Types: scoreEventTypes}, store.Page{Limit: 1}); err != nil {
			return err
		}
		out.DistanceKm = math.Round(meters) / 1000
		out.Score = safetyScore(out.Events, meters/1000)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}
