package bolt

import "github.com/fleetcam/fleetcam/store"

// groups are the device groups, JSON under their 8-byte id.
type groups struct{ t *tx }

// Groups implements store.DirectoryRecords.
func (t *tx) Groups() store.GroupRecords { return groups{t} }

// Get implements store.GroupRecords.
func (r groups) Get(id int64) (*store.Group, error) {
	return lookupJSON(r.t.bucket(bucketGroups), itob(id), store.Group{})
}

// Insert implements store.GroupRecords: ids are the bucket's sequence.
func (r groups) Insert(g *store.Group) error {
	if err := r.t.drawID(bucketGroups, &g.ID); err != nil {
		return err
	}
	return r.put(g)
}

// put stores g under its id.
func (r groups) put(g *store.Group) error {
	return putJSON(r.t.bucket(bucketGroups), itob(g.ID), g)
}

// List implements store.GroupRecords. Groups are not indexed by
// organization: it decodes every group.
func (r groups) List(orgID int64, p store.Page) ([]store.Group, int, error) {
	return filterJSON(r.t.bucket(bucketGroups), func(g *store.Group) bool { return g.OrganizationID == orgID }, p)
}

// Put implements store.GroupRecords.
func (r groups) Put(g *store.Group) error {
	return replaceJSON(r.t.bucket(bucketGroups), itob(g.ID), g, "group %d", g.ID)
}

// Delete implements store.GroupRecords.
func (r groups) Delete(id int64) error {
	return deleteStored(r.t.bucket(bucketGroups), itob(id), "group %d", id)
}
