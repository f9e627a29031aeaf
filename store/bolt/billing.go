package bolt

import "github.com/fleetcam/fleetcam/store"

// deviceBillings are the device_billing records, JSON under the device's
// IMEI.
type deviceBillings struct{ t *tx }

// DeviceBillings implements store.DeviceStateRecords.
func (t *tx) DeviceBillings() store.DeviceBillingRecords { return deviceBillings{t} }

// Get implements store.DeviceBillingRecords.
func (r deviceBillings) Get(imei string) (*store.DeviceBilling, error) {
	return lookupJSON(r.t.bucket(bucketBilling), []byte(imei), store.DeviceBilling{})
}

// Put implements store.DeviceBillingRecords.
func (r deviceBillings) Put(b *store.DeviceBilling) error {
	return putJSON(r.t.bucket(bucketBilling), []byte(b.IMEI), b)
}

// Delete implements store.DeviceBillingRecords.
func (r deviceBillings) Delete(imei string) error {
	return r.t.bucket(bucketBilling).Delete([]byte(imei))
}
