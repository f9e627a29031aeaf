package bolt

import (
	"github.com/fleetcam/fleetcam/store"
)

// deviceLinks are the device_links records, JSON under the device's IMEI.
// The broker reads and writes one on every connection: one key, one
// decode.
type deviceLinks struct{ t *tx }

// DeviceLinks implements store.DeviceStateRecords.
func (t *tx) DeviceLinks() store.DeviceLinkRecords { return deviceLinks{t} }

// Get implements store.DeviceLinkRecords.
func (r deviceLinks) Get(imei string) (*store.DeviceLink, error) {
	return lookupJSON(r.t.bucket(bucketDeviceLinks), []byte(imei), store.DeviceLink{})
}

// Put implements store.DeviceLinkRecords.
func (r deviceLinks) Put(l *store.DeviceLink) error {
	return putJSON(r.t.bucket(bucketDeviceLinks), []byte(l.IMEI), l)
}

// Delete implements store.DeviceLinkRecords.
func (r deviceLinks) Delete(imei string) error {
	return r.t.bucket(bucketDeviceLinks).Delete([]byte(imei))
}

// Each implements store.DeviceLinkRecords.
func (r deviceLinks) Each(visit func(l *store.DeviceLink) error) error {
	return eachJSON(r.t.bucket(bucketDeviceLinks), nil, func(_ []byte, l *store.DeviceLink) (bool, error) {
		return true, visit(l)
	})
}
