package bolt

import (
	"github.com/fleetcam/fleetcam/store"
)

// oauthClients are the OAuth clients, JSON under their id. A partner has
// few clients, so a listing reads the bucket through.
type oauthClients struct{ t *tx }

// OAuthClients implements store.DirectoryRecords.
func (t *tx) OAuthClients() store.OAuthClientRecords { return oauthClients{t} }

// Get implements store.OAuthClientRecords.
func (r oauthClients) Get(id string) (*store.OAuthClient, error) {
	c, err := lookupJSON(r.t.bucket(bucketOAuthClients), []byte(id), store.OAuthClient{})
	return c, store.NotFoundAs(err, "OAuth client %s", id)
}

// Insert implements store.OAuthClientRecords.
func (r oauthClients) Insert(c *store.OAuthClient) error {
	if r.t.bucket(bucketOAuthClients).Get([]byte(c.ID)) != nil {
		return store.Conflict("OAuth client %s already exists", c.ID)
	}
	return r.put(c)
}

// Put implements store.OAuthClientRecords.
func (r oauthClients) Put(c *store.OAuthClient) error {
	return replaceJSON(r.t.bucket(bucketOAuthClients), []byte(c.ID), c, "OAuth client %s", c.ID)
}

func (r oauthClients) put(c *store.OAuthClient) error {
	return putJSON(r.t.bucket(bucketOAuthClients), []byte(c.ID), c)
}

// Delete implements store.OAuthClientRecords.
func (r oauthClients) Delete(id string) error {
	return deleteStored(r.t.bucket(bucketOAuthClients), []byte(id), "OAuth client %s", id)
}

// List implements store.OAuthClientRecords.
func (r oauthClients) List(f store.OAuthClientFilter) ([]store.OAuthClient, error) {
	return listJSON(r.t.bucket(bucketOAuthClients), nil, f.Match)
}
