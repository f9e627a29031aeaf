package postgres

import (
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// What a device's configuration needs of its drivers, read ahead: its
// driver assignments (with every group commit and device view), the
// drivers they name, and, for a device without assignments, its
// organization's active drivers (store.ViewDriverCredentials).

// prefetchAssignments reads the driver assignments of the devices of $1;
// viewAssignments those of the device $1 (oneDevice, memo.go).
const (
	prefetchAssignments = `SELECT ` + assignmentColumns + ` FROM driver_assignments
	WHERE imei = ANY($1) ORDER BY imei, starts_at, id`
	viewAssignments = `SELECT ` + assignmentColumns + ` FROM driver_assignments
	WHERE imei = $1 ORDER BY starts_at, id`
)

// credentialSpecs read the drivers the assignments of the device $1 name.
var credentialSpecs = []prefetchSpec{
	{table: tableDrivers, sql: `SELECT id::text, ` + driverColumns + ` FROM drivers
		WHERE id IN (SELECT driver_id FROM driver_assignments WHERE imei = $1)`},
}

// viewActiveOrgs lists the organization of the device $1 when its
// configuration is due (never acknowledged, or at a version before its
// settings') and it has no driver assignment: the configuration of such a
// device carries its organization's active drivers.
const viewActiveOrgs = `SELECT DISTINCT v.organization_id FROM devices v
	WHERE v.imei = $1
		AND NOT EXISTS (SELECT 1 FROM driver_assignments a WHERE a.imei = v.imei)
		AND NOT EXISTS (SELECT 1 FROM device_links l WHERE l.imei = v.imei AND l.config_acked_at IS NOT NULL
			AND l.acked_config_version >= coalesce((SELECT s.version FROM device_settings s WHERE s.imei = v.imei), 0))`

// viewActiveDrivers reads the active drivers of the organization
// viewActiveOrgs lists.
const viewActiveDrivers = `SELECT ` + driverColumns + ` FROM drivers
	WHERE is_active AND organization_id IN (` + viewActiveOrgs + `) ORDER BY id`

// readAssignmentsAhead keeps the assignments prefetchAssignments answers
// for the devices want, each device's complete.
func (t *tx) readAssignmentsAhead(br pgx.BatchResults, want []string) error {
	rows, err := br.Query()
	if err != nil {
		return classify(err)
	}
	as, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.DriverAssignment, error) {
		return scanAssignment(row)
	})
	if err != nil {
		return classify(err)
	}
	if t.memo.assignments == nil {
		t.memo.assignments = map[string][]store.DriverAssignment{}
	}
	for _, imei := range want {
		t.memo.assignments[imei] = nil
	}
	for _, a := range as {
		t.memo.assignments[a.IMEI] = append(t.memo.assignments[a.IMEI], a)
	}
	return nil
}

// readActiveDriversAhead keeps the organizations viewActiveOrgs lists
// and the active drivers viewActiveDrivers reads of them.
func (t *tx) readActiveDriversAhead(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return classify(err)
	}
	orgs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return classify(err)
	}
	rows, err = br.Query()
	if err != nil {
		return classify(err)
	}
	ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Driver, error) {
		d, err := scanDriver(row)
		if err != nil {
			return store.Driver{}, err
		}
		return *d, nil
	})
	if err != nil {
		return classify(err)
	}
	if t.memo.activeDrivers == nil {
		t.memo.activeDrivers = map[int64][]store.Driver{}
	}
	for _, org := range orgs {
		t.memo.activeDrivers[org] = []store.Driver{}
	}
	for _, d := range ds {
		t.memo.activeDrivers[d.OrganizationID] = append(t.memo.activeDrivers[d.OrganizationID], d)
	}
	return nil
}

// activeDriversAhead answers List of f, o and p from the active drivers
// read ahead, when f asks for the active drivers of one organization
// whose drivers were read ahead and o is their id order.
func (t *tx) activeDriversAhead(f store.DriverFilter, o store.Sort, p store.Page) ([]store.Driver, int, bool, error) {
	if len(f.OrganizationIDs) != 1 || f.ID != 0 || f.ThirdPartyID != "" || f.FirstName != nil || f.LastName != nil ||
		f.IsActive == nil || !*f.IsActive || o.Key != "" {
		return nil, 0, false, nil
	}
	for org, in := range f.OrganizationIDs {
		ds, ok := t.memo.activeDrivers[org]
		if !in || !ok {
			return nil, 0, false, nil
		}
		page, total, err := store.SortDrivers(slices.Clone(ds), o, p)
		return page, total, true, err
	}
	return nil, 0, false, nil
}

// forgetDrivers drops what the memo holds of drivers, one of which (id,
// or any when 0) is written.
func (t *tx) forgetDrivers(id int64) {
	t.memo.activeDrivers = nil
	if id != 0 {
		t.forget(tableDrivers, strconv.FormatInt(id, 10))
	}
}
