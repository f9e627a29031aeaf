package bolt

import "github.com/fleetcam/fleetcam/store"

// hotspots are the hotspot states, JSON under the device's IMEI.
type hotspots struct{ t *tx }

// Hotspots implements store.TrackRecords.
func (t *tx) Hotspots() store.HotspotRecords { return hotspots{t} }

// Get implements store.HotspotRecords. A record that does not name its
// device is of the IMEI it is stored under.
func (r hotspots) Get(imei string) (*store.HotspotState, error) {
	return lookupJSON(r.t.bucket(bucketHotspot), []byte(imei), store.HotspotState{IMEI: imei})
}

// Put implements store.HotspotRecords.
func (r hotspots) Put(h *store.HotspotState) error {
	return putJSON(r.t.bucket(bucketHotspot), []byte(h.IMEI), h)
}

// Delete implements store.HotspotRecords.
func (r hotspots) Delete(imei string) error {
	return r.t.bucket(bucketHotspot).Delete([]byte(imei))
}
