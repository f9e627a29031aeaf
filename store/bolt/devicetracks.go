package bolt

import (
	"github.com/fleetcam/fleetcam/store"
)

// deviceTracks are the device tracks, JSON under the device's IMEI.
type deviceTracks struct{ t *tx }

// DeviceTracks implements store.TrackRecords.
func (t *tx) DeviceTracks() store.DeviceTrackRecords { return deviceTracks{t} }

// Get implements store.DeviceTrackRecords.
func (r deviceTracks) Get(imei string) (*store.DeviceTrack, error) {
	return lookupJSON(r.t.bucket(bucketDeviceTracks), []byte(imei), store.DeviceTrack{})
}

// Put implements store.DeviceTrackRecords.
func (r deviceTracks) Put(imei string, d *store.DeviceTrack) error {
	return putJSON(r.t.bucket(bucketDeviceTracks), []byte(imei), d)
}

// Delete implements store.DeviceTrackRecords.
func (r deviceTracks) Delete(imei string) error {
	return r.t.bucket(bucketDeviceTracks).Delete([]byte(imei))
}
