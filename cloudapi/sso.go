package cloudapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"
)

// ssoClockSkew is how far in the future an SSO timestamp may lie, for
// callers whose clock runs a little ahead.
const ssoClockSkew = time.Minute

var errSSO = errors.New("cloudapi: sso token refused")

// ssoTimestampLayouts are the accepted forms of the timestamp claim: the
// documented YYYY-MM-DDThh:mm:ss in UTC, and the same with a zone or fraction.
var ssoTimestampLayouts = []string{ssoTimestampLayout, "2006-01-02T15:04:05Z07:00", time.RFC3339Nano}

// ssoResult is the admin token an SSO exchange yields.
type ssoResult struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expiresAt"`
}

// ssoBody repeats the token at the top level, where the reference contract
// of this call has it, besides the usual data member.
type ssoBody struct {
	Data      ssoResult `json:"data"`
	Token     string    `json:"token"`
	RequestID string    `json:"requestId"`
}

// sso handles GET /organizations/sso: a JWT signed (HS256) with an
// organization's ssoSecret, carrying organizationId and a timestamp no older
// than the SSO lifetime, buys a 24-hour admin token for that organization.
// Every refusal reads the same, so the call reveals nothing about
// organizations or secrets. Guessing is braked per client address and per
// organization like password sign-ins, and each JWT is accepted once.
func (s *Server) sso(c *gin.Context) error {
	token := bearer(c)
	if token == "" {
		return unauthorized("the Authorization header must carry a bearer JWT signed with the organization's ssoSecret")
	}
	account := ""
	var unverified ssoClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &unverified); err == nil && unverified.OrganizationID > 0 {
		account = "organization:" + strconv.FormatInt(int64(unverified.OrganizationID), 10)
	}
	if err := s.admitSignin(c, endpointSSO, account); err != nil {
		return err
	}
	o, use, err := s.verifySSO(c, token)
	if err != nil {
		s.log.Info("sso refused", "requestId", requestID(c), "reason", err)
		s.signinFailed(endpointSSO, reasonBadCredentials)
		return unauthorized("the SSO token is not valid")
	}
	if !s.ssoUsed.use(use.key, use.until, s.now()) {
		s.signinFailed(endpointSSO, reasonReplayed)
		return unauthorized("the SSO token was already used; sign a new one (a fresh timestamp or jti) for every exchange")
	}
	s.signinSucceeded(c, account)
	p := Principal{Kind: kindAdmin, PartnerID: o.PartnerID, OrganizationID: o.ID, AccessLevel: store.AccessEditor}
	tok, exp, err := s.issue(p, s.cfg.Auth.AdminTokenTTL)
	if err != nil {
		return err
	}
	return okBody(c, ssoBody{Data: ssoResult{Token: tok, ExpiresAt: isoTime(exp)}, Token: tok, RequestID: requestID(c)})
}

// ssoUse names an accepted SSO JWT and how long it would stay acceptable.
type ssoUse struct {
	key   string
	until time.Time
}

// verifySSO checks the JWT's signature against the ssoSecret of the
// organization it names, then its timestamp; it returns that organization.
func (s *Server) verifySSO(c *gin.Context, token string) (*store.Organization, ssoUse, error) {
	var cl ssoClaims
	var org *store.Organization
	_, err := jwt.ParseWithClaims(token, &cl, func(*jwt.Token) (any, error) {
		if cl.OrganizationID <= 0 {
			return nil, errors.New("no organizationId claim")
		}
		err := s.view(c, func(tx *store.Tx) error {
			o, err := tx.Organization(int64(cl.OrganizationID))
			if err != nil {
				return err
			}
			// Only an organization a partner created can be entered by SSO.
			if _, err := tx.Partner(o.PartnerID); err != nil || len(o.SSOSalt) == 0 {
				return errors.New("organization has no creating partner")
			}
			org = o
			return nil
		})
		if err != nil {
			return nil, err
		}
		return []byte(s.ssoSecret(org.ID, org.SSOSalt)), nil
	}, jwt.WithValidMethods([]string{"HS256"}))
	if err != nil {
		return nil, ssoUse{}, errors.Join(errSSO, err)
	}
	ts, err := parseSSOTimestamp(cl.Timestamp)
	if err != nil {
		return nil, ssoUse{}, errors.Join(errSSO, err)
	}
	now := s.now()
	switch {
	case now.Sub(ts) > s.cfg.Auth.SSOJWTTTL:
		return nil, ssoUse{}, errors.Join(errSSO, errors.New("timestamp is older than the SSO lifetime"))
	case ts.Sub(now) > ssoClockSkew:
		return nil, ssoUse{}, errors.Join(errSSO, errors.New("timestamp lies in the future"))
	}
	use := ssoUse{until: ts.Add(s.cfg.Auth.SSOJWTTTL)}
	if cl.ID != "" {
		use.key = "jti:" + strconv.FormatInt(org.ID, 10) + ":" + cl.ID
	} else {
		sum := sha256.Sum256([]byte(token))
		use.key = "sha256:" + hex.EncodeToString(sum[:])
	}
	return org, use, nil
}

// usedTokens remembers accepted SSO JWTs until they expire, so that each is
// accepted once. At most limit are kept: when full, expired ones go first,
// then those closest to expiring. Only validly signed JWTs get here, so
// only partners can fill it.
type usedTokens struct {
	limit int
	mu    sync.Mutex
	until map[string]time.Time
}

func newUsedTokens(limit int) *usedTokens {
	return &usedTokens{limit: max(limit, 1), until: map[string]time.Time{}}
}

// use records key as used until until; false if it was used already.
func (u *usedTokens) use(key string, until, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if t, found := u.until[key]; found && !now.After(t) {
		return false
	}
	if len(u.until) >= u.limit {
		for k, t := range u.until {
			if now.After(t) {
				delete(u.until, k)
			}
		}
	}
	for len(u.until) >= u.limit {
		first := ""
		for k, t := range u.until {
			if first == "" || t.Before(u.until[first]) {
				first = k
			}
		}
		delete(u.until, first)
	}
	u.until[key] = until
	return true
}

func parseSSOTimestamp(v string) (time.Time, error) {
	for _, layout := range ssoTimestampLayouts {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("timestamp claim is not YYYY-MM-DDThh:mm:ss")
}
