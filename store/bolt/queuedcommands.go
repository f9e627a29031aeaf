package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"

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
	var found *store.QueuedCommand
	err := r.scan(imei, func(_ []byte, c *store.QueuedCommand) bool {
		if c.ID == id {
			found = c
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, store.NotFound("queued command %s of device %s", id, imei)
	}
	return found, nil
}

// Delete implements store.QueuedCommandRecords.
func (r queuedCommands) Delete(imei, id string) (bool, error) {
	var key []byte
	err := r.scan(imei, func(k []byte, c *store.QueuedCommand) bool {
		if c.ID == id {
			key = bytes.Clone(k)
			return false
		}
		return true
	})
	if err != nil || key == nil {
		return false, err
	}
	return true, r.t.bucket(bucketDeviceCommands).Delete(key)
}

// scan visits imei's commands oldest first until visit returns false.
func (r queuedCommands) scan(imei string, visit func(k []byte, c *store.QueuedCommand) bool) error {
	prefix := compositeKey(imei, "")
	c := r.t.bucket(bucketDeviceCommands).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var qc store.QueuedCommand
		if err := json.Unmarshal(v, &qc); err != nil {
			return fmt.Errorf("store: decode %s: %w", k, err)
		}
		if !visit(k, &qc) {
			return nil
		}
	}
	return nil
}
