package bolt

import (
	"bytes"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// deviceOwnerships are the ownership log, one entry per ownership of each
// IMEI:
//
//	device_ownerships  imei 0x00 ownership(8)  →  organization(8) [ended unix-ms(8)]
//
// Ownership numbers are the sequence of the devices bucket (whose keys are
// IMEIs, so nothing else counts with it), where every file has counted
// them so far.
type deviceOwnerships struct{ t *tx }

// DeviceOwnerships implements store.DirectoryRecords.
func (t *tx) DeviceOwnerships() store.DeviceOwnershipRecords { return deviceOwnerships{t} }

// ownershipPrefix is the start of the keys of imei's ownerships.
func ownershipPrefix(imei string) []byte { return compositeKey(imei, "") }

// Insert implements store.DeviceOwnershipRecords.
func (r deviceOwnerships) Insert(o *store.DeviceOwnership) error {
	if err := r.t.drawID(bucketDevices, &o.Ownership); err != nil {
		return err
	}
	return r.Put(o)
}

// Put implements store.DeviceOwnershipRecords.
func (r deviceOwnerships) Put(o *store.DeviceOwnership) error {
	v := itob(o.OrganizationID)
	if !o.EndedAt.IsZero() {
		v = append(v, itob(o.EndedAt.UnixMilli())...)
	}
	return r.t.bucket(bucketOwnerships).Put(append(ownershipPrefix(o.IMEI), itob(o.Ownership)...), v)
}

// Last implements store.DeviceOwnershipRecords.
func (r deviceOwnerships) Last(imei string) (*store.DeviceOwnership, error) {
	prefix := ownershipPrefix(imei)
	c := r.t.bucket(bucketOwnerships).Cursor()
	// The IMEI's last ownership is the last entry before its next prefix.
	k, v := seekBefore(c, append(bytes.Clone(prefix), 0xff))
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return nil, store.NotFound("")
	}
	return decodeOwnership(imei, k[len(prefix):], v), nil
}

// List implements store.DeviceOwnershipRecords. Entries whose key or value
// is not of the layout above are skipped.
func (r deviceOwnerships) List(imei string) ([]store.DeviceOwnership, error) {
	var out []store.DeviceOwnership
	prefix := ownershipPrefix(imei)
	c := r.t.bucket(bucketOwnerships).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) == len(prefix)+8 && len(v) >= 8 {
			out = append(out, *decodeOwnership(imei, k[len(prefix):], v))
		}
	}
	return out, nil
}

// decodeOwnership reads the entry of imei whose key ends in number, with
// value v; what is missing from either stays zero.
func decodeOwnership(imei string, number, v []byte) *store.DeviceOwnership {
	o := &store.DeviceOwnership{IMEI: imei}
	if len(number) == 8 {
		o.Ownership = btoi(number)
	}
	if len(v) >= 8 {
		o.OrganizationID = btoi(v[:8])
	}
	if len(v) == 16 {
		o.EndedAt = time.UnixMilli(btoi(v[8:])).UTC()
	}
	return o
}
