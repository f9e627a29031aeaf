package bolt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Driver sessions are kept as JSON in driver_sessions under imei, 0, start
// (unix ms, 8 bytes); driver_current maps the IMEI of a device with a driver
// checked in to the key of its open session. driver_pin_failures keeps the
// times of a device's recent wrong PINs as a JSON list under its IMEI.

// driverSessionKey is the key of the session of imei that started at start.
func driverSessionKey(imei string, start time.Time) []byte {
	return append(compositeKey(imei, ""), itob(max(start.UnixMilli(), 0))...)
}

// decodeDriverSession decodes a session record.
func decodeDriverSession(v []byte) (*store.DriverSession, error) {
	var s store.DriverSession
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, fmt.Errorf("store: decode: %w", err)
	}
	return &s, nil
}

// driverSessions is the driver session set of one transaction.
type driverSessions struct{ t *tx }

// DriverSessions implements store.DriverRecords.
func (t *tx) DriverSessions() store.DriverSessionSet { return driverSessions{t} }

// Current implements store.DriverSessionSet.
func (s driverSessions) Current(imei string) (*store.DriverSession, error) {
	k := s.t.bucket(bucketDriverCurrent).Get([]byte(imei))
	if k == nil {
		return nil, nil
	}
	var ds store.DriverSession
	if err := getJSON(s.t.bucket(bucketDriverSessions), k, &ds); err != nil {
		return nil, err
	}
	return &ds, nil
}

// Begin implements store.DriverSessionSet.
func (s driverSessions) Begin(ds *store.DriverSession) error {
	k, err := s.put(ds)
	if err != nil {
		return err
	}
	return s.t.bucket(bucketDriverCurrent).Put([]byte(ds.IMEI), k)
}

// put stores ds under its device and start, its start kept to the
// millisecond as its key is, and returns its key.
func (s driverSessions) put(ds *store.DriverSession) ([]byte, error) {
	k := driverSessionKey(ds.IMEI, ds.Start)
	c := *ds
	c.Start = ds.Start.Truncate(time.Millisecond)
	return k, putJSON(s.t.bucket(bucketDriverSessions), k, &c)
}

// End implements store.DriverSessionSet: it stores ds under the key the
// device's pointer names.
func (s driverSessions) End(ds *store.DriverSession) error {
	cur := s.t.bucket(bucketDriverCurrent)
	k := cur.Get([]byte(ds.IMEI))
	if k == nil {
		return store.NotFound("open driver session on device %s", ds.IMEI)
	}
	c := *ds
	c.Start = ds.Start.Truncate(time.Millisecond)
	if err := putJSON(s.t.bucket(bucketDriverSessions), bytes.Clone(k), &c); err != nil {
		return err
	}
	return cur.Delete([]byte(ds.IMEI))
}

// AllCurrent implements store.DriverSessionSet.
func (s driverSessions) AllCurrent() ([]store.DriverSession, error) {
	sessions := s.t.bucket(bucketDriverSessions)
	var out []store.DriverSession
	err := s.t.bucket(bucketDriverCurrent).ForEach(func(_, k []byte) error {
		var ds store.DriverSession
		if err := getJSON(sessions, k, &ds); err != nil {
			return err
		}
		out = append(out, ds)
		return nil
	})
	return out, err
}

// LastStarted implements store.DriverSessionSet.
func (s driverSessions) LastStarted(imei string, at time.Time) (*store.DriverSession, error) {
	c := s.t.bucket(bucketDriverSessions).Cursor()
	k, v := seekBefore(c, driverSessionKey(imei, at.Add(time.Millisecond)))
	if k == nil || !bytes.HasPrefix(k, compositeKey(imei, "")) {
		return nil, nil
	}
	return decodeDriverSession(v)
}

// StartedBy implements store.DriverSessionSet.
func (s driverSessions) StartedBy(imei string, until time.Time) ([]store.DriverSession, error) {
	var out []store.DriverSession
	err := eachJSON(s.t.bucket(bucketDriverSessions), compositeKey(imei, ""), func(_ []byte, ds *store.DriverSession) (bool, error) {
		if ds.Start.After(until) {
			return false, nil
		}
		out = append(out, *ds)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Purge implements store.DriverSessionSet. A session stays while the
// device's pointer names its key.
func (s driverSessions) Purge(p store.SeriesPurge) (int, []byte, error) {
	cur := s.t.bucket(bucketDriverCurrent)
	return purgeSeries(s.t.bucket(bucketDriverSessions), p, jsonOwnership, func(k, _ []byte) bool {
		open := cur.Get(k[:len(k)-9]) // the IMEI: the key less 0 and the start
		return open != nil && bytes.Equal(open, k)
	})
}

// driverPinFailures is the wrong-PIN set of one transaction.
type driverPinFailures struct{ t *tx }

// DriverPinFailures implements store.DriverRecords.
func (t *tx) DriverPinFailures() store.DriverPinFailureSet { return driverPinFailures{t} }

// Get implements store.DriverPinFailureSet.
func (s driverPinFailures) Get(imei string) ([]time.Time, error) {
	var times []time.Time
	err := getJSON(s.t.bucket(bucketPinFailures), []byte(imei), &times)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return times, nil
}

// Put implements store.DriverPinFailureSet.
func (s driverPinFailures) Put(imei string, times []time.Time) error {
	return putJSON(s.t.bucket(bucketPinFailures), []byte(imei), times)
}

// Delete implements store.DriverPinFailureSet.
func (s driverPinFailures) Delete(imei string) error {
	return s.t.bucket(bucketPinFailures).Delete([]byte(imei))
}
