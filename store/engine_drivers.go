package store

// DriverRecords are the record sets of drivers, their codes, sessions and device assignments, whose rules are in drivers.go, driversessions.go, driverassignments.go.
type DriverRecords interface{}
