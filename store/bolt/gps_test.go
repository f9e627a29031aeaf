package bolt_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
)

// sampleKey is the gps key of imei's sample at t: the IMEI, a 0 byte, the
// unix milliseconds big-endian.
func sampleKey(imei string, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(imei), 0), uint64(t.UnixMilli()))
}

// sampleValue is a sample's value: its numbers as float64 bits big-endian,
// then the ownership, when it has one, big-endian.
func sampleValue(ownership int64, numbers ...float64) []byte {
	var v []byte
	for _, n := range numbers {
		v = binary.BigEndian.AppendUint64(v, math.Float64bits(n))
	}
	if ownership != 0 {
		v = binary.BigEndian.AppendUint64(v, uint64(ownership))
	}
	return v
}

// A sample is stored under the device's IMEI and its millisecond, as its
// six numbers and the ownership it was recorded for; a second sample at
// that millisecond is not stored.
func TestGPSSampleLayout(t *testing.T) {
	f := newDeviceFixture(t)
	at := time.Date(2026, 3, 11, 9, 0, 0, 123_456_789, time.FixedZone("CET", 3600))
	p := store.GPSPoint{Time: at, Lat: 52.37, Lon: 4.89, Alt: 3, Speed: 48, Accuracy: 3.9, Heading: 271}
	var added, again []store.GPSPoint
	f.update(func(tx *store.Tx) error {
		var err error
		added, err = tx.AddGPS(f.dev, []store.GPSPoint{p})
		return err
	})
	f.update(func(tx *store.Tx) error {
		var err error
		again, err = tx.AddGPS(f.dev, []store.GPSPoint{p})
		return err
	})
	if want := at.Truncate(time.Millisecond).UTC(); len(added) != 1 || added[0].Time != want || len(again) != 0 {
		t.Fatalf("added %+v, then %+v; want the sample at %s, then none", added, again, want)
	}
	got := f.get(bolt.BucketGPS, sampleKey(fixtureIMEI, at))
	if want := sampleValue(f.dev.Ownership, 52.37, 4.89, 3, 48, 3.9, 271); !bytes.Equal(got, want) {
		t.Fatalf("stored value %x, want %x", got, want)
	}
}

// Samples stored before the heading and before ownership numbers are read
// as they were: without a heading, and of no ownership.
func TestGPSSamplesWrittenBefore(t *testing.T) {
	f := newDeviceFixture(t)
	t0 := time.Date(2026, 3, 11, 8, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	f.put(bolt.BucketGPS, sampleKey(fixtureIMEI, at(1)), sampleValue(0, 52.1, 4.1, 1, 10, 5))
	f.put(bolt.BucketGPS, sampleKey(fixtureIMEI, at(2)), sampleValue(0, 52.2, 4.2, 2, 20, 5, 90))
	f.put(bolt.BucketGPS, sampleKey(fixtureIMEI, at(3)), sampleValue(f.dev.Ownership, 52.3, 4.3, 3, 30, 5, 180))
	f.put(bolt.BucketGPS, sampleKey(fixtureIMEI, at(4)), sampleValue(f.dev.Ownership+1, 52.4, 4.4, 4, 40, 5, 270))
	f.view(func(tx *store.Tx) error {
		all, err := tx.GPS(fixtureIMEI, at(0), at(9), 0)
		if err != nil {
			return err
		}
		want := []store.GPSPoint{
			{Time: at(1), Lat: 52.1, Lon: 4.1, Alt: 1, Speed: 10, Accuracy: 5},
			{Time: at(2), Lat: 52.2, Lon: 4.2, Alt: 2, Speed: 20, Accuracy: 5, Heading: 90},
			{Time: at(3), Lat: 52.3, Lon: 4.3, Alt: 3, Speed: 30, Accuracy: 5, Heading: 180},
			{Time: at(4), Lat: 52.4, Lon: 4.4, Alt: 4, Speed: 40, Accuracy: 5, Heading: 270},
		}
		if len(all) != len(want) {
			t.Fatalf("read %+v, want %+v", all, want)
		}
		for i := range want {
			if all[i] != want[i] {
				t.Errorf("sample %d is %+v, want %+v", i, all[i], want[i])
			}
		}
		if mine, err := tx.DeviceGPS(f.dev, at(0), at(9), 0); err != nil || len(mine) != 1 || mine[0].Time != at(3) {
			t.Errorf("the device's own samples %+v (%v), want the one of its ownership", mine, err)
		}
		return nil
	})
	f.records(func(rec store.Records) error {
		tests := []struct {
			name       string
			start, end time.Time
			filter     store.GPSFilter
			want       time.Time // zero: none
		}{
			{"newest", at(0), at(9), store.GPSFilter{}, at(4)},
			{"up to an earlier end", at(0), at(2), store.GPSFilter{}, at(2)},
			{"of the holder", at(0), at(9), store.GPSFilter{Holder: f.dev}, at(3)},
			{"but the batch", at(0), at(9), store.GPSFilter{Except: []store.GPSPoint{{Time: at(4)}, {Time: at(3)}}}, at(2)},
			{"none from the start", at(4).Add(time.Millisecond), at(9), store.GPSFilter{}, time.Time{}},
		}
		for _, tt := range tests {
			p, ok, err := rec.GPSSamples().Latest(fixtureIMEI, tt.start, tt.end, tt.filter)
			if err != nil || ok != !tt.want.IsZero() || ok && p.Time != tt.want {
				t.Errorf("%s: %+v %v %v, want the sample at %s", tt.name, p, ok, err, tt.want)
			}
		}
		return nil
	})
}
