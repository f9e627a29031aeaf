package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/fleetcam/fleetcam/store"
)

// devices are the devices, JSON under their IMEI, and the org_devices
// index: an empty value under compositeKey(organization id, IMEI) for each
// device, so an organization's devices are one range of keys, in IMEI
// order.
type devices struct{ t *tx }

// Devices implements store.DirectoryRecords.
func (t *tx) Devices() store.DeviceRecords { return devices{t} }

// Get implements store.DeviceRecords.
func (r devices) Get(imei string) (*store.Device, error) {
	var d store.Device
	if err := getJSON(r.t.bucket(bucketDevices), []byte(imei), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// Stamp implements store.DeviceRecords: the FNV-1a hash of the stored JSON,
// which takes no decoding.
func (r devices) Stamp(imei string) (uint64, error) {
	raw := r.t.bucket(bucketDevices).Get([]byte(imei))
	if raw == nil {
		return 0, store.NotFound("device %s", imei)
	}
	h := fnv.New64a()
	h.Write(raw)
	return h.Sum64(), nil
}

// Insert implements store.DeviceRecords.
func (r devices) Insert(d *store.Device) error {
	b := r.t.bucket(bucketDevices)
	if b.Get([]byte(d.IMEI)) != nil {
		return store.Conflict("device %s is already stored", d.IMEI)
	}
	if err := putJSON(b, []byte(d.IMEI), d); err != nil {
		return err
	}
	return r.t.bucket(bucketOrgDevices).Put(compositeKey(d.OrganizationID, d.IMEI), nil)
}

// Put implements store.DeviceRecords. The org_devices entry stays: the
// device stays in its organization.
func (r devices) Put(d *store.Device) error {
	b := r.t.bucket(bucketDevices)
	if b.Get([]byte(d.IMEI)) == nil {
		return store.NotFound("device %s", d.IMEI)
	}
	return putJSON(b, []byte(d.IMEI), d)
}

// Delete implements store.DeviceRecords.
func (r devices) Delete(imei string) error {
	b := r.t.bucket(bucketDevices)
	raw := b.Get([]byte(imei))
	if raw == nil {
		return store.NotFound("device %s", imei)
	}
	var d struct {
		OrganizationID int64 `json:"organizationId"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("store: decode device %s: %w", imei, err)
	}
	if err := b.Delete([]byte(imei)); err != nil {
		return err
	}
	return r.t.bucket(bucketOrgDevices).Delete(compositeKey(d.OrganizationID, imei))
}

// List implements store.DeviceRecords. The devices of one organization are
// read through org_devices; without an organization every device is.
func (r devices) List(f store.DeviceFilter, p store.Page) ([]store.Device, int, error) {
	var all []store.Device
	visit := func(imei, raw []byte) error {
		if raw == nil {
			return store.NotFound("device %s", imei)
		}
		var d store.Device
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("store: decode %s: %w", imei, err)
		}
		if f.Match(&d) {
			all = append(all, d)
		}
		return nil
	}
	devs := r.t.bucket(bucketDevices)
	if f.OrganizationID != 0 {
		prefix := orgDevicesPrefix(f.OrganizationID)
		c := r.t.bucket(bucketOrgDevices).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			imei := k[len(prefix):]
			if err := visit(imei, devs.Get(imei)); err != nil {
				return nil, 0, err
			}
		}
	} else if err := devs.ForEach(visit); err != nil {
		return nil, 0, err
	}
	page, total := store.Paginate(all, p)
	return page, total, nil
}

// OrganizationIMEIs implements store.DeviceRecords.
func (r devices) OrganizationIMEIs(orgID int64) ([]string, error) {
	var out []string
	prefix := orgDevicesPrefix(orgID)
	c := r.t.bucket(bucketOrgDevices).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		out = append(out, string(k[len(prefix):]))
	}
	return out, nil
}

// orgDevicesPrefix is the start of the org_devices keys of organization
// orgID: the 8-byte id and the 0 separator before the IMEI.
func orgDevicesPrefix(orgID int64) []byte { return compositeKey(orgID, "") }
