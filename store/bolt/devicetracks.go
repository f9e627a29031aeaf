package bolt

import (
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

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

// lookupJSON decodes the JSON record at key of b over a copy of init and
// returns it; store.ErrNotFound, unnamed as getJSON's, when there is none.
// Unlike getJSON it allocates nothing for a record that is not there: every
// GPS message reads the device's track and its organization's settings,
// and most devices have no track and most organizations no settings.
func lookupJSON[T any](b *bbolt.Bucket, key []byte, init T) (*T, error) {
	raw := b.Get(key)
	if raw == nil {
		return nil, store.NotFound("")
	}
	v := new(T)
	*v = init
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("store: decode %s: %w", key, err)
	}
	return v, nil
}
