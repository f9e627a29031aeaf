package bolt_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
)

// tripKey is the trips key of imei's trip starting at start: the IMEI, a 0
// byte, the unix milliseconds big-endian.
func tripKey(imei string, start time.Time) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(imei), 0), uint64(start.UnixMilli()))
}

// A trip an older version opened is closed by a power off, and the next
// trip takes its id from where the bucket's sequence stands, under the key
// of its device and start, and becomes the open trip.
func TestTripsWrittenBefore(t *testing.T) {
	f := newDeviceFixture(t)
	start := time.Date(2026, 3, 11, 8, 0, 0, 0, time.UTC)
	const otherIMEI = "356938035643809"
	f.put(bolt.BucketTrips, tripKey(fixtureIMEI, start), fmt.Appendf(nil,
		`{"id":7,"imei":%q,"organizationId":%d,"startTime":"2026-03-11T08:00:00Z","distanceMeters":0,"ownership":%d}`,
		fixtureIMEI, f.org.ID, f.dev.Ownership))
	f.put(bolt.BucketTripOpen, []byte(fixtureIMEI), tripKey(fixtureIMEI, start))
	f.put(bolt.BucketTrips, tripKey(otherIMEI, start), []byte(`{"id":8,"imei":"356938035643809","startTime":"2026-03-11T08:00:00Z"}`))
	f.setSequence(bolt.BucketTrips, 41)

	f.update(func(tx *store.Tx) error {
		return tx.ApplyTripEvent(f.dev, store.EventInput{Type: "accOff", Time: start.Add(30 * time.Minute)})
	})
	var closed struct {
		ID  int64     `json:"id"`
		End time.Time `json:"endTime"`
	}
	if err := json.Unmarshal(f.get(bolt.BucketTrips, tripKey(fixtureIMEI, start)), &closed); err != nil {
		t.Fatal(err)
	}
	if closed.ID != 7 || !closed.End.Equal(start.Add(30*time.Minute)) {
		t.Fatalf("closed trip %+v, want id 7 ending at %s", closed, start.Add(30*time.Minute))
	}
	if v := f.get(bolt.BucketTripOpen, []byte(fixtureIMEI)); v != nil {
		t.Fatalf("the closed trip is still open: %x", v)
	}

	next := start.Add(time.Hour)
	f.update(func(tx *store.Tx) error {
		return tx.ApplyTripEvent(f.dev, store.EventInput{Type: "accOn", Time: next})
	})
	var opened store.Trip
	if err := json.Unmarshal(f.get(bolt.BucketTrips, tripKey(fixtureIMEI, next)), &opened); err != nil {
		t.Fatal(err)
	}
	if opened.ID != 42 || !opened.Start.Equal(next) || opened.IMEI != fixtureIMEI || opened.Ownership != f.dev.Ownership {
		t.Fatalf("new trip %+v, want id 42 starting at %s", opened, next)
	}
	if v := f.get(bolt.BucketTripOpen, []byte(fixtureIMEI)); !bytes.Equal(v, tripKey(fixtureIMEI, next)) {
		t.Fatalf("open trip key %x, want %x", v, tripKey(fixtureIMEI, next))
	}

	f.view(func(tx *store.Tx) error {
		trips, n, err := tx.Trips(store.TripFilter{}, store.Page{})
		if err != nil || n != 2 || trips[0].ID != 7 || trips[1].ID != 42 {
			t.Errorf("trips %+v (%d, %v), want 7 and 42 (the other IMEI has no device)", trips, n, err)
		}
		return nil
	})
	f.records(func(rec store.Records) error {
		imeis, err := rec.Trips().IMEIs()
		if want := []string{otherIMEI, fixtureIMEI}; err != nil || !slices.Equal(imeis, want) {
			t.Errorf("devices with trips %v (%v), want %v", imeis, err, want)
		}
		return nil
	})
}
