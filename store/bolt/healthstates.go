package bolt

import "github.com/fleetcam/fleetcam/store"

// healthStates is the device health state set of a transaction: bucket
// device_health_state maps each IMEI to the state as JSON.
type healthStates struct{ t *tx }

// DeviceHealthStates implements store.AlarmRecords.
func (t *tx) DeviceHealthStates() store.DeviceHealthStateSet { return healthStates{t} }

// Get implements store.DeviceHealthStateSet.
func (s healthStates) Get(imei string) (*store.HealthState, error) {
	var h store.HealthState
	if err := getJSON(s.t.bucket(bucketHealthState), []byte(imei), &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// Put implements store.DeviceHealthStateSet.
func (s healthStates) Put(h *store.HealthState) error {
	return putJSON(s.t.bucket(bucketHealthState), []byte(h.IMEI), h)
}

// Delete implements store.DeviceHealthStateSet.
func (s healthStates) Delete(imei string) error {
	return s.t.bucket(bucketHealthState).Delete([]byte(imei))
}
