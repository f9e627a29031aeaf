package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// gpsSamples are the GPS samples, keyed by the device's IMEI, a 0 byte and
// the sample's unix milliseconds big-endian, so a time range is one cursor
// walk; values are the numbers in a fixed binary layout (lat, lon, alt,
// speed, accuracy, heading as float64) followed by the device's ownership
// the sample was recorded for, absent in samples stored before ownership
// numbers existed (and in those of ownership 0). Samples stored before the
// heading was kept end after the accuracy.
type gpsSamples struct{ t *tx }

// GPSSamples implements store.TrackRecords.
func (t *tx) GPSSamples() store.GPSSampleRecords { return gpsSamples{t} }

// gpsKey is the key of imei's sample at t.
func gpsKey(imei string, t time.Time) []byte {
	k := append([]byte(imei), 0)
	return binary.BigEndian.AppendUint64(k, uint64(max(t.UnixMilli(), 0)))
}

// gpsValueLen is the length of a sample's numbers, before its ownership.
const gpsValueLen = 48

// Insert implements store.GPSSampleRecords.
func (r gpsSamples) Insert(imei string, ownership int64, points []store.GPSPoint) ([]bool, error) {
	b := r.t.bucket(bucketGPS)
	stored := make([]bool, len(points))
	for i, p := range points {
		k := gpsKey(imei, p.Time)
		if b.Get(k) != nil {
			continue
		}
		v := make([]byte, 0, gpsValueLen+8)
		for _, f := range []float64{p.Lat, p.Lon, p.Alt, p.Speed, p.Accuracy, p.Heading} {
			v = binary.BigEndian.AppendUint64(v, math.Float64bits(f))
		}
		if ownership != 0 {
			v = binary.BigEndian.AppendUint64(v, uint64(ownership))
		}
		if err := b.Put(k, v); err != nil {
			return nil, err
		}
		stored[i] = true
	}
	return stored, nil
}

// Range implements store.GPSSampleRecords.
func (r gpsSamples) Range(imei string, start, end time.Time, f store.GPSFilter, limit int) ([]store.GPSPoint, error) {
	prefix := append([]byte(imei), 0)
	stop := gpsKey(imei, end)
	var out []store.GPSPoint
	c := r.t.bucket(bucketGPS).Cursor()
	for k, v := c.Seek(gpsKey(imei, start)); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k, stop) <= 0; k, v = c.Next() {
		p, err := decodeGPS(len(prefix), k, v)
		if err != nil {
			return nil, err
		}
		if !keepsGPS(f, p.Time.UnixMilli(), v) {
			continue
		}
		out = append(out, p)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// Latest implements store.GPSSampleRecords. It walks back from end, and
// decodes only the sample it returns.
func (r gpsSamples) Latest(imei string, start, end time.Time, f store.GPSFilter) (store.GPSPoint, bool, error) {
	prefix := append([]byte(imei), 0)
	bound := binary.BigEndian.AppendUint64(prefix[:len(prefix):len(prefix)], uint64(max(end.UnixMilli(), 0)))
	floor := start.UnixMilli()
	c := r.t.bucket(bucketGPS).Cursor()
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
			return store.GPSPoint{}, false, err
		}
		ms := int64(binary.BigEndian.Uint64(k[len(prefix):]))
		if ms < floor {
			break
		}
		if !keepsGPS(f, ms, v) {
			continue
		}
		p, err := decodeGPS(len(prefix), k, v)
		return p, err == nil, err
	}
	return store.GPSPoint{}, false, nil
}

// keepsGPS reports whether f keeps the sample v stored at the unix
// millisecond ms.
func keepsGPS(f store.GPSFilter, ms int64, v []byte) bool {
	if f.Except != nil && slices.ContainsFunc(f.Except, func(p store.GPSPoint) bool { return p.Time.UnixMilli() == ms }) {
		return false
	}
	return f.Holder == nil || f.Holder.HoldsGPS(gpsOwnership(v), time.UnixMilli(ms))
}

// Purge implements store.GPSSampleRecords.
func (r gpsSamples) Purge(p store.SeriesPurge) (int, []byte, error) {
	return purgeSeries(r.t.bucket(bucketGPS), p, gpsOwnership, nil)
}

// decodeGPS decodes the sample stored under key k, whose IMEI prefix
// (with its 0 byte) is prefixLen long.
func decodeGPS(prefixLen int, k, v []byte) (store.GPSPoint, error) {
	if len(v) < 40 || len(k) != prefixLen+8 {
		return store.GPSPoint{}, fmt.Errorf("store: decode gps sample %x", k)
	}
	f := func(i int) float64 { return math.Float64frombits(binary.BigEndian.Uint64(v[i*8:])) }
	p := store.GPSPoint{Time: time.UnixMilli(int64(binary.BigEndian.Uint64(k[prefixLen:]))).UTC(),
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
