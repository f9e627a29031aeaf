package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/fleetcam/fleetcam/store"
)

// deviceTracks are the device tracks: table device_tracks, one row per
// device, which goes with the device. The geofence transitions are a
// jsonb object by geofence id, read and replaced whole.
type deviceTracks struct{ t *tx }

// DeviceTracks implements store.TrackRecords.
func (t *tx) DeviceTracks() store.DeviceTrackRecords { return deviceTracks{t} }

// deviceTrackColumns are the columns Get reads.
const deviceTrackColumns = `over_limit, fences`

// Get implements store.DeviceTrackRecords. A track without transitions has
// nil Fences, as it was put.
func (r deviceTracks) Get(imei string) (*store.DeviceTrack, error) {
	var d store.DeviceTrack
	var fences []byte
	if err := getMemo(r.t, tableDeviceTracks, imei, `SELECT `+deviceTrackColumns+` FROM device_tracks WHERE imei = $1`,
		[]any{&d.OverLimit, &fences}, imei); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(fences, &d.Fences); err != nil {
		return nil, fmt.Errorf("store: decode the track of %s: %w", imei, err)
	}
	if len(d.Fences) == 0 {
		d.Fences = nil
	}
	return &d, nil
}

// Put implements store.DeviceTrackRecords.
func (r deviceTracks) Put(imei string, d *store.DeviceTrack) error {
	fences := d.Fences
	if fences == nil {
		fences = map[int64][]store.FenceTransition{}
	}
	doc, err := json.Marshal(fences)
	if err != nil {
		return fmt.Errorf("store: encode the track of %s: %w", imei, err)
	}
	r.t.forget(tableDeviceTracks, imei)
	return r.t.queue(`INSERT INTO device_tracks (imei, over_limit, fences) VALUES ($1, $2, $3)
		ON CONFLICT (imei) DO UPDATE SET over_limit = EXCLUDED.over_limit, fences = EXCLUDED.fences`,
		imei, d.OverLimit, string(doc))
}

// Delete implements store.DeviceTrackRecords.
func (r deviceTracks) Delete(imei string) error {
	r.t.forget(tableDeviceTracks, imei)
	_, err := r.t.exec(`DELETE FROM device_tracks WHERE imei = $1`, imei)
	return err
}
