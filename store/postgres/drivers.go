package postgres

import (
	"errors"
	"fmt"
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

// driverColumns are the columns scanDriver reads, in its order.
const driverColumns = `id, organization_id, third_party_id, first_name, last_name, driving_license,
	code, qr_payload, is_active, created_at, updated_at`

// scanDriver reads one row of driverColumns, and extra columns after them.
func scanDriver(row pgx.Row, extra ...any) (*store.Driver, error) {
	var d store.Driver
	err := row.Scan(append([]any{&d.ID, &d.OrganizationID, &d.ThirdPartyID, &d.FirstName, &d.LastName,
		&d.DrivingLicense, &d.Code, &d.QRPayload, &d.IsActive, &d.CreatedAt, &d.UpdatedAt}, extra...)...)
	if err != nil {
		return nil, err
	}
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return &d, nil
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
	d, err := scanDriver(driverRow{s.t, id})
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("driver %d", id)
	}
	return d, classify(err)
}

// driverRow is a driver's row as getMemo reads it, for scanDriver.
type driverRow struct {
	t  *tx
	id int64
}

// Scan implements pgx.Row.
func (r driverRow) Scan(dest ...any) error {
	return getMemo(r.t, tableDrivers, strconv.FormatInt(r.id, 10), `SELECT `+driverColumns+` FROM drivers WHERE id = $1`, dest, r.id)
}

// Insert implements store.DriverSet.
func (s drivers) Insert(d *store.Driver) error {
	s.t.forgetDrivers(0)
	err := s.t.pg.QueryRow(s.t.ctx, `INSERT INTO drivers (organization_id, third_party_id, first_name, last_name,
		driving_license, code, qr_payload, is_active, created_at, updated_at, first_name_folded, last_name_folded)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
		d.OrganizationID, d.ThirdPartyID, d.FirstName, d.LastName, d.DrivingLicense, d.Code, d.QRPayload,
		d.IsActive, d.CreatedAt.UTC(), d.UpdatedAt.UTC(), store.FoldCase(d.FirstName), store.FoldCase(d.LastName)).Scan(&d.ID)
	return classify(err)
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
	return s.lookup(`SELECT id FROM drivers WHERE organization_id = $1 AND code = $2`, orgID, code)
}

// IDByThirdPartyID implements store.DriverSet.
func (s drivers) IDByThirdPartyID(orgID int64, thirdPartyID string) (int64, error) {
	return s.lookup(`SELECT id FROM drivers WHERE organization_id = $1 AND third_party_id = $2`, orgID, thirdPartyID)
}

// IDByQR implements store.DriverSet.
func (s drivers) IDByQR(payload string) (int64, error) {
	return s.lookup(`SELECT id FROM drivers WHERE qr_payload = $1`, payload)
}

// lookup reads the one driver id query answers; ErrNotFound when none.
func (s drivers) lookup(query string, args ...any) (int64, error) {
	var id int64
	err := s.t.pg.QueryRow(s.t.ctx, query, args...).Scan(&id)
	return id, classify(err)
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
	var q driverQuery
	q.filter(f)
	plain := q // without the name expressions
	firstOK := q.regexp("first_name", f.FirstName)
	lastOK := q.regexp("last_name", f.LastName)
	if !firstOK || !lastOK {
		return s.listMatching(q, f, o, p)
	}
	if f.FirstName == nil && f.LastName == nil {
		ds, total, err := s.page(s.t.pg, q, by, o.Desc, p)
		return ds, total, classify(err)
	}
	// PostgreSQL may still refuse a translated expression (too complex, a
	// character the database's encoding lacks): the query runs in a
	// savepoint, and a refusal filters here instead.
	sp, err := s.t.pg.Begin(s.t.ctx)
	if err != nil {
		return nil, 0, classify(err)
	}
	ds, total, err := s.page(sp, q, by, o.Desc, p)
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

// driverQuery is the WHERE clause of a driver list and its arguments.
type driverQuery struct {
	where []string
	args  []any
}

// add appends the condition cond, whose %d is the placeholder of v.
func (q *driverQuery) add(cond string, v any) {
	q.args = append(q.args, v)
	q.where = append(q.where, fmt.Sprintf(cond, len(q.args)))
}

// filter adds the conditions of f but its name expressions.
func (q *driverQuery) filter(f store.DriverFilter) {
	if f.OrganizationIDs != nil {
		ids := []int64{}
		for id, in := range f.OrganizationIDs {
			if in {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		q.add("organization_id = ANY($%d)", ids)
	}
	if f.ID != 0 {
		q.add("id = $%d", f.ID)
	}
	if f.ThirdPartyID != "" {
		q.add("third_party_id = $%d", f.ThirdPartyID)
	}
	if f.IsActive != nil {
		q.add("is_active = $%d", *f.IsActive)
	}
}

// regexp adds the condition that column matches re; false when re has no
// PostgreSQL equivalent.
func (q *driverQuery) regexp(column string, re *regexp.Regexp) bool {
	if re == nil {
		return true
	}
	pattern, ok := pgRegexp(re.String())
	if ok {
		q.add(column+" ~ $%d", pattern)
	}
	return ok
}

// whereClause is the WHERE clause of q, or nothing.
func (q *driverQuery) whereClause() string {
	if len(q.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(q.where, " AND ")
}

// page runs q in db (the transaction or a savepoint of it) ordered by the
// expression by, then id, and returns the page p of the drivers and how
// many q matches.
func (s drivers) page(db pgx.Tx, q driverQuery, by string, desc bool, p store.Page) ([]store.Driver, int, error) {
	dir := ""
	if desc {
		dir = " DESC"
	}
	order := "id" + dir
	if by != "" {
		order = by + dir + ", " + order
	}
	sql := `SELECT ` + driverColumns + `, count(*) OVER () FROM drivers` + q.whereClause() + ` ORDER BY ` + order
	args := q.args
	if p.Limit > 0 {
		args = append(slices.Clip(args), p.Limit)
		sql += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	if p.Offset > 0 {
		args = append(slices.Clip(args), p.Offset)
		sql += fmt.Sprintf(" OFFSET $%d", len(args))
	}
	rows, err := db.Query(s.t.ctx, sql, args...)
	if err != nil {
		return nil, 0, err
	}
	var out []store.Driver
	total := 0
	for rows.Next() {
		d, err := scanDriver(rows, &total)
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		out = append(out, *d)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(out) == 0 && p.Offset > 0 {
		// A page past the end has no row to carry the count.
		err = db.QueryRow(s.t.ctx, `SELECT count(*) FROM drivers`+q.whereClause(), q.args...).Scan(&total)
	}
	return out, total, err
}

// listMatching reads the drivers q selects and filters, orders and pages
// them with the store's rules.
func (s drivers) listMatching(q driverQuery, f store.DriverFilter, o store.Sort, p store.Page) ([]store.Driver, int, error) {
	read, err := collect(s.t, scanValue(func(row pgx.Row) (*store.Driver, error) { return scanDriver(row) }),
		`SELECT `+driverColumns+` FROM drivers`+q.whereClause(), q.args...)
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
