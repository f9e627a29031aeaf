package cloudapi

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/golang-jwt/jwt/v5"
)

// Token kinds.
const (
	kindUser   = "user"   // from POST /authenticate
	kindAdmin  = "admin"  // from GET /organizations/sso: an organization admin without a user
	kindScoped = "scoped" // from POST /scoped-token
	kindClient = "client" // from POST /oauth/token: an OAuth client of a partner or an organization
)

// Scope limits a scoped token to one device, one group or one organization,
// and to named features.
type Scope struct {
	IMEI           string   `json:"imei,omitempty"`
	GroupID        int64    `json:"groupId,omitempty"`
	OrganizationID int64    `json:"organizationId,omitempty"`
	Features       []string `json:"features,omitempty"`
	// MediaFeatures are the features minted with allowMedia.
	MediaFeatures []string `json:"mediaFeatures,omitempty"`
	// PartnerID, when set, keeps the token to the devices of the partner that
	// minted it, also in an organization shared with other partners.
	PartnerID int64 `json:"partnerId,omitempty"`
}

// claims is the body of every API token fleetcam issues.
type claims struct {
	jwt.RegisteredClaims
	Cloud          string `json:"cloud"`
	Kind           string `json:"kind"`
	UserID         int64  `json:"uid,omitempty"`
	PartnerID      int64  `json:"pid,omitempty"`
	OrganizationID int64  `json:"oid,omitempty"`
	AccessLevel    string `json:"lvl,omitempty"`
	Scope          *Scope `json:"scope,omitempty"`
	// ClientID names the OAuth client of a client token; Generation is
	// what the token was issued under: the user's token generation, or the
	// generation of the client's secret.
	ClientID   string `json:"cid,omitempty"`
	Generation int64  `json:"gen,omitempty"`
}

const issuer = "fleetcam"

var errTokenCloud = errors.New("the token was issued in another cloud environment")

// issue signs a token for p valid for ttl from now.
func (s *Server) issue(p Principal, ttl time.Duration) (string, time.Time, error) {
	now := s.now()
	exp := now.Add(ttl)
	cl := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			ID: rand.Text(), Issuer: issuer, Subject: p.subject(), IssuedAt: jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp),
		},
		Cloud: s.cfg.Cloud, Kind: p.Kind, UserID: p.UserID, PartnerID: p.PartnerID,
		OrganizationID: p.OrganizationID, AccessLevel: p.AccessLevel, Scope: p.Scope,
		ClientID: p.ClientID, Generation: p.Generation,
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, cl).SignedString(s.key)
	return tok, exp, err
}

// parse verifies a token's signature, lifetime and cloud.
func (s *Server) parse(token string) (*claims, error) {
	var cl claims
	_, err := jwt.ParseWithClaims(token, &cl, func(*jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer(issuer), jwt.WithTimeFunc(s.now),
		jwt.WithExpirationRequired())
	if err != nil {
		return nil, err
	}
	if cl.Cloud != s.cfg.Cloud {
		return nil, errTokenCloud
	}
	return &cl, nil
}

// ssoSecret derives an organization's ssoSecret from the server key and the
// organization's salt; only the salt is stored. The webhook dispatcher
// derives the same secret to sign deliveries (webhooks.SSOSecret).
func (s *Server) ssoSecret(orgID int64, salt []byte) string {
	return webhooks.SSOSecret(s.key, orgID, salt)
}

// ssoTimestampLayout is the timestamp claim format of an SSO JWT.
const ssoTimestampLayout = "2006-01-02T15:04:05"

// ssoClaims are the claims of the JWT a partner builds to get an admin token.
type ssoClaims struct {
	OrganizationID jsonInt `json:"organizationId"`
	Timestamp      string  `json:"timestamp"`
	// ID (jti), when given, names the token for replay detection.
	ID string `json:"jti,omitempty"`
}

// GetExpirationTime and friends make ssoClaims a jwt.Claims; lifetime is
// checked from the timestamp claim instead.
func (ssoClaims) GetExpirationTime() (*jwt.NumericDate, error) { return nil, nil }
func (ssoClaims) GetIssuedAt() (*jwt.NumericDate, error)       { return nil, nil }
func (ssoClaims) GetNotBefore() (*jwt.NumericDate, error)      { return nil, nil }
func (ssoClaims) GetIssuer() (string, error)                   { return "", nil }
func (ssoClaims) GetSubject() (string, error)                  { return "", nil }
func (ssoClaims) GetAudience() (jwt.ClaimStrings, error)       { return nil, nil }

// jsonInt accepts an integer given as a JSON number or string.
type jsonInt int64

func (j *jsonInt) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("organizationId must be an integer")
	}
	*j = jsonInt(v)
	return nil
}
