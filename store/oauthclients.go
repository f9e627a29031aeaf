package store

import (
	"crypto/sha256"
	"crypto/subtle"
	"time"
	"unicode/utf8"
)

// OAuthClient is a machine-to-machine client of a partner or of one of its
// organizations: it gets API tokens from POST /oauth/token with its id and
// secret (OAuth 2.0 client credentials). Only the SHA-256 of the secret is
// kept; the secret is high-entropy random, so a digest is enough to keep
// it from being read back, and it is shown once, at creation and at each
// rotation.
type OAuthClient struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// PartnerID is the partner the client belongs to: the partner itself
	// for a partner's client, the organization's creating partner for an
	// organization's.
	PartnerID int64 `json:"partnerId"`
	// OrganizationID is the organization of an organization's client; 0
	// for a partner's client.
	OrganizationID int64 `json:"organizationId,omitempty"`
	// Enabled clients get tokens, and their tokens are accepted.
	Enabled    bool   `json:"enabled"`
	SecretHash []byte `json:"secretHash"`
	// SecretGeneration is 1 at creation and grows with each rotation;
	// tokens carry the generation they were issued under, so a rotation
	// ends the tokens of the old secret too.
	SecretGeneration int64     `json:"secretGeneration"`
	CreatedAt        time.Time `json:"createdAt"`
	// RefreshedAt is when the secret was last set (created or rotated).
	RefreshedAt time.Time `json:"refreshedAt"`
}

// OAuthClientFilter selects clients; a zero member selects any.
type OAuthClientFilter struct {
	PartnerID      int64
	OrganizationID int64
}

// Match reports whether f selects c.
func (f OAuthClientFilter) Match(c *OAuthClient) bool {
	return (f.PartnerID == 0 || c.PartnerID == f.PartnerID) &&
		(f.OrganizationID == 0 || c.OrganizationID == f.OrganizationID)
}

// Limits of OAuth clients.
const (
	// MaxOAuthClientName is the longest client name, in characters.
	MaxOAuthClientName = 255
	// MaxOAuthClientsPerPartner is how many enabled clients a partner and
	// its organizations may have together.
	MaxOAuthClientsPerPartner = 50
)

// oauthSecretHash is what is kept of a client secret.
func oauthSecretHash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// SecretMatches reports, in constant time, whether secret is the client's
// current secret. A client without a digest (the stand-in for an unknown
// id) matches nothing, after the same work.
func (c *OAuthClient) SecretMatches(secret string) bool {
	h := oauthSecretHash(secret)
	return subtle.ConstantTimeCompare(c.SecretHash, h) == 1 && len(c.SecretHash) == sha256.Size
}

// oauthClientAudit is a client as the audit log shows it: never the secret
// nor its digest.
type oauthClientAudit struct {
	ID               string    `json:"id"`
	Name             string    `json:"name,omitempty"`
	PartnerID        int64     `json:"partnerId"`
	OrganizationID   int64     `json:"organizationId,omitempty"`
	Enabled          bool      `json:"enabled"`
	SecretGeneration int64     `json:"secretGeneration"`
	CreatedAt        time.Time `json:"createdAt"`
	RefreshedAt      time.Time `json:"refreshedAt"`
}

func (c *OAuthClient) audited() oauthClientAudit {
	return oauthClientAudit{ID: c.ID, Name: c.Name, PartnerID: c.PartnerID, OrganizationID: c.OrganizationID,
		Enabled: c.Enabled, SecretGeneration: c.SecretGeneration, CreatedAt: c.CreatedAt, RefreshedAt: c.RefreshedAt}
}

func (tx *Tx) auditOAuthClient(action string, before, after *OAuthClient) error {
	c := after
	if c == nil {
		c = before
	}
	change := AuditChange{Action: action, EntityType: "oauthClient", EntityID: c.ID,
		PartnerID: c.PartnerID, OrganizationID: c.OrganizationID}
	if before != nil {
		change.Before = before.audited()
	}
	if after != nil {
		change.After = after.audited()
	}
	return tx.Audit(change)
}

// CreateOAuthClient stores the new enabled client c (its ID, Name,
// PartnerID and OrganizationID set by the caller) with the digest of
// secret, and audits it. The partner, and the organization when there is
// one, must exist; an id already given is ErrConflict.
func (tx *Tx) CreateOAuthClient(c *OAuthClient, secret string) error {
	if c.ID == "" {
		return Invalid("clientId", "is required")
	}
	if n := utf8.RuneCountInString(c.Name); n > MaxOAuthClientName {
		return Invalid("clientName", "must be at most %d characters", MaxOAuthClientName)
	}
	if len(secret) < 32 {
		return Invalid("clientSecret", "must be at least 32 characters")
	}
	if _, err := tx.rec.Partners().Get(c.PartnerID); err != nil {
		return err
	}
	if c.OrganizationID != 0 {
		o, err := tx.rec.Organizations().Get(c.OrganizationID)
		if err != nil {
			return err
		}
		if o.PartnerID != c.PartnerID {
			return Invalid("entityId", "must be an organization the partner created")
		}
	}
	c.Enabled = true
	c.SecretHash = oauthSecretHash(secret)
	c.SecretGeneration = 1
	c.CreatedAt, c.RefreshedAt = tx.now, tx.now
	if err := tx.rec.OAuthClients().Insert(c); err != nil {
		return err
	}
	return tx.auditOAuthClient("oauthClient.create", nil, c)
}

// OAuthClient returns the client id; ErrNotFound when there is none.
func (tx *Tx) OAuthClient(id string) (*OAuthClient, error) {
	return tx.rec.OAuthClients().Get(id)
}

// OAuthClients lists the clients f selects, in id order.
func (tx *Tx) OAuthClients(f OAuthClientFilter) ([]OAuthClient, error) {
	return tx.rec.OAuthClients().List(f)
}

// SetOAuthClientEnabled enables or disables client id and audits the
// change; a disabled client gets no token and its tokens are refused.
func (tx *Tx) SetOAuthClientEnabled(id string, enabled bool) (*OAuthClient, error) {
	c, err := tx.rec.OAuthClients().Get(id)
	if err != nil {
		return nil, err
	}
	before := *c
	c.Enabled = enabled
	if err := tx.rec.OAuthClients().Put(c); err != nil {
		return nil, err
	}
	return c, tx.auditOAuthClient("oauthClient.update", &before, c)
}

// RotateOAuthClientSecret replaces the secret of client id with secret and
// moves it to the next generation, which ends the old secret and every
// token issued under it; audited.
func (tx *Tx) RotateOAuthClientSecret(id, secret string) (*OAuthClient, error) {
	if len(secret) < 32 {
		return nil, Invalid("clientSecret", "must be at least 32 characters")
	}
	c, err := tx.rec.OAuthClients().Get(id)
	if err != nil {
		return nil, err
	}
	before := *c
	c.SecretHash = oauthSecretHash(secret)
	c.SecretGeneration++
	c.RefreshedAt = tx.now
	if err := tx.rec.OAuthClients().Put(c); err != nil {
		return nil, err
	}
	return c, tx.auditOAuthClient("oauthClient.rotateSecret", &before, c)
}

// DeleteOAuthClient deletes client id, which ends its tokens, and audits
// it; ErrNotFound when there is none.
func (tx *Tx) DeleteOAuthClient(id string) error {
	c, err := tx.rec.OAuthClients().Get(id)
	if err != nil {
		return err
	}
	if err := tx.rec.OAuthClients().Delete(id); err != nil {
		return err
	}
	return tx.auditOAuthClient("oauthClient.delete", c, nil)
}
