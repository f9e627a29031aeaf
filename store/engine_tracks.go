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
	// Trips are the trips of every device and the open trip of each.
	Trips() TripRecords
	// Hotspots are the Wi-Fi hotspot states of the devices.
	Hotspots() KeyedRecords[string, HotspotState]
	// DeviceSettings are the settings of each device, stored as they are:
	// the store sets the version.
	DeviceSettings() KeyedRecords[string, DeviceSettings]
	// OrganizationSettings are the default settings of each organization.
	OrganizationSettings() KeyedRecords[int64, OrgSettings]
	// Albums are the organizations' albums (album.go), one per
	// organization whose album is enabled.
	Albums() KeyedRecords[int64, Album]
}

// GPSSampleRecords are the GPS samples of every device, by device and time
// to the millisecond: a device has at most one sample per millisecond.
type GPSSampleRecords interface {
	// Insert stores each of points, all valid by ValidGPSPoint, as the
	// sample of imei at its time's millisecond, recorded for ownership (0:
	// none), unless imei has a sample at that millisecond already, stored
	// before or earlier in points; stored[i] reports whether points[i] was
	// stored. Samples are kept to the millisecond. The points of one
	// message come in one call, which an engine may store at once.
	Insert(imei string, ownership int64, points []GPSPoint) (stored []bool, err error)
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

// TripRecords are the trips of every device, by device and start time to
// the millisecond, and the open trip of each device: a device has at most
// one trip starting at one millisecond, and at most one open trip.
type TripRecords interface {
	// At returns the trip of imei that started at start's millisecond;
	// ErrNotFound when there is none.
	At(imei string, start time.Time) (*Trip, error)
	// Insert stores the new trip t under a new id, greater than every trip
	// id given before, which it sets in t.ID. A trip of t.IMEI starting at
	// the same millisecond is ErrConflict.
	Insert(t *Trip) error
	// Put replaces the stored trip of t.IMEI starting at t.Start with t;
	// ErrNotFound when there is none.
	Put(t *Trip) error
	// Open returns the open trip of imei; ErrNotFound when it has none.
	Open(imei string) (*Trip, error)
	// SetOpen makes the stored trip t the open trip of t.IMEI; ErrNotFound,
	// changing nothing, when t is not stored.
	SetOpen(t *Trip) error
	// ClearOpen leaves imei without an open trip; the trip itself stays.
	// Clearing none is no error.
	ClearOpen(imei string) error
	// ByDevice returns the trips of imei that overlap start to end, oldest
	// start first: those starting at or before end (zero: any) and ending
	// at or after start (zero: any), an open trip ending never.
	ByDevice(imei string, start, end time.Time) ([]Trip, error)
	// IMEIs returns the IMEIs of the devices that have trips, in IMEI order.
	IMEIs() ([]string, error)
	// Purge runs one batch p of the retention purge of the trips; it keeps
	// each device's open trip.
	Purge(p SeriesPurge) (int, []byte, error)
}
