package store_test

import (
	"errors"
	"math"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
)

// TestDeviceTimesBeyondTheYear9999AreRefused: a time no record can carry
// (JSON and PostgreSQL stop at the year 9999) is invalid input, not a
// write that fails and is sent again for ever.
func TestDeviceTimesBeyondTheYear9999AreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{
		{time.UnixMilli(1), true},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), true},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{time.UnixMilli(1_000_000_000_000_000), false},
		{time.UnixMilli(0), false},
	} {
		if got := ValidDeviceTime(tc.at); got != tc.want {
			t.Errorf("ValidDeviceTime(%v) = %v, want %v", tc.at, got, tc.want)
		}
		err := ValidGPSPoint(GPSPoint{Time: tc.at})
		if (err == nil) != tc.want || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("ValidGPSPoint at %v: %v", tc.at, err)
		}
	}
}

// TestUnixDeviceTime: a device's seconds or milliseconds are a device time
// only inside the rule, and a number far outside it is refused rather than
// wrapped round into a time that looks valid.
func TestUnixDeviceTime(t *testing.T) {
	t.Parallel()
	last := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	for _, tc := range []struct {
		name string
		n    int64
		unit time.Duration
		want time.Time // zero: refused
	}{
		{"first second", 1, time.Second, time.Unix(1, 0)},
		{"first millisecond", 1, time.Millisecond, time.UnixMilli(1)},
		{"a millisecond of 2025", 1740830405120, time.Millisecond, time.UnixMilli(1740830405120)},
		{"last second before the year 10000", last.Unix(), time.Second, last},
		{"last millisecond before the year 10000", last.UnixMilli() + 999, time.Millisecond, last.Add(999 * time.Millisecond)},
		{"the year 10000 in seconds", last.Unix() + 1, time.Second, time.Time{}},
		{"the year 10000 in milliseconds", last.UnixMilli() + 1000, time.Millisecond, time.Time{}},
		{"seconds of the year 11476", 300000000000, time.Second, time.Time{}},
		{"the largest number of seconds", math.MaxInt64, time.Second, time.Time{}},
		{"the largest number of milliseconds", math.MaxInt64, time.Millisecond, time.Time{}},
		{"zero", 0, time.Second, time.Time{}},
		{"negative seconds", -1, time.Second, time.Time{}},
		{"negative milliseconds", -1, time.Millisecond, time.Time{}},
		{"the smallest number", math.MinInt64, time.Second, time.Time{}},
	} {
		got, ok := UnixDeviceTime(tc.n, tc.unit)
		if ok != !tc.want.IsZero() || (ok && !got.Equal(tc.want)) || (ok && got.Location() != time.UTC) {
			t.Errorf("%s: UnixDeviceTime(%d, %v) = %v, %v; want %v", tc.name, tc.n, tc.unit, got, ok, tc.want)
		}
	}
}
