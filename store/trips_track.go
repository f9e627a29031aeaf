package store

import "time"

// track returns the GPS positions of imei from start to end, oldest first.
func (tx *Tx) track(imei string, start, end time.Time) ([]TrackPoint, error) {
	return nil, nil
}
