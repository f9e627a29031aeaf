package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/fleetcam/fleetcam/store"
)

// albums are the organizations' albums: table organization_albums, one
// row per organization whose album is enabled, which goes with the
// organization.
type albums struct{ t *tx }

// Albums implements store.TrackRecords.
func (t *tx) Albums() store.AlbumRecords { return albums{t} }

// Get implements store.AlbumRecords.
func (r albums) Get(orgID int64) (*store.Album, error) {
	a := store.Album{OrganizationID: orgID}
	var statuses []byte
	err := getOne(r.t, `SELECT enabled_at, statuses FROM organization_albums WHERE organization_id = $1`,
		[]any{zeroTime{&a.EnabledAt}, &statuses}, orgID)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(statuses, &a.Statuses); err != nil {
		return nil, fmt.Errorf("store: decode the album of organization %d: %w", orgID, err)
	}
	if len(a.Statuses) == 0 {
		a.Statuses = nil
	}
	return &a, nil
}

// Put implements store.AlbumRecords.
func (r albums) Put(a *store.Album) error {
	statuses := a.Statuses
	if statuses == nil {
		statuses = map[string]string{}
	}
	doc, err := json.Marshal(statuses)
	if err != nil {
		return fmt.Errorf("store: encode the album of organization %d: %w", a.OrganizationID, err)
	}
	_, err = r.t.exec(`INSERT INTO organization_albums (organization_id, enabled_at, statuses) VALUES ($1, $2, $3)
		ON CONFLICT (organization_id) DO UPDATE SET enabled_at = EXCLUDED.enabled_at, statuses = EXCLUDED.statuses`,
		a.OrganizationID, a.EnabledAt, string(doc))
	return err
}

// Delete implements store.AlbumRecords.
func (r albums) Delete(orgID int64) error {
	_, err := r.t.exec(`DELETE FROM organization_albums WHERE organization_id = $1`, orgID)
	return err
}
