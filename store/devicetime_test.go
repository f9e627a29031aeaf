package store_test

import (
	"errors"
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
