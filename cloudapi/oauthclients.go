package cloudapi

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// OAuth clients: the machine-to-machine clients of a partner or of one
// organization, which get API tokens with their secret at POST
// /oauth/token (oauthtoken.go). A partner's client acts with the partner's
// rights over its organizations, an organization's client as that
// organization's administrator. A partner's users manage the clients of
// the partner and of the organizations it created; an organization's users
// those of their organization; every other client is not found.

// OAuth client entity types of the API.
const (
	oauthEntityPartner      = "partner"
	oauthEntityOrganization = "organization"
)

// oauthClientView is a client as the API shows it (the contract's
// oAuthClientObject); the secret only at creation and rotation.
type oauthClientView struct {
	ClientID        string `json:"clientId"`
	ClientSecret    string `json:"clientSecret,omitempty"`
	ClientName      string `json:"clientName,omitempty"`
	EntityType      string `json:"entityType"`
	EntityID        string `json:"entityId"`
	Enabled         *bool  `json:"enabled,omitempty"`
	ClientStatus    string `json:"clientStatus,omitempty"`
	CreatedAt       string `json:"createdAt,omitempty"`
	LastRefreshedAt string `json:"lastRefreshedAt,omitempty"`
}

// oauthClientMetadata counts the clients a listing covers, against the
// partner's quota of enabled clients.
type oauthClientMetadata struct {
	TotalClientsIssued int `json:"totalClientsIssued"`
	MaxClientsQuota    int `json:"maxClientsQuota"`
	TotalActiveClients int `json:"totalActiveClients"`
}

// viewOAuthClient is the API's view of c, without its secret.
func viewOAuthClient(c *store.OAuthClient) oauthClientView {
	v := oauthClientView{ClientID: c.ID, ClientName: c.Name, EntityType: oauthEntityPartner,
		EntityID: strconv.FormatInt(c.PartnerID, 10), CreatedAt: isoTime(c.CreatedAt), LastRefreshedAt: isoTime(c.RefreshedAt)}
	if c.OrganizationID != 0 {
		v.EntityType, v.EntityID = oauthEntityOrganization, strconv.FormatInt(c.OrganizationID, 10)
	}
	enabled := c.Enabled
	v.Enabled = &enabled
	return v
}

// newOAuthSecret returns a new client secret: 256 random bits.
func newOAuthSecret() string {
	return "fcs_" + base64.RawURLEncoding.EncodeToString(randomBytes(32))
}

// newOAuthClientID returns a new client id: 96 random bits in hex.
func newOAuthClientID() string { return hex.EncodeToString(randomBytes(12)) }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return b
}

// oauthManager admits the callers that manage OAuth clients: users and
// organization administrators with the editor access level, since a
// client's tokens have the editor's rights. A client's own token does not
// manage clients.
func (s *Server) oauthManager(c *gin.Context) {
	p := principal(c)
	switch {
	case p.Kind == kindClient:
		s.fail(c, forbidden("an OAuth client's token cannot manage OAuth clients"))
	case p.AccessLevel != store.AccessEditor:
		s.fail(c, forbidden("the %s access level cannot manage OAuth clients, whose tokens have the editor's rights", levelName(p)))
	default:
		c.Next()
	}
}

// oauthClientFilter selects the clients the caller manages; false when
// the caller is bound to neither a partner nor an organization.
func oauthClientFilter(p Principal) (store.OAuthClientFilter, bool) {
	switch {
	case p.IsPartner():
		return store.OAuthClientFilter{PartnerID: p.PartnerID}, true
	case p.OrganizationID != 0:
		return store.OAuthClientFilter{OrganizationID: p.OrganizationID}, true
	}
	return store.OAuthClientFilter{}, false
}

// oauthClient returns the client of the path parameter clientId if the
// caller manages it; any other is not found.
func (s *Server) oauthClient(c *gin.Context, tx *store.Tx) (*store.OAuthClient, error) {
	id := c.Param("clientId")
	f, bound := oauthClientFilter(principal(c))
	client, err := tx.OAuthClient(id)
	if err != nil || !bound || !f.Match(client) {
		return nil, notFound("OAuth client " + id)
	}
	return client, nil
}

// checkOAuthQuota refuses one more enabled client for partnerID once it
// has the most allowed.
func checkOAuthQuota(tx *store.Tx, partnerID int64) error {
	list, err := tx.OAuthClients(store.OAuthClientFilter{PartnerID: partnerID})
	if err != nil {
		return err
	}
	enabled := 0
	for _, c := range list {
		if c.Enabled {
			enabled++
		}
	}
	if enabled >= store.MaxOAuthClientsPerPartner {
		return apiErr(http.StatusTooManyRequests, nameTooManyRequests,
			"the partner has %d enabled OAuth clients, the most allowed; disable or delete one first", enabled)
	}
	return nil
}

type createOAuthClientRequest struct {
	ClientName *string `json:"clientName"`
}

// createOAuthClient handles POST /oauth/clients/{entityType}/{entityId}: a
// new client of the caller's partner, or of an organization the caller's
// partner created or the caller administers. Its secret is in the answer
// and never again.
func (s *Server) createOAuthClient(c *gin.Context) error {
	var req createOAuthClientRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	client := &store.OAuthClient{ID: newOAuthClientID()}
	if req.ClientName != nil {
		name := strings.TrimSpace(*req.ClientName)
		if name == "" || utf8.RuneCountInString(name) > store.MaxOAuthClientName {
			return badField("clientName", "must be from 1 to 255 characters")
		}
		client.Name = name
	}
	entityType := c.Param("entityType")
	entityID, err := strconv.ParseInt(c.Param("entityId"), 10, 64)
	if entityType != oauthEntityPartner && entityType != oauthEntityOrganization {
		return badField("entityType", "must be partner or organization")
	}
	if err != nil || entityID <= 0 {
		return badField("entityId", "must be a positive integer id of the "+entityType)
	}
	p := principal(c)
	secret := newOAuthSecret()
	err = s.update(c, func(tx *store.Tx) error {
		switch entityType {
		case oauthEntityPartner:
			if !p.IsPartner() || p.PartnerID != entityID {
				return notFound("partner " + c.Param("entityId"))
			}
			client.PartnerID = entityID
		default:
			o, err := s.orgByID(c, tx, entityID)
			if err != nil {
				return err
			}
			client.PartnerID, client.OrganizationID = o.PartnerID, o.ID
		}
		if err := checkOAuthQuota(tx, client.PartnerID); err != nil {
			return err
		}
		return tx.CreateOAuthClient(client, secret)
	})
	if err != nil {
		return err
	}
	v := viewOAuthClient(client)
	v.ClientSecret, v.Enabled, v.LastRefreshedAt = secret, nil, ""
	return created(c, v)
}

// listOAuthClients handles GET /oauth/clients: the clients the caller
// manages, in id order, with how many are enabled against the quota.
func (s *Server) listOAuthClients(c *gin.Context) error {
	var list []store.OAuthClient
	err := s.view(c, func(tx *store.Tx) error {
		f, bound := oauthClientFilter(principal(c))
		if !bound {
			return nil
		}
		var err error
		list, err = tx.OAuthClients(f)
		return err
	})
	if err != nil {
		return err
	}
	views := make([]oauthClientView, 0, len(list))
	meta := oauthClientMetadata{TotalClientsIssued: len(list), MaxClientsQuota: store.MaxOAuthClientsPerPartner}
	for i := range list {
		views = append(views, viewOAuthClient(&list[i]))
		if list[i].Enabled {
			meta.TotalActiveClients++
		}
	}
	return okBody(c, gin.H{"data": views, "metadata": meta, "requestId": requestID(c)})
}

// getOAuthClient handles GET /oauth/clients/{clientId}.
func (s *Server) getOAuthClient(c *gin.Context) error {
	var client *store.OAuthClient
	err := s.view(c, func(tx *store.Tx) error {
		var err error
		client, err = s.oauthClient(c, tx)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, viewOAuthClient(client))
}

type updateOAuthClientRequest struct {
	Enabled *bool `json:"enabled"`
}

// updateOAuthClient handles PATCH /oauth/clients/{clientId}: enables or
// disables the client. A disabled client gets no token and its tokens are
// refused; enabling one counts against the quota.
func (s *Server) updateOAuthClient(c *gin.Context) error {
	var req updateOAuthClientRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Enabled == nil {
		return badField("enabled", "is required (true or false)")
	}
	var client *store.OAuthClient
	err := s.update(c, func(tx *store.Tx) error {
		found, err := s.oauthClient(c, tx)
		if err != nil {
			return err
		}
		if *req.Enabled && !found.Enabled {
			if err := checkOAuthQuota(tx, found.PartnerID); err != nil {
				return err
			}
		}
		client, err = tx.SetOAuthClientEnabled(found.ID, *req.Enabled)
		return err
	})
	if err != nil {
		return err
	}
	v := viewOAuthClient(client)
	v.ClientStatus, v.LastRefreshedAt = "disabled", ""
	if client.Enabled {
		v.ClientStatus = "enabled"
	}
	return ok(c, v)
}

// deleteOAuthClient handles DELETE /oauth/clients/{clientId}; the client's
// tokens stop working at once.
func (s *Server) deleteOAuthClient(c *gin.Context) error {
	var id string
	err := s.update(c, func(tx *store.Tx) error {
		client, err := s.oauthClient(c, tx)
		if err != nil {
			return err
		}
		id = client.ID
		return tx.DeleteOAuthClient(id)
	})
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"message": "Client deleted successfully", "clientId": id, "requestId": requestID(c)})
}

// rotateOAuthClientSecret handles PUT /oauth/clients/{clientId}/secret: a
// new secret, in the answer and never again. The old secret and every
// token issued under it stop working at once.
func (s *Server) rotateOAuthClientSecret(c *gin.Context) error {
	secret := newOAuthSecret()
	var client *store.OAuthClient
	err := s.update(c, func(tx *store.Tx) error {
		found, err := s.oauthClient(c, tx)
		if err != nil {
			return err
		}
		client, err = tx.RotateOAuthClientSecret(found.ID, secret)
		return err
	})
	if err != nil {
		return err
	}
	v := viewOAuthClient(client)
	v.ClientSecret, v.Enabled, v.LastRefreshedAt = secret, nil, ""
	return ok(c, v)
}
