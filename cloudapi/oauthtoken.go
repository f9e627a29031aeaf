package cloudapi

import (
	"errors"
	"mime"
	"net/http"
	"strings"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// The OAuth 2.0 endpoints of the clients: the client credentials grant
// (RFC 6749 section 4.4) and token introspection (RFC 7662). Both take a
// form body, with the member names of the reference contract (grantType,
// clientId, clientSecret) or of the RFCs (grant_type, client_id,
// client_secret), and the client's credentials in the body or in HTTP
// Basic authentication. Their errors carry the RFC 6749 error codes
// (invalid_request, invalid_client, unsupported_grant_type, invalid_scope)
// as the error name. A secret is checked only after the sign-in brake has
// admitted the attempt, per client address and per client id, like
// passwords; every refusal of the credentials reads the same, so the
// answers tell nothing of which clients exist.

// RFC 6749 error codes, the error names of the OAuth endpoints.
const (
	oauthInvalidRequest       = "invalid_request"
	oauthInvalidClient        = "invalid_client"
	oauthUnsupportedGrantType = "unsupported_grant_type"
	oauthInvalidScope         = "invalid_scope"
)

// oauthScope is the one scope a client token has: all its entity's rights.
const oauthScope = "all"

// oauthForm is a parsed form body of the OAuth endpoints.
type oauthForm struct {
	c     *gin.Context
	basic bool
}

// readOAuthForm parses the form body; anything else is invalid_request.
func readOAuthForm(c *gin.Context) (*oauthForm, error) {
	mt, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if mt != "application/x-www-form-urlencoded" {
		return nil, apiErr(http.StatusBadRequest, oauthInvalidRequest, "the body must be application/x-www-form-urlencoded")
	}
	if err := c.Request.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apiErr(http.StatusRequestEntityTooLarge, nameTooLarge, "the request body exceeds %d bytes", mbe.Limit)
		}
		return nil, apiErr(http.StatusBadRequest, oauthInvalidRequest, "the body is not a valid form")
	}
	return &oauthForm{c: c}, nil
}

// value is the member given by either name; invalid_request when it is
// given more than once.
func (f *oauthForm) value(names ...string) (string, error) {
	var got []string
	for _, n := range names {
		got = append(got, f.c.Request.PostForm[n]...)
	}
	if len(got) > 1 {
		return "", apiErr(http.StatusBadRequest, oauthInvalidRequest, "%s must be given once", names[0])
	}
	if len(got) == 0 {
		return "", nil
	}
	return got[0], nil
}

// credentials are the client id and secret, from the body or from HTTP
// Basic authentication, never both (RFC 6749 section 2.3).
func (f *oauthForm) credentials() (id, secret string, err error) {
	if id, err = f.value("clientId", "client_id"); err != nil {
		return "", "", err
	}
	if secret, err = f.value("clientSecret", "client_secret"); err != nil {
		return "", "", err
	}
	if user, pass, found := f.c.Request.BasicAuth(); found {
		if secret != "" {
			return "", "", apiErr(http.StatusBadRequest, oauthInvalidRequest,
				"the client credentials must be in the body or in Basic authentication, not both")
		}
		f.basic = true
		id, secret = user, pass
	}
	switch {
	case id == "":
		return "", "", apiErr(http.StatusBadRequest, oauthInvalidRequest, "clientId is required")
	case secret == "":
		return "", "", apiErr(http.StatusBadRequest, oauthInvalidRequest, "clientSecret is required")
	}
	return id, secret, nil
}

// authenticateClient checks the client credentials of the form, once the
// sign-in brake admits the attempt.
func (s *Server) authenticateClient(c *gin.Context, f *oauthForm, endpoint string) (*store.OAuthClient, error) {
	id, secret, err := f.credentials()
	if err != nil {
		return nil, err
	}
	account := "oauthClient:" + id
	if err := s.admitSignin(c, endpoint, account); err != nil {
		return nil, err
	}
	var client *store.OAuthClient
	err = s.view(c, func(tx *store.Tx) error {
		var err error
		client, err = tx.OAuthClient(id)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.signinUnchecked(c, account)
		return nil, err
	}
	if client == nil {
		// An unknown id costs what a wrong secret costs.
		client = &store.OAuthClient{}
	}
	if matches := client.SecretMatches(secret); !matches || !client.Enabled {
		s.signinFailed(endpoint, reasonBadCredentials)
		if f.basic {
			c.Header("WWW-Authenticate", `Basic realm="fleetcam"`)
		}
		return nil, apiErr(http.StatusUnauthorized, oauthInvalidClient, "the client credentials are not valid")
	}
	s.signinSucceeded(c, account)
	return client, nil
}

// oauthTokenResponse is the token of the client credentials grant, with
// the members of the reference contract and those of RFC 6749 section 5.1,
// so that standard OAuth client libraries read it too.
type oauthTokenResponse struct {
	AccessToken      string `json:"accessToken"`
	TokenType        string `json:"tokenType"`
	ExpiresIn        int64  `json:"expiresIn"`
	RefreshExpiresIn int64  `json:"refreshExpiresIn"`
	NotBeforePolicy  int64  `json:"notBeforePolicy"`
	Scope            string `json:"scope"`
	RFCAccessToken   string `json:"access_token"`
	RFCTokenType     string `json:"token_type"`
	RFCExpiresIn     int64  `json:"expires_in"`
	RequestID        string `json:"requestId"`
}

// oauthToken handles POST /oauth/token: the client credentials grant. The
// token acts for the client's entity (oauthclients.go) for
// auth.oauthTokenTTL, and stops working as soon as the client is deleted
// or disabled or its secret rotated.
func (s *Server) oauthToken(c *gin.Context) error {
	f, err := readOAuthForm(c)
	if err != nil {
		return err
	}
	grant, err := f.value("grantType", "grant_type")
	if err != nil {
		return err
	}
	switch grant {
	case "":
		return apiErr(http.StatusBadRequest, oauthInvalidRequest, "grantType is required (client_credentials)")
	case "client_credentials":
	default:
		return apiErr(http.StatusBadRequest, oauthUnsupportedGrantType, "grantType must be client_credentials")
	}
	scope, err := f.value("scope")
	if err != nil {
		return err
	}
	for _, sc := range strings.Fields(scope) {
		if sc != oauthScope {
			return apiErr(http.StatusBadRequest, oauthInvalidScope, "scope must be %s (or left out)", oauthScope)
		}
	}
	client, err := s.authenticateClient(c, f, endpointOAuthToken)
	if err != nil {
		return err
	}
	p := Principal{Kind: kindClient, ClientID: client.ID, Generation: client.SecretGeneration,
		PartnerID: client.PartnerID, OrganizationID: client.OrganizationID, AccessLevel: store.AccessEditor}
	ttl := s.cfg.Auth.OAuthTokenTTL
	tok, _, err := s.issue(p, ttl)
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
	secs := int64(ttl.Seconds())
	return okBody(c, oauthTokenResponse{AccessToken: tok, TokenType: "Bearer", ExpiresIn: secs, Scope: oauthScope,
		RFCAccessToken: tok, RFCTokenType: "Bearer", RFCExpiresIn: secs, RequestID: requestID(c)})
}

// introspection is the answer of POST /oauth/introspect (RFC 7662 with the
// members of the reference contract); only active is given for a token
// that is not active.
type introspection struct {
	Active           bool   `json:"active"`
	Exp              int64  `json:"exp,omitempty"`
	Iat              int64  `json:"iat,omitempty"`
	Jti              string `json:"jti,omitempty"`
	Iss              string `json:"iss,omitempty"`
	Sub              string `json:"sub,omitempty"`
	Typ              string `json:"typ,omitempty"`
	TokenType        string `json:"tokenType,omitempty"`
	Azp              string `json:"azp,omitempty"`
	ClientID         string `json:"clientId,omitempty"`
	Username         string `json:"username,omitempty"`
	Name             string `json:"name,omitempty"`
	Email            string `json:"email,omitempty"`
	AccessLevel      string `json:"accessLevel,omitempty"`
	Source           string `json:"source,omitempty"`
	Type             string `json:"type,omitempty"`
	ID               int64  `json:"id,omitempty"`
	ParentResellerID int64  `json:"parentResellerId,omitempty"`
	RequestID        string `json:"requestId"`
}

// introspectOAuthToken handles POST /oauth/introspect: a client, with its
// own credentials, asks whether a token is active and what it acts for.
// A token is active when the API would accept it now (signature, lifetime,
// cloud, and resolve: its user or client still stands) and it acts inside
// the asking client's entity; any other token, garbage included, is
// {"active": false}.
func (s *Server) introspectOAuthToken(c *gin.Context) error {
	f, err := readOAuthForm(c)
	if err != nil {
		return err
	}
	token, err := f.value("token")
	if err != nil {
		return err
	}
	if token == "" {
		return apiErr(http.StatusBadRequest, oauthInvalidRequest, "token is required")
	}
	client, err := s.authenticateClient(c, f, endpointOAuthIntrospect)
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "no-store")
	inactive := introspection{RequestID: requestID(c)}
	cl, err := s.parse(token)
	if err != nil {
		return okBody(c, inactive)
	}
	p, err := s.resolve(c, cl)
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		return okBody(c, inactive)
	case err != nil:
		return err
	}
	inside := p.PartnerID == client.PartnerID
	if client.OrganizationID != 0 {
		inside = p.OrganizationID == client.OrganizationID
	}
	if !inside {
		return okBody(c, inactive)
	}
	out := introspection{Active: true, Jti: cl.ID, Iss: cl.Issuer, Sub: cl.Subject, Typ: "Bearer", TokenType: "Bearer",
		AccessLevel: p.AccessLevel, Source: "api", Email: p.Email, Username: p.Email, RequestID: requestID(c)}
	if cl.ExpiresAt != nil {
		out.Exp = cl.ExpiresAt.Unix()
	}
	if cl.IssuedAt != nil {
		out.Iat = cl.IssuedAt.Unix()
	}
	switch {
	case p.Kind == kindClient:
		out.Source, out.Azp, out.ClientID, out.Username = "oauth", p.ClientID, p.ClientID, p.ClientID
		out.Type, out.ID = oauthEntityPartner, p.PartnerID
		if p.OrganizationID != 0 {
			out.Type, out.ID, out.ParentResellerID = oauthEntityOrganization, p.OrganizationID, p.PartnerID
		}
	case p.Kind == kindAdmin:
		out.Source, out.Type, out.ID, out.ParentResellerID = "sso", oauthEntityOrganization, p.OrganizationID, p.PartnerID
	default:
		out.Type, out.ID = "user", p.UserID
		if p.Kind == kindScoped {
			out.Source = "scoped"
		}
	}
	out.Name = out.Username
	return okBody(c, out)
}
