package bolt

import (
	"bytes"

	"github.com/fleetcam/fleetcam/store"
)

// queuedCommands are the device_commands records: JSON under imei, 0, a
// number from the bucket's sequence (8 bytes), so a device's queue is one
// range, oldest first.
type queuedCommands struct{ t *tx }

// QueuedCommands implements store.DeviceStateRecords.
func (t *tx) QueuedCommands() store.QueuedCommandRecords { return queuedCommands{t} }

// Add implements store.QueuedCommandRecords.
func (r queuedCommands) Add(c *store.QueuedCommand) error {
	seq, err := r.t.nextID(bucketDeviceCommands)
	if err != nil {
		return err
	}
	return putJSON(r.t.bucket(bucketDeviceCommands), compositeKey(c.IMEI, "", seq), c)
}

// List implements store.QueuedCommandRecords.
func (r queuedCommands) List(imei string) ([]store.QueuedCommand, error) {
	return listJSON[store.QueuedCommand](r.t.bucket(bucketDeviceCommands), compositeKey(imei, ""), nil)
}

// Get implements store.QueuedCommandRecords.
func (r queuedCommands) Get(imei, id string) (*store.QueuedCommand, error) {
	_, c, err := r.find(imei, id)
	if err == nil && c == nil {
		err = store.NotFound("queued command %s of device %s", id, imei)
	}
	return c, err
}

// Delete implements store.QueuedCommandRecords.
func (r queuedCommands) Delete(imei, id string) (bool, error) {
	key, _, err := r.find(imei, id)
	if err != nil || key == nil {
		return false, err
	}
	return true, r.t.bucket(bucketDeviceCommands).Delete(key)
}

// find is the key and the record of imei's command id; nil and nil when
// the device has none of that id.
func (r queuedCommands) find(imei, id string) (key []byte, found *store.QueuedCommand, err error) {
	err = eachJSON(r.t.bucket(bucketDeviceCommands), compositeKey(imei, ""), func(k []byte, c *store.QueuedCommand) (bool, error) {
		if c.ID == id {
			key, found = bytes.Clone(k), c
		}
		return found == nil, nil
	})
	return key, found, err
}
