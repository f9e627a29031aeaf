package bolt

import (
	"bytes"

	"github.com/fleetcam/fleetcam/store"
)

// Drivers are kept as JSON under their 8-byte id in drivers, with three
// indexes to the id: driver_codes (organization id, 0, PIN),
// driver_third_party (organization id, 0, third-party id) and driver_qr
// (QR payload).

// drivers is the driver set of one transaction.
type drivers struct{ t *tx }

// Drivers implements store.DriverRecords.
func (t *tx) Drivers() store.DriverSet { return drivers{t} }

// driverIndexes are the index keys of d, in the order of driverIndexBuckets.
func driverIndexes(d *store.Driver) [3][]byte {
	return [3][]byte{
		compositeKey(d.OrganizationID, d.Code),
		compositeKey(d.OrganizationID, d.ThirdPartyID),
		[]byte(d.QRPayload),
	}
}

var driverIndexBuckets = [3][]byte{bucketDriverCodes, bucketDriverThirdParty, bucketDriverQR}

// Get implements store.DriverSet.
func (s drivers) Get(id int64) (*store.Driver, error) {
	return lookupJSON(s.t.bucket(bucketDrivers), itob(id), store.Driver{})
}

// Insert implements store.DriverSet.
func (s drivers) Insert(d *store.Driver) error {
	if err := s.t.drawID(bucketDrivers, &d.ID); err != nil {
		return err
	}
	return s.put(d, nil)
}

// Update implements store.DriverSet.
func (s drivers) Update(d *store.Driver) error {
	prev, err := s.Get(d.ID)
	if err != nil {
		return err
	}
	return s.put(d, prev)
}

// put stores d and moves its indexes from those of prev (nil: a new driver).
func (s drivers) put(d, prev *store.Driver) error {
	next := driverIndexes(d)
	var old [3][]byte
	if prev != nil {
		old = driverIndexes(prev)
	}
	for i, name := range driverIndexBuckets {
		b := s.t.bucket(name)
		if old[i] != nil && !bytes.Equal(old[i], next[i]) {
			if err := b.Delete(old[i]); err != nil {
				return err
			}
		}
		if err := b.Put(next[i], itob(d.ID)); err != nil {
			return err
		}
	}
	return putJSON(s.t.bucket(bucketDrivers), itob(d.ID), d)
}

// Delete implements store.DriverSet.
func (s drivers) Delete(id int64) error {
	d, err := s.Get(id)
	if err != nil {
		return err
	}
	for i, k := range driverIndexes(d) {
		if err := s.t.bucket(driverIndexBuckets[i]).Delete(k); err != nil {
			return err
		}
	}
	return s.t.bucket(bucketDrivers).Delete(itob(id))
}

// IDByCode implements store.DriverSet.
func (s drivers) IDByCode(orgID int64, code string) (int64, error) {
	return s.lookup(bucketDriverCodes, compositeKey(orgID, code))
}

// IDByThirdPartyID implements store.DriverSet.
func (s drivers) IDByThirdPartyID(orgID int64, thirdPartyID string) (int64, error) {
	return s.lookup(bucketDriverThirdParty, compositeKey(orgID, thirdPartyID))
}

// IDByQR implements store.DriverSet.
func (s drivers) IDByQR(payload string) (int64, error) {
	return s.lookup(bucketDriverQR, []byte(payload))
}

// lookup reads the driver id at key of the index bucket name.
func (s drivers) lookup(name, key []byte) (int64, error) {
	id := s.t.bucket(name).Get(key)
	if id == nil {
		return 0, store.NotFound("")
	}
	return btoi(id), nil
}

// List implements store.DriverSet. It reads every driver: none of the
// indexes orders them by a sort key.
func (s drivers) List(f store.DriverFilter, o store.Sort, p store.Page) ([]store.Driver, int, error) {
	all, err := listJSON(s.t.bucket(bucketDrivers), nil, f.Match)
	if err != nil {
		return nil, 0, err
	}
	return store.SortDrivers(all, o, p)
}
