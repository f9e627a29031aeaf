package bolt

import (
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
)

// organizations are the organizations, JSON under their 8-byte id.
type organizations struct{ t *tx }

// Organizations implements store.DirectoryRecords.
func (t *tx) Organizations() store.OrganizationRecords { return organizations{t} }

// Get implements store.OrganizationRecords.
func (r organizations) Get(id int64) (*store.Organization, error) {
	return lookupJSON(r.t.bucket(bucketOrgs), itob(id), store.Organization{})
}

// Insert implements store.OrganizationRecords: ids are the bucket's
// sequence.
func (r organizations) Insert(o *store.Organization) error {
	if err := r.t.drawID(bucketOrgs, &o.ID); err != nil {
		return err
	}
	return r.put(o)
}

// Put implements store.OrganizationRecords.
func (r organizations) Put(o *store.Organization) error {
	if r.t.bucket(bucketOrgs).Get(itob(o.ID)) == nil {
		return store.NotFound("organization %d", o.ID)
	}
	return r.put(o)
}

// put stores o under its id: a partner named twice in PartnerIDs is kept
// at its first place, and an empty list is stored as none.
func (r organizations) put(o *store.Organization) error {
	c := *o
	c.PartnerIDs = nil
	for _, id := range o.PartnerIDs {
		if !slices.Contains(c.PartnerIDs, id) {
			c.PartnerIDs = append(c.PartnerIDs, id)
		}
	}
	return putJSON(r.t.bucket(bucketOrgs), itob(o.ID), &c)
}

// List implements store.OrganizationRecords. It decodes every
// organization; an operator's store holds some thousands at most.
func (r organizations) List(f store.OrganizationFilter, p store.Page) ([]store.Organization, int, error) {
	return filterJSON(r.t.bucket(bucketOrgs), f.Match, p)
}

// filterJSON decodes every record of b, in key order, and returns the page
// p of those keep admits and how many it admits.
func filterJSON[T any](b *bbolt.Bucket, keep func(*T) bool, p store.Page) ([]T, int, error) {
	all, err := listJSON(b, nil, keep)
	if err != nil {
		return nil, 0, err
	}
	page, total := store.Paginate(all, p)
	return page, total, nil
}
