package store

// DriverRecords are the record sets of drivers, their check-in sessions,
// wrong-PIN counts and device assignments, whose rules are in drivers.go,
// driversessions.go and driverassignments.go.
type DriverRecords interface {
	// DriverAssignments are the assignments of drivers to devices.
	DriverAssignments() DriverAssignmentSet
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
