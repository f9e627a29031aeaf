package postgres

import "github.com/fleetcam/fleetcam/store"

// groups are the groups table.
type groups struct{ t *tx }

// Groups implements store.DirectoryRecords.
func (t *tx) Groups() store.GroupRecords { return groups{t} }

// groupColumns are the columns groupFields scans.
const groupColumns = `id, organization_id, name, created_at`

// groupFields are the scan targets of groupColumns in g.
func groupFields(g *store.Group) []any {
	return []any{&g.ID, &g.OrganizationID, &g.Name, zeroTime{&g.CreatedAt}}
}

// Get implements store.GroupRecords.
func (r groups) Get(id int64) (*store.Group, error) {
	return getRecord(r.t, `SELECT `+groupColumns+` FROM groups WHERE id = $1`, groupFields, id)
}

// Insert implements store.GroupRecords: ids are the table's identity.
func (r groups) Insert(g *store.Group) error {
	return getOne(r.t, `INSERT INTO groups (organization_id, name, created_at) VALUES ($1, $2, $3) RETURNING id`,
		[]any{&g.ID}, g.OrganizationID, g.Name, g.CreatedAt)
}

// List implements store.GroupRecords.
func (r groups) List(orgID int64, p store.Page) ([]store.Group, int, error) {
	var w where
	w.and("organization_id = " + w.arg(orgID))
	return listPage(r.t, groupColumns, "groups", &w, "id", p, groupFields)
}

// Put implements store.GroupRecords.
func (r groups) Put(g *store.Group) error {
	tag, err := r.t.exec(`UPDATE groups SET name = $2 WHERE id = $1`, g.ID, g.Name)
	return affected(tag, err, "group %d", g.ID)
}

// Delete implements store.GroupRecords.
func (r groups) Delete(id int64) error {
	tag, err := r.t.exec(`DELETE FROM groups WHERE id = $1`, id)
	return affected(tag, err, "group %d", id)
}
