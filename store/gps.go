package store

import (
	"fmt"
	"math"
	"time"
)

// GPS samples: the position fixes devices report, one per device and
// millisecond. The engine keeps them with the device's ownership each was
// recorded for (ownership.go).

// GPSPoint is one position fix of a device.
type GPSPoint struct {
	Time     time.Time `json:"time"`
	Lat      float64   `json:"lat"`
	Lon      float64   `json:"lon"`
	Alt      float64   `json:"alt"`
	Speed    float64   `json:"speed"` // km/h
	Accuracy float64   `json:"accuracy"`
	Heading  float64   `json:"heading,omitempty"`
}

// AddGPS stores the points of dev and returns those that were new; a point
// at a millisecond already stored is skipped.
func (tx *Tx) AddGPS(dev *Device, points []GPSPoint) ([]GPSPoint, error) {
	for i, p := range points {
		if err := ValidGPSPoint(p); err != nil {
			return nil, within(fmt.Sprintf("samples[%d]", i), err)
		}
	}
	if len(points) == 0 {
		return nil, nil
	}
	stored, err := tx.rec.GPSSamples().Insert(dev.IMEI, dev.Ownership, points)
	if err != nil {
		return nil, err
	}
	var added []GPSPoint
	for i, p := range points {
		if stored[i] {
			p.Time = time.UnixMilli(p.Time.UnixMilli()).UTC()
			added = append(added, p)
		}
	}
	return added, nil
}

// TakesGPS reports whether the cloud stores dev's GPS samples now: not
// while its privacy settings or privacy mode turn GPS off (GPSAllowed). It
// runs for every GPS message, so it resolves the privacy settings alone.
func (tx *Tx) TakesGPS(dev *Device) (bool, error) {
	ds, err := tx.DeviceSettings(dev.IMEI)
	if err != nil {
		return false, err
	}
	os, err := tx.OrgSettings(dev.OrganizationID)
	if err != nil {
		return false, err
	}
	var eff Effective
	eff.resolvePrivacy(ds, os)
	return GPSAllowed(&eff), nil
}

// GPS returns the stored points of imei, whichever ownership of the device
// recorded them, from start to end inclusive, oldest first, at most limit
// of them (0: no limit). What a device's owner may see is DeviceGPS.
func (tx *Tx) GPS(imei string, start, end time.Time, limit int) ([]GPSPoint, error) {
	return tx.gps(imei, nil, start, end, limit)
}

// DeviceGPS is GPS for the points recorded for d's current ownership.
func (tx *Tx) DeviceGPS(d *Device, start, end time.Time, limit int) ([]GPSPoint, error) {
	return tx.gps(d.IMEI, d, start, end, limit)
}

// LastPosition is the latest GPS sample of d's current ownership; found
// is false before its first.
func (tx *Tx) LastPosition(d *Device) (p GPSPoint, found bool, err error) {
	return tx.rec.GPSSamples().Latest(d.IMEI, time.Time{}, endOfTime, GPSFilter{Holder: d})
}

// gps returns imei's points; with owner set, only those of owner's current ownership.
func (tx *Tx) gps(imei string, owner *Device, start, end time.Time, limit int) ([]GPSPoint, error) {
	return tx.rec.GPSSamples().Range(imei, start, end, GPSFilter{Holder: owner}, limit)
}

// HoldsGPS reports whether a GPS sample of d's IMEI, recorded at at for
// ownership (0: none), belongs to d's current ownership.
func (d *Device) HoldsGPS(ownership int64, at time.Time) bool { return d.holds(ownership, 0, at) }

// endOfTime is after every stored time: the end of a range without one.
var endOfTime = time.UnixMilli(math.MaxInt64)

// RuleDeviceTime is the rule of a time a device reports: after 1970 and
// before the year 10000, beyond which no record can carry it.
const RuleDeviceTime = "must be a positive unix time before the year 10000"

// ValidDeviceTime reports whether t follows RuleDeviceTime.
func ValidDeviceTime(t time.Time) bool { return t.UnixMilli() > 0 && t.Before(yearTenThousand) }

// yearTenThousand is the first instant no record can carry.
var yearTenThousand = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)

// UnixDeviceTime is the time a device reports as n units (time.Second or
// time.Millisecond) since the unix epoch, and whether it follows
// RuleDeviceTime. Every time a device reports passes through it or
// ValidDeviceTime, so that none reaches a record it would break. A number
// far outside the rule is refused before time.Unix could wrap it round.
func UnixDeviceTime(n int64, unit time.Duration) (time.Time, bool) {
	per := int64(time.Second / unit)
	if n <= 0 || n/per >= yearTenThousand.Unix() {
		return time.Time{}, false
	}
	t := time.Unix(n/per, n%per*int64(unit)).UTC()
	return t, ValidDeviceTime(t)
}

// ValidGPSPoint reports the first member of p out of range, or nil.
func ValidGPSPoint(p GPSPoint) error {
	switch {
	case !ValidDeviceTime(p.Time):
		return Invalid("time", RuleDeviceTime)
	case math.IsNaN(p.Lat) || p.Lat < -90 || p.Lat > 90:
		return Invalid("lat", "must be from -90 to 90")
	case math.IsNaN(p.Lon) || p.Lon < -180 || p.Lon > 180:
		return Invalid("lon", "must be from -180 to 180")
	case math.IsNaN(p.Speed) || p.Speed < 0:
		return Invalid("speed", "must not be negative")
	case math.IsNaN(p.Accuracy) || p.Accuracy < 0:
		return Invalid("accuracy", "must not be negative")
	}
	return nil
}

// purgeGPS is the retention step of GPS samples.
func purgeGPS(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	return tx.rec.GPSSamples().Purge(seriesPurge(tx, cut, from, limit))
}
