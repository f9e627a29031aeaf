package store

import (
	"math"
	"slices"
	"time"
)

// Trips: a trip runs from a device's power on (accOn) to its power off
// (accOff). A power on while a trip is open closes that trip first. The
// distance is the haversine length of the GPS track between start and end;
// it is computed again when read, so GPS that arrives late still counts,
// and the value stored when the trip closed is used once the track has
// been purged.

// Trip is one drive of one device.
type Trip struct {
	ID             int64     `json:"id"`
	IMEI           string    `json:"imei"`
	OrganizationID int64     `json:"organizationId"`
	Start          time.Time `json:"startTime"`
	End            time.Time `json:"endTime,omitzero"`
	// DriverID is the driver at the start (0: none known).
	DriverID int64 `json:"driverId,omitempty"`
	// DistanceMeters is the track length when the trip closed.
	DistanceMeters float64 `json:"distanceMeters"`
	// Ownership is the device's ownership the trip was recorded for (ownership.go).
	Ownership int64 `json:"ownership,omitempty"`
}

// owner is the device as it was when t was recorded, for reading what was
// recorded with it.
func (t *Trip) owner() *Device {
	return &Device{IMEI: t.IMEI, OrganizationID: t.OrganizationID, Ownership: t.Ownership}
}

// Duration is the trip's length; an open trip counts until now.
func (t *Trip) Duration(now time.Time) time.Duration {
	end := t.End
	if end.IsZero() {
		end = now
	}
	return max(end.Sub(t.Start), 0)
}

const (
	tripStart = "accOn"
	tripEnd   = "accOff"
)

// dropOpenTrip forgets the open trip of a removed device; its trips stay.
func dropOpenTrip(tx *Tx, d *Device) error {
	return tx.rec.Trips().ClearOpen(d.IMEI)
}

// ApplyTripEvent opens or closes dev's trip on a power on or off event; any
// other event type is ignored. Redelivered events change nothing.
func (tx *Tx) ApplyTripEvent(dev *Device, ev EventInput) error {
	if ev.Type != tripStart && ev.Type != tripEnd {
		return nil
	}
	// The event's own rules come first: a trip is not opened or closed by
	// an event the store refuses.
	if err := ev.validate(); err != nil {
		return err
	}
	at := ev.Time
	switch ev.Type {
	case tripStart:
		switch _, err := tx.rec.Trips().At(dev.IMEI, at); {
		case err == nil:
			return nil // a redelivered power on
		case !isNotFound(err):
			return err
		}
		if err := tx.closeTrip(dev.IMEI, at); err != nil {
			return err
		}
		t := &Trip{IMEI: dev.IMEI, OrganizationID: dev.OrganizationID, Start: at, Ownership: dev.Ownership}
		if d, err := tx.CurrentDriver(dev, at); err != nil {
			return err
		} else if d != nil {
			t.DriverID = d.ID
		}
		if err := tx.rec.Trips().Insert(t); err != nil {
			return err
		}
		return tx.rec.Trips().SetOpen(t)
	case tripEnd:
		return tx.closeTrip(dev.IMEI, at)
	}
	return nil
}

// closeTrip ends the open trip of imei at t, if any and if t is not before its start.
func (tx *Tx) closeTrip(imei string, at time.Time) error {
	t, err := tx.rec.Trips().Open(imei)
	switch {
	case isNotFound(err):
		return nil
	case err != nil:
		return err
	}
	if at.Before(t.Start) {
		return nil
	}
	t.End = at
	pts, err := tx.track(t, t.End)
	if err != nil {
		return err
	}
	t.DistanceMeters = TrackLength(pts)
	if err := tx.rec.Trips().Put(t); err != nil {
		return err
	}
	return tx.rec.Trips().ClearOpen(imei)
}

// TrackPoint is a position at a time, the input of TrackLength.
type TrackPoint struct {
	Time     time.Time
	Lat, Lon float64
}

// earthRadiusMeters is the mean Earth radius used by the haversine formula.
const earthRadiusMeters = 6371008.8

// Haversine returns the great-circle distance in meters between two positions.
func Haversine(lat1, lon1, lat2, lon2 float64) float64 {
	rad := math.Pi / 180
	dLat := (lat2 - lat1) * rad
	dLon := (lon2 - lon1) * rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * earthRadiusMeters * math.Asin(math.Min(1, math.Sqrt(a)))
}

// TrackLength sums the haversine distances between consecutive points.
func TrackLength(pts []TrackPoint) float64 {
	var sum float64
	for i := 1; i < len(pts); i++ {
		sum += Haversine(pts[i-1].Lat, pts[i-1].Lon, pts[i].Lat, pts[i].Lon)
	}
	return sum
}

// TripFilter selects trips; zero fields do not filter.
type TripFilter struct {
	// OrganizationIDs admits trips of these organizations' devices (nil: every organization).
	OrganizationIDs map[int64]bool
	// PartnerID keeps trips of this partner's devices only.
	PartnerID int64
	IMEI      string
	DriverID  int64
	// Start and End keep trips that overlap the range.
	Start, End time.Time
	// Descending orders newest first (the default of the API).
	Descending bool
}

// TripView is a trip as listed: with its distance computed from the track
// and the drivers who drove it. Trips are listed per device, those of the
// device's current ownership (ownership.go).
type TripView struct {
	Trip
	Drivers []DriverSegment
}

// Trips returns the page of trips matching f ordered by start, and the
// total: trips of the devices in an organization now, recorded for their
// current ownership.
func (tx *Tx) Trips(f TripFilter, p Page) ([]TripView, int, error) {
	var all []TripView
	devices := map[string]*Device{}
	visitDevice := func(imei string) error {
		d, err := tx.Device(imei)
		if err != nil || f.PartnerID != 0 && d.PartnerID != f.PartnerID {
			return nil
		}
		devices[imei] = d
		trips, err := tx.rec.Trips().ByDevice(imei, f.Start, f.End)
		if err != nil {
			return err
		}
		for _, t := range trips {
			if f.OrganizationIDs != nil && !f.OrganizationIDs[t.OrganizationID] || !d.holds(t.Ownership, t.OrganizationID, t.Start) {
				continue
			}
			view := TripView{Trip: t}
			if f.DriverID != 0 {
				segs, err := tx.DriverSegments(d, t.Start, t.End)
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(segs, func(s DriverSegment) bool { return s.DriverID == f.DriverID }) {
					continue
				}
				view.Drivers = segs
			}
			all = append(all, view)
		}
		return nil
	}
	var imeis []string
	switch {
	case f.IMEI != "":
		imeis = []string{f.IMEI}
	case f.OrganizationIDs != nil:
		for org := range f.OrganizationIDs {
			orgIMEIs, err := tx.orgIMEIs(org)
			if err != nil {
				return nil, 0, err
			}
			imeis = append(imeis, orgIMEIs...)
		}
	default:
		var err error
		if imeis, err = tx.rec.Trips().IMEIs(); err != nil {
			return nil, 0, err
		}
	}
	for _, imei := range imeis {
		if err := visitDevice(imei); err != nil {
			return nil, 0, err
		}
	}
	slices.SortFunc(all, func(a, b TripView) int {
		c := a.Start.Compare(b.Start)
		if c == 0 {
			c = int(a.ID - b.ID)
		}
		if f.Descending {
			return -c
		}
		return c
	})
	page, total := Paginate(all, p)
	for i := range page {
		t := &page[i]
		if t.Drivers == nil {
			segs, err := tx.DriverSegments(devices[t.IMEI], t.Start, t.End)
			if err != nil {
				return nil, 0, err
			}
			t.Drivers = segs
		}
		pts, err := tx.track(&t.Trip, t.endOr(tx.now))
		if err != nil {
			return nil, 0, err
		}
		if len(pts) >= 2 {
			t.DistanceMeters = TrackLength(pts)
		}
	}
	return page, total, nil
}

func (t *Trip) endOr(now time.Time) time.Time {
	if t.End.IsZero() {
		return now
	}
	return t.End
}

// track returns the GPS positions recorded with trip t from its start to
// end, oldest first.
func (tx *Tx) track(t *Trip, end time.Time) ([]TrackPoint, error) {
	pts, err := tx.gps(t.IMEI, t.owner(), t.Start, end, 0)
	if err != nil {
		return nil, err
	}
	out := make([]TrackPoint, len(pts))
	for i, p := range pts {
		out[i] = TrackPoint{Time: p.Time, Lat: p.Lat, Lon: p.Lon}
	}
	return out, nil
}

// purgeTrips is the retention step of trips. A trip still in progress
// stays: the engine keeps each device's open trip.
func purgeTrips(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	return tx.rec.Trips().Purge(seriesPurge(tx, cut, from, limit))
}
