package store

import "time"

// TrackRecords are the record sets of GPS samples, device tracks, trips,
// hotspots and device and organization settings, whose rules are in
// gps.go, geofences.go, trips.go, hotspot.go, settings.go, privacy.go.
type TrackRecords interface {
	// GPSSamples are the GPS samples of every device.
	GPSSamples() GPSSampleRecords
	// DeviceTracks are what GPS taught the cloud about each device.
	DeviceTracks() DeviceTrackRecords
}

// GPSSampleRecords are the GPS samples of every device, by device and time
// to the millisecond: a device has at most one sample per millisecond.
type GPSSampleRecords interface {
	// Insert stores p, valid by ValidGPSPoint, as the sample of imei at
	// p.Time's millisecond, recorded for ownership (0: none), unless imei
	// has a sample at that millisecond already; stored reports whether it
	// did. Samples are kept to the millisecond.
	Insert(imei string, ownership int64, p GPSPoint) (stored bool, err error)
	// Range returns the samples of imei from start to end, both inclusive,
	// that f keeps, oldest first, at most limit of them (0: no limit).
	Range(imei string, start, end time.Time, f GPSFilter, limit int) ([]GPSPoint, error)
	// Latest returns the newest sample of imei from start to end, both
	// inclusive, that f keeps; ok is false when there is none.
	Latest(imei string, start, end time.Time, f GPSFilter) (p GPSPoint, ok bool, err error)
	// Purge runs one batch p of the retention purge of the samples.
	Purge(p SeriesPurge) (int, []byte, error)
}

// GPSFilter selects among one device's GPS samples. Zero members do not
// filter.
type GPSFilter struct {
	// Holder, when set, keeps only the samples recorded for its current
	// ownership of the device (Device.HoldsGPS).
	Holder *Device
	// Except leaves out the samples at the milliseconds of these points.
	Except []GPSPoint
}

// DeviceTrackRecords are the device tracks, by IMEI.
type DeviceTrackRecords interface {
	// Get returns the track of imei; ErrNotFound when none is stored.
	Get(imei string) (*DeviceTrack, error)
	// Put stores t as the track of imei, over any stored before.
	Put(imei string, t *DeviceTrack) error
	// Delete forgets the track of imei; forgetting none is no error.
	Delete(imei string) error
}
