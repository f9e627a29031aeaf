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
	if r.t.bucket(bucketOAuthClients).Get([]byte(c.ID)) == nil {
		return store.NotFound("OAuth client %s", c.ID)
	}
	return r.put(c)
}

func (r oauthClients) put(c *store.OAuthClient) error {
	return putJSON(r.t.bucket(bucketOAuthClients), []byte(c.ID), c)
}

// Delete implements store.OAuthClientRecords.
func (r oauthClients) Delete(id string) error {
	b := r.t.bucket(bucketOAuthClients)
	if b.Get([]byte(id)) == nil {
		return store.NotFound("OAuth client %s", id)
	}
	return b.Delete([]byte(id))
}

// List implements store.OAuthClientRecords.
func (r oauthClients) List(f store.OAuthClientFilter) ([]store.OAuthClient, error) {
	var out []store.OAuthClient
	err := walk(r.t, bucketOAuthClients, func(k, v []byte) (bool, error) {
		c, err := decodeJSON(k, v, store.OAuthClient{})
		if err != nil {
			return false, err
		}
		if f.Match(c) {
			out = append(out, *c)
		}
		return true, nil
	})
	return out, err
}
