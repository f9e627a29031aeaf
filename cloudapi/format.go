package cloudapi

import "time"

// The formats of values in answers that many operations share.

// isoTime formats t as the API's ISO 8601 UTC timestamp with milliseconds;
// the zero time is "".
func isoTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// isoTimeOrNull is isoTime of t, or nil (JSON null, or a member left out)
// for the zero time.
func isoTimeOrNull(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := isoTime(t)
	return &s
}
