package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// GPS samples of a device are keyed by its IMEI, a 0 byte and the sample's
// unix milliseconds big-endian, so a time range is one cursor walk; values
// are the numbers in a fixed binary layout (lat, lon, alt, speed, accuracy,
// heading as float64) followed by the device's ownership the sample was
// recorded for (ownership.go), absent in samples stored before ownership
// numbers existed.

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

func gpsKey(imei string, t time.Time) []byte {
	k := append([]byte(imei), 0)
	return binary.BigEndian.AppendUint64(k, uint64(max(t.UnixMilli(), 0)))
}

// gpsValueLen is the length of a sample's numbers, before its ownership.
const gpsValueLen = 48

// AddGPS stores the points of dev and returns those that were new; a point
// at a millisecond already stored is skipped.
func (tx *Tx) AddGPS(dev *Device, points []GPSPoint) ([]GPSPoint, error) {
	imei := dev.IMEI
	b := tx.bucket(bucketGPS)
	var added []GPSPoint
	for i, p := range points {
		if err := ValidGPSPoint(p); err != nil {
			return nil, within(fmt.Sprintf("samples[%d]", i), err)
		}
		k := gpsKey(imei, p.Time)
		if b.Get(k) != nil {
			continue
		}
		v := make([]byte, 0, gpsValueLen+8)
		for _, f := range []float64{p.Lat, p.Lon, p.Alt, p.Speed, p.Accuracy, p.Heading} {
			v = binary.BigEndian.AppendUint64(v, math.Float64bits(f))
		}
		if dev.Ownership != 0 {
			v = binary.BigEndian.AppendUint64(v, uint64(dev.Ownership))
		}
		if err := b.Put(k, v); err != nil {
			return nil, err
		}
		p.Time = time.UnixMilli(p.Time.UnixMilli()).UTC()
		added = append(added, p)
	}
	return added, nil
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

// gps walks imei's points; with owner set, only those of owner's current ownership.
func (tx *Tx) gps(imei string, owner *Device, start, end time.Time, limit int) ([]GPSPoint, error) {
	prefix := append([]byte(imei), 0)
	stop := gpsKey(imei, end)
	var out []GPSPoint
	c := tx.bucket(bucketGPS).Cursor()
	for k, v := c.Seek(gpsKey(imei, start)); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k, stop) <= 0; k, v = c.Next() {
		p, err := decodeGPS(len(prefix), k, v)
		if err != nil {
			return nil, err
		}
		if owner != nil && !owner.holds(gpsOwnership(v), 0, p.Time) {
			continue
		}
		out = append(out, p)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// lastGPS returns the latest stored sample of imei at or before the unix
// millisecond upTo (math.MaxInt64: the latest of all) and not before the
// unix millisecond floor whose millisecond skip does not report, and with
// owner set that was recorded for owner's current ownership; ok is false
// when there is none.
func (tx *Tx) lastGPS(imei string, owner *Device, upTo, floor int64, skip func(ms int64) bool) (p GPSPoint, ok bool, err error) {
	prefix := append([]byte(imei), 0)
	bound := binary.BigEndian.AppendUint64(prefix[:len(prefix):len(prefix)], uint64(max(upTo, 0)))
	c := tx.bucket(bucketGPS).Cursor()
	k, v := c.Seek(bound)
	switch {
	case k == nil:
		k, v = c.Last()
	case !bytes.Equal(k, bound):
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
		if len(k) != len(prefix)+8 {
			_, err := decodeGPS(len(prefix), k, v)
			return GPSPoint{}, false, err
		}
		ms := int64(binary.BigEndian.Uint64(k[len(prefix):]))
		if ms < floor {
			break
		}
		if skip != nil && skip(ms) || owner != nil && !owner.holds(gpsOwnership(v), 0, time.UnixMilli(ms)) {
			continue
		}
		p, err := decodeGPS(len(prefix), k, v)
		return p, err == nil, err
	}
	return GPSPoint{}, false, nil
}

// decodeGPS decodes the sample stored under key k, whose IMEI prefix
// (with its 0 byte) is prefixLen long.
func decodeGPS(prefixLen int, k, v []byte) (GPSPoint, error) {
	if len(v) < 40 || len(k) != prefixLen+8 {
		return GPSPoint{}, fmt.Errorf("store: decode gps sample %x", k)
	}
	f := func(i int) float64 { return math.Float64frombits(binary.BigEndian.Uint64(v[i*8:])) }
	p := GPSPoint{Time: time.UnixMilli(int64(binary.BigEndian.Uint64(k[prefixLen:]))).UTC(),
		Lat: f(0), Lon: f(1), Alt: f(2), Speed: f(3), Accuracy: f(4)}
	if len(v) >= gpsValueLen {
		p.Heading = f(5)
	}
	return p, nil
}

// gpsOwnership returns the ownership a stored sample was recorded for (0: none).
func gpsOwnership(v []byte) int64 {
	if len(v) < gpsValueLen+8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v[gpsValueLen:]))
}

// ValidGPSPoint reports the first member of p out of range, or nil.
func ValidGPSPoint(p GPSPoint) error {
	switch {
	case p.Time.UnixMilli() <= 0:
		return Invalid("time", "must be a positive unix time")
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
	return seriesPurger(bucketGPS, gpsOwnership, keepNone)(tx, cut, from, limit)
}
