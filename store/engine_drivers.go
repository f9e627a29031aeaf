package store

import "time"

// DriverRecords are the record sets of drivers, their check-in sessions,
// wrong-PIN counts and device assignments, whose rules are in drivers.go,
// driversessions.go and driverassignments.go.
type DriverRecords interface {
	// Drivers are the drivers of every organization.
	Drivers() DriverSet
	// DriverSessions are the check-in sessions of every device.
	DriverSessions() DriverSessionSet
	// DriverPinFailures are the recent wrong PINs of every device.
	DriverPinFailures() DriverPinFailureSet
	// DriverAssignments are the assignments of drivers to devices.
	DriverAssignments() DriverAssignmentSet
}

// DriverSet keeps drivers by id, with the indexes that find a driver by its
// PIN or third-party id within its organization and by its QR payload. The
// store decides that these are unique; the engine only answers which driver
// has one.
type DriverSet interface {
	// Get returns the driver with id; ErrNotFound when there is none.
	Get(id int64) (*Driver, error)
	// Insert gives d the next driver id and stores it with its indexes.
	Insert(d *Driver) error
	// Update stores d over the driver with d.ID and moves its indexes to
	// its new code, third-party id and QR payload; ErrNotFound when there
	// is no such driver.
	Update(d *Driver) error
	// Delete removes the driver with id and its indexes; ErrNotFound when
	// there is none.
	Delete(id int64) error
	// IDByCode returns the id of the driver of orgID whose PIN is code;
	// ErrNotFound when there is none.
	IDByCode(orgID int64, code string) (int64, error)
	// IDByThirdPartyID returns the id of the driver of orgID with the
	// third-party id; ErrNotFound when there is none.
	IDByThirdPartyID(orgID int64, thirdPartyID string) (int64, error)
	// IDByQR returns the id of the driver whose QR code carries payload;
	// ErrNotFound when there is none.
	IDByQR(payload string) (int64, error)
	// List returns the page p of the drivers f matches in the order s and
	// how many f matches in all. s.Key is empty or one of the Driver sort
	// keys; records equal under it are in id order (SortDrivers orders a
	// list the same way).
	List(f DriverFilter, s Sort, p Page) ([]Driver, int, error)
}

// DriverSessionSet keeps the check-in sessions of each device, by device and
// start, and which of them is the device's open one. A device has at most
// one open session.
type DriverSessionSet interface {
	// Current returns the open session of imei, or nil when nobody is
	// checked in there.
	Current(imei string) (*DriverSession, error)
	// Begin stores s as the open session of s.IMEI, its start kept to the
	// millisecond. The device has none open (the store ends it first); a
	// session of the device with the same start, to the millisecond, is
	// replaced.
	Begin(s *DriverSession) error
	// End stores s, the open session of s.IMEI with its end set, and leaves
	// the device with no open session; ErrNotFound when none is open.
	End(s *DriverSession) error
	// AllCurrent returns the open session of every device, in IMEI order.
	AllCurrent() ([]DriverSession, error)
	// LastStarted returns the session of imei that started last at or
	// before at, to the millisecond, open or not; nil when there is none.
	LastStarted(imei string, at time.Time) (*DriverSession, error)
	// StartedBy returns the sessions of imei that started at or before
	// until, oldest first.
	StartedBy(imei string, until time.Time) ([]DriverSession, error)
	// Purge runs one batch of the retention purge of sessions (see
	// SeriesPurge); the open session of a device is never purged.
	Purge(p SeriesPurge) (int, []byte, error)
}

// DriverPinFailureSet keeps the times of each device's recent wrong PINs.
type DriverPinFailureSet interface {
	// Get returns the wrong-PIN times kept for imei, oldest first; none
	// when there are none.
	Get(imei string) ([]time.Time, error)
	// Put replaces the wrong-PIN times kept for imei with times.
	Put(imei string, times []time.Time) error
	// Delete forgets the wrong PINs of imei; none is no error.
	Delete(imei string) error
}

// DriverAssignmentSet keeps driver assignments by device and start, with
// their ids.
type DriverAssignmentSet interface {
	// Insert gives a the next assignment id and stores it.
	Insert(a *DriverAssignment) error
	// Update stores a over the assignment with a.ID; ErrNotFound when there
	// is no such assignment.
	Update(a *DriverAssignment) error
	// Delete removes the assignment with id; ErrNotFound when there is
	// none.
	Delete(id int64) error
	// ByDevice returns the assignments of imei by start, then id.
	ByDevice(imei string) ([]DriverAssignment, error)
	// ByDriver returns the assignments of driverID by device, then start,
	// then id.
	ByDriver(driverID int64) ([]DriverAssignment, error)
}
