package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// trips are the trips, JSON keyed by the device's IMEI, a 0 byte and the
// trip's start in unix milliseconds (8 bytes big-endian), so a device's
// trips are one range of keys in start order; trip ids come from the
// bucket's sequence. trip_open holds, under each IMEI with an open trip,
// the key of that trip.
type trips struct{ t *tx }

// Trips implements store.TrackRecords.
func (t *tx) Trips() store.TripRecords { return trips{t} }

// tripKey is the key of imei's trip starting at start.
func tripKey(imei string, start time.Time) []byte {
	return append(compositeKey(imei, ""), itob(max(start.UnixMilli(), 0))...)
}

// At implements store.TripRecords.
func (r trips) At(imei string, start time.Time) (*store.Trip, error) {
	return r.get(tripKey(imei, start))
}

// get decodes the trip at key k.
func (r trips) get(k []byte) (*store.Trip, error) {
	return lookupJSON(r.t.bucket(bucketTrips), k, store.Trip{})
}

// Insert implements store.TripRecords.
func (r trips) Insert(t *store.Trip) error {
	if r.t.bucket(bucketTrips).Get(tripKey(t.IMEI, t.Start)) != nil {
		return r.conflict(t)
	}
	if err := r.t.drawID(bucketTrips, &t.ID); err != nil {
		return err
	}
	return r.put(t)
}

// put stores the new trip t under its id; a trip of t.IMEI starting at the
// same millisecond is ErrConflict.
func (r trips) put(t *store.Trip) error {
	b := r.t.bucket(bucketTrips)
	k := tripKey(t.IMEI, t.Start)
	if b.Get(k) != nil {
		return r.conflict(t)
	}
	return putJSON(b, k, t)
}

// conflict is the ErrConflict of a second trip of t's device and start.
func (r trips) conflict(t *store.Trip) error {
	return store.Conflict("device %s has a trip starting at %s", t.IMEI, t.Start.UTC().Format(time.RFC3339Nano))
}

// Put implements store.TripRecords.
func (r trips) Put(t *store.Trip) error {
	b := r.t.bucket(bucketTrips)
	k := tripKey(t.IMEI, t.Start)
	if b.Get(k) == nil {
		return store.NotFound("trip %d", t.ID)
	}
	return putJSON(b, k, t)
}

// Open implements store.TripRecords.
func (r trips) Open(imei string) (*store.Trip, error) {
	k := r.t.bucket(bucketTripOpen).Get([]byte(imei))
	if k == nil {
		return nil, store.NotFound("open trip of %s", imei)
	}
	t, err := r.get(k)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("store: the open trip of %s, %x, is not stored", imei, k)
	}
	return t, err
}

// SetOpen implements store.TripRecords: a trip that is not stored is
// store.ErrNotFound, and changes nothing.
func (r trips) SetOpen(t *store.Trip) error {
	key := tripKey(t.IMEI, t.Start)
	if r.t.bucket(bucketTrips).Get(key) == nil {
		return store.NotFound("trip of %s starting at %s", t.IMEI, t.Start.UTC().Format(time.RFC3339Nano))
	}
	return r.t.bucket(bucketTripOpen).Put([]byte(t.IMEI), key)
}

// ClearOpen implements store.TripRecords.
func (r trips) ClearOpen(imei string) error {
	return r.t.bucket(bucketTripOpen).Delete([]byte(imei))
}

// ByDevice implements store.TripRecords.
func (r trips) ByDevice(imei string, start, end time.Time) ([]store.Trip, error) {
	var out []store.Trip
	err := eachJSON(r.t.bucket(bucketTrips), compositeKey(imei, ""), func(_ []byte, t *store.Trip) (bool, error) {
		if !end.IsZero() && t.Start.After(end) {
			return false, nil
		}
		if start.IsZero() || t.End.IsZero() || !t.End.Before(start) {
			out = append(out, *t)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// IMEIs implements store.TripRecords. It skips from each device's first
// trip to the next device: the 0 byte after the IMEI sorts before 1.
func (r trips) IMEIs() ([]string, error) {
	var out []string
	c := r.t.bucket(bucketTrips).Cursor()
	for k, _ := c.First(); k != nil; {
		sep := bytes.IndexByte(k, 0)
		if sep < 0 {
			k, _ = c.Next()
			continue
		}
		out = append(out, string(k[:sep]))
		k, _ = c.Seek(append(k[:sep:sep], 1))
	}
	return out, nil
}

// Purge implements store.TripRecords.
func (r trips) Purge(p store.SeriesPurge) (int, []byte, error) {
	open := r.t.bucket(bucketTripOpen)
	return purgeSeries(r.t.bucket(bucketTrips), p, jsonOwnership, func(k, _ []byte) bool {
		return bytes.Equal(open.Get(k[:len(k)-9]), k)
	})
}
