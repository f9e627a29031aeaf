package postgres

import "github.com/fleetcam/fleetcam/store"

var _ store.DirectoryRecords = (*tx)(nil)

// partners are the partners table.
type partners struct{ t *tx }

// Partners implements store.DirectoryRecords.
func (t *tx) Partners() store.PartnerRecords { return partners{t} }

// partnerColumns are the columns partnerFields scans.
const partnerColumns = `id, name, created_at`

// partnerFields are the scan targets of partnerColumns in p.
func partnerFields(p *store.Partner) []any { return []any{&p.ID, &p.Name, zeroTime{&p.CreatedAt}} }

// Get implements store.PartnerRecords.
func (r partners) Get(id int64) (*store.Partner, error) {
	return getRecord(r.t, `SELECT `+partnerColumns+` FROM partners WHERE id = $1`, partnerFields, id)
}

// Insert implements store.PartnerRecords: ids are the table's identity.
func (r partners) Insert(p *store.Partner) error {
	return getOne(r.t, `INSERT INTO partners (name, created_at) VALUES ($1, $2) RETURNING id`,
		[]any{&p.ID}, p.Name, p.CreatedAt)
}

// Count implements store.PartnerRecords.
func (r partners) Count() (int, error) {
	var n int
	err := getOne(r.t, `SELECT count(*) FROM partners`, []any{&n})
	return n, err
}
