package bolt

import (
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

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
	return getStateRecord[store.DeviceLink](r.t.bucket(bucketDeviceLinks), []byte(imei))
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
	return r.t.bucket(bucketDeviceLinks).ForEach(func(k, v []byte) error {
		var l store.DeviceLink
		if err := json.Unmarshal(v, &l); err != nil {
			return fmt.Errorf("store: decode %s: %w", k, err)
		}
		return visit(&l)
	})
}

// deviceCredentials are the device_credentials records, JSON under the
// device's IMEI.
type deviceCredentials struct{ t *tx }

// DeviceCredentials implements store.DeviceStateRecords.
func (t *tx) DeviceCredentials() store.DeviceCredentialRecords { return deviceCredentials{t} }

// Get implements store.DeviceCredentialRecords.
func (r deviceCredentials) Get(imei string) (*store.DeviceCredential, error) {
	return getStateRecord[store.DeviceCredential](r.t.bucket(bucketDeviceCredentials), []byte(imei))
}

// Put implements store.DeviceCredentialRecords.
func (r deviceCredentials) Put(c *store.DeviceCredential) error {
	return putJSON(r.t.bucket(bucketDeviceCredentials), []byte(c.IMEI), c)
}

// Delete implements store.DeviceCredentialRecords.
func (r deviceCredentials) Delete(imei string) error {
	return r.t.bucket(bucketDeviceCredentials).Delete([]byte(imei))
}

// getStateRecord decodes the record at key of b into a new T; store.ErrNotFound
// (with no message of its own) when there is none. A missing record costs
// no allocation beyond the error.
func getStateRecord[T any](b *bbolt.Bucket, key []byte) (*T, error) {
	raw := b.Get(key)
	if raw == nil {
		return nil, store.NotFound("")
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("store: decode %s: %w", key, err)
	}
	return v, nil
}
