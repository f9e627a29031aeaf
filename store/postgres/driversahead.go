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

// prefetchAssignments reads the driver assignments of the devices of $1.
const prefetchAssignments = `SELECT ` + assignmentColumns + ` FROM driver_assignments
	WHERE imei = ANY($1) ORDER BY imei, starts_at, id`

// viewCredentials reads the drivers the assignments of the devices $1
// name: each device's assignments by its index (OFFSET 0 keeps the
// subquery from being flattened into a join, which may be planned as a
// walk of both tables' whole indexes), then each driver by its id.
var viewCredentials = prefetchSpec{table: tableDrivers, sql: `SELECT d.* FROM (SELECT DISTINCT a.driver_id
		FROM unnest($1::text[]) AS i (imei)
		CROSS JOIN LATERAL (SELECT driver_id FROM driver_assignments WHERE imei = i.imei OFFSET 0) a) x
	CROSS JOIN LATERAL (SELECT id::text AS key, ` + driverColumns + ` FROM drivers WHERE id = x.driver_id LIMIT 1) d`}

// viewActiveOrgs lists each device of $1 whose configuration is due
// (never acknowledged, or at a version before its settings') and that has
// no driver assignment, with its organization: the configuration of such
// a device carries its organization's active drivers. Each table is
// probed by device, as in the views' joined reads (joinRows): flattened
// into anti-joins, the reads were planned as scans of every device's
// link.
const viewActiveOrgs = `SELECT i.imei, v.organization_id FROM unnest($1::text[]) AS i (imei)
	CROSS JOIN LATERAL (SELECT organization_id FROM devices WHERE imei = i.imei LIMIT 1) v
	LEFT JOIN LATERAL (SELECT true AS found FROM driver_assignments WHERE imei = i.imei LIMIT 1) a ON true
	LEFT JOIN LATERAL (SELECT config_acked_at, acked_config_version FROM device_links WHERE imei = i.imei LIMIT 1) l ON true
	LEFT JOIN LATERAL (SELECT version FROM device_settings WHERE imei = i.imei LIMIT 1) s ON true
	WHERE a.found IS NULL
		AND (l.config_acked_at IS NOT NULL AND l.acked_config_version >= coalesce(s.version, 0)) IS NOT TRUE`

// viewActiveDrivers reads the active drivers of the organizations
// viewActiveOrgs lists, each organization's by its index: ordered by id
// within the organization, which the index gives, rather than a walk of
// every driver in id order.
const viewActiveDrivers = `SELECT d.* FROM (SELECT DISTINCT organization_id FROM (` + viewActiveOrgs + `) due) o
	CROSS JOIN LATERAL (SELECT ` + driverColumns + ` FROM drivers
		WHERE organization_id = o.organization_id AND is_active ORDER BY id) d
	ORDER BY d.id`

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

// readActiveDriversAhead reads what viewActiveOrgs and viewActiveDrivers
// answer: the organization of each device whose configuration carries
// its organization's active drivers, and those drivers by organization.
func readActiveDriversAhead(br pgx.BatchResults) (due map[string]int64, drivers map[int64][]store.Driver, err error) {
	rows, err := br.Query()
	if err != nil {
		return nil, nil, classify(err)
	}
	due = map[string]int64{}
	var imei string
	var org int64
	if _, err := pgx.ForEachRow(rows, []any{&imei, &org}, func() error {
		due[imei] = org
		return nil
	}); err != nil {
		return nil, nil, classify(err)
	}
	rows, err = br.Query()
	if err != nil {
		return nil, nil, classify(err)
	}
	ds, err := pgx.CollectRows(rows, scanFields(driverFields))
	if err != nil {
		return nil, nil, classify(err)
	}
	drivers = map[int64][]store.Driver{}
	for _, d := range ds {
		drivers[d.OrganizationID] = append(drivers[d.OrganizationID], d)
	}
	return due, drivers, nil
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
