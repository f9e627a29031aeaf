package bolt

// The buckets of the tracks group, for the tests in package bolt_test that
// check the layout of the records they hold.
var (
	BucketGPS            = bucketGPS
	BucketDeviceTracks   = bucketDeviceTracks
	BucketTrips          = bucketTrips
	BucketTripOpen       = bucketTripOpen
	BucketHotspot        = bucketHotspot
	BucketDeviceSettings = bucketDeviceSettings
	BucketOrgSettings    = bucketOrgSettings
)
