package bolt

import "github.com/fleetcam/fleetcam/store"

// albums are the organizations' albums: bucket albums maps each
// organization id to its album as JSON.
type albums struct{ t *tx }

// Albums implements store.TrackRecords.
func (t *tx) Albums() store.AlbumRecords { return albums{t} }

// Get implements store.AlbumRecords. A record that does not name its
// organization is of the id it is stored under.
func (r albums) Get(orgID int64) (*store.Album, error) {
	return lookupJSON(r.t.bucket(bucketAlbums), itob(orgID), store.Album{OrganizationID: orgID})
}

// Put implements store.AlbumRecords.
func (r albums) Put(a *store.Album) error {
	return putJSON(r.t.bucket(bucketAlbums), itob(a.OrganizationID), a)
}

// Delete implements store.AlbumRecords.
func (r albums) Delete(orgID int64) error {
	return r.t.bucket(bucketAlbums).Delete(itob(orgID))
}
