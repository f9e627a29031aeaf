package postgres

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fleetcam/fleetcam/store"
)

// Drivers are rows of drivers; the unique constraints on (organization,
// PIN), (organization, third-party id) and QR payload are the indexes the
// lookups read.

var _ store.DriverRecords = (*tx)(nil)

// drivers is the driver set of one transaction.
type drivers struct{ t *tx }

// Drivers implements store.DriverRecords.
func (t *tx) Drivers() store.DriverSet { return drivers{t} }

// driverColumns are the columns driverFields scans.
const driverColumns = `id, organization_id, third_party_id, first_name, last_name, driving_license,
	code, qr_payload, is_active, created_at, updated_at`

// driverFields are the scan targets of driverColumns in d.
func driverFields(d *store.Driver) []any {
	return []any{&d.ID, &d.OrganizationID, &d.ThirdPartyID, &d.FirstName, &d.LastName, &d.DrivingLicense,
		&d.Code, &d.QRPayload, &d.IsActive, zeroTime{&d.CreatedAt}, zeroTime{&d.UpdatedAt}}
}

// Get implements store.DriverSet; a device's view reads the drivers its
// assignments name ahead (driversahead.go).
func (s drivers) Get(id int64) (*store.Driver, error) {
	if b := s.t.bulk; b != nil {
		return b.driver(id)
	}
	return s.get(id)
}

// get reads the driver with id: read ahead, or the table's.
func (s drivers) get(id int64) (*store.Driver, error) {
	var d store.Driver
	err := getMemo(s.t, tableDrivers, strconv.FormatInt(id, 10), `SELECT `+driverColumns+` FROM drivers WHERE id = $1`,
		driverFields(&d), id)
	if err != nil {
		return nil, store.NotFoundAs(err, "driver %d", id)
	}
	return &d, nil
}

// Insert implements store.DriverSet.
func (s drivers) Insert(d *store.Driver) error {
	s.t.forgetDrivers(0)
	return getOne(s.t, `INSERT INTO drivers (organization_id, third_party_id, first_name, last_name,
		driving_license, code, qr_payload, is_active, created_at, updated_at, first_name_folded, last_name_folded)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`, []any{&d.ID},
		d.OrganizationID, d.ThirdPartyID, d.FirstName, d.LastName, d.DrivingLicense, d.Code, d.QRPayload,
		d.IsActive, d.CreatedAt.UTC(), d.UpdatedAt.UTC(), store.FoldCase(d.FirstName), store.FoldCase(d.LastName))
}

// Update implements store.DriverSet.
func (s drivers) Update(d *store.Driver) error {
	s.t.forgetDrivers(d.ID)
	tag, err := s.t.exec(`UPDATE drivers SET organization_id = $2, third_party_id = $3, first_name = $4,
		last_name = $5, driving_license = $6, code = $7, qr_payload = $8, is_active = $9, created_at = $10,
		updated_at = $11, first_name_folded = $12, last_name_folded = $13 WHERE id = $1`,
		d.ID, d.OrganizationID, d.ThirdPartyID, d.FirstName, d.LastName, d.DrivingLicense, d.Code, d.QRPayload,
		d.IsActive, d.CreatedAt.UTC(), d.UpdatedAt.UTC(), store.FoldCase(d.FirstName), store.FoldCase(d.LastName))
	return affected(tag, err, "driver %d", d.ID)
}

// Delete implements store.DriverSet.
func (s drivers) Delete(id int64) error {
	s.t.forgetDrivers(id)
	tag, err := s.t.exec(`DELETE FROM drivers WHERE id = $1`, id)
	return affected(tag, err, "driver %d", id)
}

// IDByCode implements store.DriverSet.
func (s drivers) IDByCode(orgID int64, code string) (int64, error) {
	return queryValue[int64](s.t, `SELECT id FROM drivers WHERE organization_id = $1 AND code = $2`, orgID, code)
}

// IDByThirdPartyID implements store.DriverSet.
func (s drivers) IDByThirdPartyID(orgID int64, thirdPartyID string) (int64, error) {
	return queryValue[int64](s.t, `SELECT id FROM drivers WHERE organization_id = $1 AND third_party_id = $2`, orgID, thirdPartyID)
}

// IDByQR implements store.DriverSet.
func (s drivers) IDByQR(payload string) (int64, error) {
	return queryValue[int64](s.t, `SELECT id FROM drivers WHERE qr_payload = $1`, payload)
}

// driverOrder is the ORDER BY expression of each driver sort key; ties go
// by id. Names compare by their store.FoldCase keys, which the rows hold
// (first_name_folded, last_name_folded), and every text compares by code
// point (COLLATE "C"), as the store's comparisons of Go strings do.
var driverOrder = map[string]string{
	"":                           "",
	store.DriverByCreatedAt:      "",
	store.DriverByDrivingLicense: `driving_license COLLATE "C"`,
	store.DriverByFirstName:      `first_name_folded COLLATE "C"`,
	store.DriverByLastName:       `last_name_folded COLLATE "C"`,
}

// List implements store.DriverSet: the filter is the WHERE clause, the
// sort its ORDER BY and the page its LIMIT and OFFSET. The name filters are
// Go regular expressions, translated to PostgreSQL's (driverregexp.go); one
// that PostgreSQL cannot run as Go does is applied here, to the drivers the
// rest of the filter selects.
func (s drivers) List(f store.DriverFilter, o store.Sort, p store.Page) ([]store.Driver, int, error) {
	if b := s.t.bulk; b != nil {
		return b.driverList(f, o, p)
	}
	return s.list(f, o, p)
}

// list reads the page p of the drivers f selects in the order o.
func (s drivers) list(f store.DriverFilter, o store.Sort, p store.Page) ([]store.Driver, int, error) {
	by, ok := driverOrder[o.Key]
	if !ok {
		return store.SortDrivers(nil, o, p) // the error naming the keys there are
	}
	if ds, total, ok, err := s.t.activeDriversAhead(f, o, p); ok {
		return ds, total, err
	}
	var w where
	filterDrivers(&w, f)
	plain := w // without the name expressions
	firstOK := matchRegexp(&w, "first_name", f.FirstName)
	lastOK := matchRegexp(&w, "last_name", f.LastName)
	if !firstOK || !lastOK {
		return s.listMatching(w, f, o, p)
	}
	if f.FirstName == nil && f.LastName == nil {
		return s.page(s.t.pg, w, by, o.Desc, p)
	}
	// PostgreSQL may still refuse a translated expression (too complex, a
	// character the database's encoding lacks): the query runs in a
	// savepoint, and a refusal filters here instead.
	sp, err := s.t.pg.Begin(s.t.ctx)
	if err != nil {
		return nil, 0, classify(err)
	}
	ds, total, err := s.page(sp, w, by, o.Desc, p)
	if err == nil {
		return ds, total, classify(sp.Commit(s.t.ctx))
	}
	if rerr := sp.Rollback(s.t.ctx); rerr != nil || !refusedRegexp(err) {
		return nil, 0, classify(err)
	}
	return s.listMatching(plain, f, o, p)
}

// refusedRegexp reports an error of PostgreSQL's about a regular
// expression: invalid (2201B) or beyond its limits (54…).
func refusedRegexp(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "2201B" || strings.HasPrefix(pe.Code, "54"))
}

// filterDrivers adds to w the conditions of f but its name expressions.
func filterDrivers(w *where, f store.DriverFilter) {
	if f.OrganizationIDs != nil {
		ids := trueKeys(f.OrganizationIDs)
		slices.Sort(ids)
		w.and("organization_id = ANY(" + w.arg(ids) + ")")
	}
	if f.ID != 0 {
		w.and("id = " + w.arg(f.ID))
	}
	if f.ThirdPartyID != "" {
		w.and("third_party_id = " + w.arg(f.ThirdPartyID))
	}
	if f.IsActive != nil {
		w.and("is_active = " + w.arg(*f.IsActive))
	}
}

// matchRegexp adds to w the condition that column matches re; false when
// re has no PostgreSQL equivalent.
func matchRegexp(w *where, column string, re *regexp.Regexp) bool {
	if re == nil {
		return true
	}
	pattern, ok := pgRegexp(re.String())
	if ok {
		w.and(column + " ~ " + w.arg(pattern))
	}
	return ok
}

// page runs the query w in db (the transaction or a savepoint of it)
// ordered by the expression by, then id, and returns the page p of the
// drivers and how many w matches.
func (s drivers) page(db pgx.Tx, w where, by string, desc bool, p store.Page) ([]store.Driver, int, error) {
	dir := ""
	if desc {
		dir = " DESC"
	}
	order := "id" + dir
	if by != "" {
		order = by + dir + ", " + order
	}
	return listPage(&tx{ctx: s.t.ctx, pg: db}, driverColumns, "drivers", &w, order, p, driverFields)
}

// listMatching reads the drivers w selects and filters, orders and pages
// them with the store's rules.
func (s drivers) listMatching(w where, f store.DriverFilter, o store.Sort, p store.Page) ([]store.Driver, int, error) {
	read, err := collect(s.t, scanFields(driverFields), `SELECT `+driverColumns+` FROM drivers`+w.String(), w.args...)
	if err != nil {
		return nil, 0, err
	}
	var all []store.Driver
	for _, d := range read {
		if f.Match(&d) {
			all = append(all, d)
		}
	}
	return store.SortDrivers(all, o, p)
}
