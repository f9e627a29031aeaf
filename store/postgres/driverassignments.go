package postgres

import (
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// Driver assignments are rows of driver_assignments, read by device
// (driver_assignments_device) or by driver (driver_assignments_driver).

// driverAssignments is the driver assignment set of one transaction.
type driverAssignments struct{ t *tx }

// DriverAssignments implements store.DriverRecords.
func (t *tx) DriverAssignments() store.DriverAssignmentSet { return driverAssignments{t} }

// assignmentColumns are the columns ByDevice and ByDriver read, in order.
const assignmentColumns = `id, organization_id, driver_id, imei, starts_at, ends_at, created_at, ownership`

// Insert implements store.DriverAssignmentSet.
func (s driverAssignments) Insert(a *store.DriverAssignment) error {
	s.t.memo.assignments = nil
	return getOne(s.t, `INSERT INTO driver_assignments (organization_id, driver_id, imei, starts_at,
		ends_at, created_at, ownership) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, []any{&a.ID},
		a.OrganizationID, a.DriverID, a.IMEI, a.Start.UTC(), nullTime(a.End), a.CreatedAt.UTC(), a.Ownership)
}

// Update implements store.DriverAssignmentSet.
func (s driverAssignments) Update(a *store.DriverAssignment) error {
	s.t.memo.assignments = nil
	tag, err := s.t.exec(`UPDATE driver_assignments SET organization_id = $2, driver_id = $3, imei = $4,
		starts_at = $5, ends_at = $6, created_at = $7, ownership = $8 WHERE id = $1`,
		a.ID, a.OrganizationID, a.DriverID, a.IMEI, a.Start.UTC(), nullTime(a.End), a.CreatedAt.UTC(), a.Ownership)
	return affected(tag, err, "driver assignment %d", a.ID)
}

// Delete implements store.DriverAssignmentSet.
func (s driverAssignments) Delete(id int64) error {
	s.t.memo.assignments = nil
	tag, err := s.t.exec(`DELETE FROM driver_assignments WHERE id = $1`, id)
	return affected(tag, err, "driver assignment %d", id)
}

// ByDevice implements store.DriverAssignmentSet.
func (s driverAssignments) ByDevice(imei string) ([]store.DriverAssignment, error) {
	if b := s.t.bulk; b != nil {
		return b.deviceAssignments(imei)
	}
	return s.byDevice(imei)
}

// byDevice reads the assignments of imei: those read ahead, or the table's.
func (s driverAssignments) byDevice(imei string) ([]store.DriverAssignment, error) {
	if as, ok := s.t.memo.assignments[imei]; ok {
		return slices.Clone(as), nil
	}
	return s.list(`SELECT `+assignmentColumns+` FROM driver_assignments WHERE imei = $1 ORDER BY starts_at, id`, imei)
}

// ByDriver implements store.DriverAssignmentSet.
func (s driverAssignments) ByDriver(driverID int64) ([]store.DriverAssignment, error) {
	return s.list(`SELECT `+assignmentColumns+` FROM driver_assignments WHERE driver_id = $1
		ORDER BY imei, starts_at, id`, driverID)
}

// list reads the assignments query answers.
func (s driverAssignments) list(query string, args ...any) ([]store.DriverAssignment, error) {
	return collect(s.t, func(row pgx.CollectableRow) (store.DriverAssignment, error) { return scanAssignment(row) }, query, args...)
}

// scanAssignment reads one row of assignmentColumns.
func scanAssignment(row pgx.Row) (store.DriverAssignment, error) {
	var a store.DriverAssignment
	var end pgtype.Timestamptz
	err := row.Scan(&a.ID, &a.OrganizationID, &a.DriverID, &a.IMEI, &a.Start, &end, &a.CreatedAt, &a.Ownership)
	a.Start, a.End, a.CreatedAt = a.Start.UTC(), timeOf(end), a.CreatedAt.UTC()
	return a, err
}
