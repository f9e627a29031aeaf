package cloudapi

import (
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/apiform"
)

// The formats of values in answers that many operations share.

// isoTime formats t as the API's ISO 8601 UTC timestamp with milliseconds;
// the zero time is "" (apiform.Time, which the webhooks write times with).
func isoTime(t time.Time) string { return apiform.Time(t) }

// isoTimeOrNull is isoTime of t, or nil (JSON null, or a member left out)
// for the zero time.
func isoTimeOrNull(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := isoTime(t)
	return &s
}
