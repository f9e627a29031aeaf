package cloudapi

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"
)

// Principal is who a request acts for, taken from its bearer token.
type Principal struct {
	Kind           string
	UserID         int64
	Email          string
	PartnerID      int64
	OrganizationID int64
	AccessLevel    string
	Scope          *Scope
	// ClientID is the OAuth client of a client token.
	ClientID string
	// Generation is what the token was issued under: the user's token
	// generation (store.User.TokenGeneration) for a user's token, the
	// generation of the client's secret for an OAuth client's.
	Generation int64
	// ExternalOrgIDs are the other organizations an organization user was
	// added to as an external user, read with the user on every call.
	ExternalOrgIDs []int64
}

// inOrg reports whether p acts in organization id as an organization
// user or admin token: its own organization or, for a user, one it is an
// external user of.
func (p Principal) inOrg(id int64) bool {
	return id != 0 && (p.OrganizationID == id || slices.Contains(p.ExternalOrgIDs, id))
}

// IsPartner reports whether the principal is a partner user, or a
// partner's OAuth client, not bound to one organization.
func (p Principal) IsPartner() bool {
	return (p.Kind == kindUser || p.Kind == kindClient) && p.OrganizationID == 0 && p.PartnerID != 0
}

func (p Principal) subject() string {
	switch p.Kind {
	case kindAdmin:
		return "organization:" + strconv.FormatInt(p.OrganizationID, 10)
	case kindClient:
		return "client:" + p.ClientID
	default:
		return "user:" + strconv.FormatInt(p.UserID, 10)
	}
}

// actor is the principal as the audit log records it.
func (p Principal) actor(requestID string) store.Actor {
	src := "api"
	if p.Kind != kindUser {
		src = "api:" + p.Kind
	}
	if p.Kind == kindClient {
		src += ":" + p.ClientID
	}
	return store.Actor{UserID: p.UserID, Email: p.Email, PartnerID: p.PartnerID,
		OrganizationID: p.OrganizationID, Source: src, RequestID: requestID}
}

const principalKey = "fleetcam.principal"

// principal returns the authenticated caller; authenticate has run.
func principal(c *gin.Context) Principal {
	p, _ := c.Get(principalKey)
	pr, _ := p.(Principal)
	return pr
}

// authenticate requires a valid bearer token: signed by this server, not
// expired, issued in this cloud, and for a user or an OAuth client that
// still stands (resolve): a user that has not changed its password since,
// a client whose secret has not been rotated since.
func (s *Server) authenticate(c *gin.Context) {
	token := bearer(c)
	if token == "" {
		s.fail(c, unauthorized("the Authorization header must carry a bearer token"))
		return
	}
	cl, err := s.parse(token)
	switch {
	case errors.Is(err, errTokenCloud):
		s.fail(c, unauthorized("the token is not valid in the %s cloud", s.cfg.Cloud))
		return
	case errors.Is(err, jwt.ErrTokenExpired):
		s.fail(c, unauthorized("the token has expired"))
		return
	case err != nil:
		s.fail(c, unauthorized("the token is not valid"))
		return
	}
	if s.rateLimited(c, cl.Subject) {
		return
	}
	p, err := s.resolve(c, cl)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := checkScope(c, p); err != nil {
		s.fail(c, err)
		return
	}
	c.Set(principalKey, p)
	// The request's writes are tracked from here, so that its views take
	// the rows its authentication read only until it writes (pathRows).
	c.Request = c.Request.WithContext(store.TrackWrites(c.Request.Context()))
	c.Next()
}

// resolve returns who the claims of a valid token act for, once it has
// checked that what they name still stands: the user, with its current
// e-mail and access level, or the OAuth client, still there, enabled and
// with the secret the token was issued under. authenticate and the
// introspection of tokens share it, so that a token is refused and
// reported inactive by the same rules.
func (s *Server) resolve(c *gin.Context, cl *claims) (Principal, error) {
	p := Principal{Kind: cl.Kind, UserID: cl.UserID, PartnerID: cl.PartnerID,
		OrganizationID: cl.OrganizationID, AccessLevel: cl.AccessLevel, Scope: cl.Scope,
		ClientID: cl.ClientID, Generation: cl.Generation}
	var refusal error
	err := s.authView(c, func(tx *store.Tx) error {
		var err error
		refusal, err = s.checkToken(tx, &p)
		return err
	})
	if err != nil {
		// The store cannot say (an outage: 503): the token may be good.
		return p, err
	}
	return p, refusal
}

// checkToken checks p, from a token, against what is stored now and fills
// in the user's current e-mail, access level and external organizations. The
// refusal (401) says why a token no longer holds: its user, OAuth client or
// organization is gone, its user's password or client's secret changed, its
// client was disabled, or a scoped token's issuer no longer reaches the
// organization of its scope. err is a failed read.
func (s *Server) checkToken(tx *store.Tx, p *Principal) (refusal, err error) {
	var u *store.User
	var client *store.OAuthClient
	switch {
	case p.UserID != 0:
		u, err = tx.User(p.UserID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return unauthorized("the token's user no longer exists"), nil
		case err != nil:
			return nil, err
		case u.TokenGeneration != p.Generation:
			return unauthorized("the token was revoked when the user's password changed; authenticate again"), nil
		}
		p.Email, p.AccessLevel = u.Email, u.AccessLevel
		if p.Kind == kindUser && u.OrganizationID != 0 {
			p.ExternalOrgIDs = u.ExternalOrganizationIDs
		}
	case p.ClientID != "":
		client, err = tx.OAuthClient(p.ClientID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return unauthorized("the token's OAuth client no longer exists"), nil
		case err != nil:
			return nil, err
		case !client.Enabled:
			return unauthorized("the token's OAuth client is disabled"), nil
		case client.SecretGeneration != p.Generation:
			return unauthorized("the token's OAuth client has had its secret rotated since; get a new token"), nil
		}
	}
	if p.OrganizationID == 0 || p.Kind == kindUser {
		return nil, nil // a user's own organization goes with its users
	}
	// An admin token, an organization's client and a scoped token act in
	// one organization, which must still exist.
	o, err := tx.Organization(p.OrganizationID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return unauthorized("the token's organization no longer exists"), nil
	case err != nil:
		return nil, err
	case p.Kind == kindScoped && !issuerReaches(u, client, o):
		return unauthorized("the scoped token's issuer no longer has access to organization %d; request a new token", o.ID), nil
	}
	return nil, nil
}

// issuerReaches reports whether the issuer of a scoped token, its user u
// or OAuth client (both nil for an admin token, whose organization is the
// scope's), still reaches organization o: an organization user as a member
// or external user, a partner's user or client while the partner shares o.
func issuerReaches(u *store.User, client *store.OAuthClient, o *store.Organization) bool {
	switch {
	case u != nil && u.OrganizationID != 0:
		return u.OrganizationID == o.ID || slices.Contains(u.ExternalOrganizationIDs, o.ID)
	case u != nil:
		return o.HasPartner(u.PartnerID)
	case client != nil && client.OrganizationID != 0:
		return client.OrganizationID == o.ID
	case client != nil:
		return o.HasPartner(client.PartnerID)
	}
	return true
}

// bearer returns the token of the request's "Authorization: Bearer" header, or "".
func bearer(c *gin.Context) string {
	h := c.GetHeader("Authorization")
	token, found := strings.CutPrefix(h, "Bearer ")
	if !found {
		token, found = strings.CutPrefix(h, "bearer ")
	}
	if !found {
		return ""
	}
	return strings.TrimSpace(token)
}

// partnerOnly refuses callers that are not partner users.
func (s *Server) partnerOnly(c *gin.Context) {
	if !principal(c).IsPartner() {
		s.fail(c, forbidden("this operation is for partners only"))
		return
	}
	c.Next()
}

// writer refuses viewers (and scoped tokens) on create, update and delete calls.
func (s *Server) writer(c *gin.Context) {
	p := principal(c)
	if p.Kind == kindScoped || p.AccessLevel == store.AccessViewer {
		s.fail(c, forbidden("the %s access level cannot create, update or delete", levelName(p)))
		return
	}
	c.Next()
}

func levelName(p Principal) string {
	if p.Kind == kindScoped {
		return "scoped token"
	}
	return p.AccessLevel
}

// media refuses callers whose access level excludes media links, streams and
// recordings, and scoped tokens whose granted feature was minted without media.
func (s *Server) media(c *gin.Context) {
	p := principal(c)
	if p.AccessLevel == store.AccessEditorWithoutMediaAccess {
		s.fail(c, forbidden("the editorWithoutMediaAccess access level has no access to media"))
		return
	}
	if p.Kind == kindScoped {
		granted, _ := c.Get(scopeGrantedKey)
		features, _ := granted.([]string)
		allowed := p.Scope != nil && slices.ContainsFunc(features, func(f string) bool { return slices.Contains(p.Scope.MediaFeatures, f) })
		if !allowed {
			s.fail(c, forbidden("the scoped token was created without media access"))
			return
		}
	}
	c.Next()
}

// Scoped-token features.
const (
	FeatureDeviceEvent             = "deviceEvent"
	FeatureDeviceLiveStreaming     = "deviceLiveStreaming"
	FeatureDeviceRecordingTimeline = "deviceRecordingTimeline"
	FeatureDeviceRecordings        = "deviceRecordings"
	FeatureDeviceGPS               = "deviceGps"
	FeatureDeviceInfo              = "deviceInfo"
)

var allFeatures = []string{FeatureDeviceEvent, FeatureDeviceLiveStreaming, FeatureDeviceRecordingTimeline,
	FeatureDeviceRecordings, FeatureDeviceGPS, FeatureDeviceInfo}

// scoped declares that a route admits scoped tokens granting any of
// features. It goes before authenticate in the route's chain; authenticate
// refuses a scoped token on any route that declared no feature, so scope
// enforcement is closed by default. Handlers still narrow what a scoped
// token sees to its device, group or organization (tenancy.go).
func scoped(features ...string) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Set(scopeFeatureKey, features)
		c.Next()
	}
}

const (
	scopeFeatureKey = "fleetcam.features"
	scopeGrantedKey = "fleetcam.granted"
)

// checkScope admits a scoped token only on a route that declared a feature
// the token grants, and records the granted features for media.
func checkScope(c *gin.Context, p Principal) error {
	if p.Kind != kindScoped {
		return nil
	}
	v, _ := c.Get(scopeFeatureKey)
	declared, _ := v.([]string)
	if len(declared) == 0 {
		return forbidden("a scoped token cannot call this operation")
	}
	var granted []string
	if p.Scope != nil {
		for _, f := range declared {
			if slices.Contains(p.Scope.Features, f) {
				granted = append(granted, f)
			}
		}
	}
	if len(granted) == 0 {
		return forbidden("the scoped token does not grant %s", strings.Join(declared, " or "))
	}
	c.Set(scopeGrantedKey, granted)
	return nil
}
