package postgres

import "github.com/fleetcam/fleetcam/store"

// oauthClients are the oauth_clients table.
type oauthClients struct{ t *tx }

// OAuthClients implements store.DirectoryRecords.
func (t *tx) OAuthClients() store.OAuthClientRecords { return oauthClients{t} }

// oauthClientColumns are the columns oauthClientFields scans.
const oauthClientColumns = `id, name, partner_id, organization_id, enabled, secret_hash, secret_generation, created_at, refreshed_at`

func oauthClientFields(c *store.OAuthClient) []any {
	return []any{&c.ID, &c.Name, &c.PartnerID, zeroID{&c.OrganizationID}, &c.Enabled, &c.SecretHash,
		&c.SecretGeneration, zeroTime{&c.CreatedAt}, zeroTime{&c.RefreshedAt}}
}

func oauthClientValues(c *store.OAuthClient) []any {
	return []any{c.ID, c.Name, c.PartnerID, nullID(c.OrganizationID), c.Enabled, nonNilBytes(c.SecretHash),
		c.SecretGeneration, c.CreatedAt, c.RefreshedAt}
}

// Get implements store.OAuthClientRecords.
func (r oauthClients) Get(id string) (*store.OAuthClient, error) {
	c, err := getRecord(r.t, `SELECT `+oauthClientColumns+` FROM oauth_clients WHERE id = $1`, oauthClientFields, id)
	return c, store.NotFoundAs(err, "OAuth client %s", id)
}

// Insert implements store.OAuthClientRecords.
func (r oauthClients) Insert(c *store.OAuthClient) error {
	tag, err := r.t.exec(`INSERT INTO oauth_clients (`+oauthClientColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`, oauthClientValues(c)...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return store.Conflict("OAuth client %s already exists", c.ID)
	}
	return nil
}

// Put implements store.OAuthClientRecords.
func (r oauthClients) Put(c *store.OAuthClient) error {
	tag, err := r.t.exec(`UPDATE oauth_clients SET name = $2, partner_id = $3, organization_id = $4, enabled = $5,
		secret_hash = $6, secret_generation = $7, created_at = $8, refreshed_at = $9 WHERE id = $1`, oauthClientValues(c)...)
	return affected(tag, err, "OAuth client %s", c.ID)
}

// Delete implements store.OAuthClientRecords.
func (r oauthClients) Delete(id string) error {
	tag, err := r.t.exec(`DELETE FROM oauth_clients WHERE id = $1`, id)
	return affected(tag, err, "OAuth client %s", id)
}

// List implements store.OAuthClientRecords.
func (r oauthClients) List(f store.OAuthClientFilter) ([]store.OAuthClient, error) {
	return collect(r.t, scanFields(oauthClientFields), `SELECT `+oauthClientColumns+` FROM oauth_clients
		WHERE ($1::bigint = 0 OR partner_id = $1) AND ($2::bigint = 0 OR organization_id = $2) ORDER BY id`, f.PartnerID, f.OrganizationID)
}
