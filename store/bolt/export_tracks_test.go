package bolt

// The buckets of the tracks group, for the tests in package bolt_test that
// check the layout of the records they hold.
var (
	BucketGPS            = string(bucketGPS)
	BucketDeviceTracks   = string(bucketDeviceTracks)
	BucketTrips          = string(bucketTrips)
	BucketTripOpen       = string(bucketTripOpen)
	BucketHotspot        = string(bucketHotspot)
	BucketDeviceSettings = string(bucketDeviceSettings)
	BucketOrgSettings    = string(bucketOrgSettings)
)
