package bolt

import (
	"bytes"

	"github.com/fleetcam/fleetcam/store"
)

// Driver assignments are kept as JSON in driver_assignments under imei, 0,
// start (unix ms, 8 bytes), id (8 bytes); driver_assign_by_id maps each
// assignment's id to that key. The ids are the sequence of
// driver_assignments.

// driverAssignmentKey is the key of a in driver_assignments.
func driverAssignmentKey(a *store.DriverAssignment) []byte {
	return append(append(compositeKey(a.IMEI, ""), itob(max(a.Start.UnixMilli(), 0))...), itob(a.ID)...)
}

// driverAssignments is the driver assignment set of one transaction.
type driverAssignments struct{ t *tx }

// DriverAssignments implements store.DriverRecords.
func (t *tx) DriverAssignments() store.DriverAssignmentSet { return driverAssignments{t} }

// Insert implements store.DriverAssignmentSet.
func (s driverAssignments) Insert(a *store.DriverAssignment) error {
	if err := s.t.drawID(bucketDriverAssignments, &a.ID); err != nil {
		return err
	}
	return s.put(a)
}

// put stores the new assignment a under its key, with its id's entry.
func (s driverAssignments) put(a *store.DriverAssignment) error {
	k := driverAssignmentKey(a)
	if err := putJSON(s.t.bucket(bucketDriverAssignments), k, a); err != nil {
		return err
	}
	return s.t.bucket(bucketDriverAssignIDs).Put(itob(a.ID), k)
}

// Update implements store.DriverAssignmentSet. An assignment whose device
// or start changed moves to its new key.
func (s driverAssignments) Update(a *store.DriverAssignment) error {
	ids := s.t.bucket(bucketDriverAssignIDs)
	old := ids.Get(itob(a.ID))
	if old == nil {
		return store.NotFound("driver assignment %d", a.ID)
	}
	b := s.t.bucket(bucketDriverAssignments)
	k := driverAssignmentKey(a)
	if !bytes.Equal(old, k) {
		if err := b.Delete(bytes.Clone(old)); err != nil {
			return err
		}
		if err := ids.Put(itob(a.ID), k); err != nil {
			return err
		}
	}
	return putJSON(b, k, a)
}

// Delete implements store.DriverAssignmentSet.
func (s driverAssignments) Delete(id int64) error {
	ids := s.t.bucket(bucketDriverAssignIDs)
	k := ids.Get(itob(id))
	if k == nil {
		return store.NotFound("driver assignment %d", id)
	}
	if err := s.t.bucket(bucketDriverAssignments).Delete(bytes.Clone(k)); err != nil {
		return err
	}
	return ids.Delete(itob(id))
}

// ByDevice implements store.DriverAssignmentSet.
func (s driverAssignments) ByDevice(imei string) ([]store.DriverAssignment, error) {
	return listJSON[store.DriverAssignment](s.t.bucket(bucketDriverAssignments), compositeKey(imei, ""), nil)
}

// ByDriver implements store.DriverAssignmentSet. It reads every assignment:
// none of the keys leads to a driver's.
func (s driverAssignments) ByDriver(driverID int64) ([]store.DriverAssignment, error) {
	return listJSON(s.t.bucket(bucketDriverAssignments), nil, func(a *store.DriverAssignment) bool { return a.DriverID == driverID })
}
