package cloudapi

import (
	"errors"
	"net/http"
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
// organizations or secrets.
func (s *Server) sso(c *gin.Context) {
	token := bearer(c)
	if token == "" {
		s.fail(c, unauthorized("the Authorization header must carry a bearer JWT signed with the organization's ssoSecret"))
		return
	}
	o, err := s.verifySSO(token)
	if err != nil {
		s.log.Info("sso refused", "requestId", requestID(c), "reason", err)
		s.fail(c, unauthorized("the SSO token is not valid"))
		return
	}
	p := Principal{Kind: kindAdmin, PartnerID: o.PartnerID, OrganizationID: o.ID, AccessLevel: store.AccessEditor}
	tok, exp, err := s.issue(p, s.cfg.Auth.AdminTokenTTL)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, ssoBody{Data: ssoResult{Token: tok, ExpiresAt: isoTime(exp)}, Token: tok, RequestID: requestID(c)})
}

// verifySSO checks the JWT's signature against the ssoSecret of the
// organization it names, then its timestamp; it returns that organization.
func (s *Server) verifySSO(token string) (*store.Organization, error) {
	var cl ssoClaims
	var org *store.Organization
	_, err := jwt.ParseWithClaims(token, &cl, func(*jwt.Token) (any, error) {
		if cl.OrganizationID <= 0 {
			return nil, errors.New("no organizationId claim")
		}
		err := s.view(func(tx *store.Tx) error {
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
		return nil, errors.Join(errSSO, err)
	}
	ts, err := parseSSOTimestamp(cl.Timestamp)
	if err != nil {
		return nil, errors.Join(errSSO, err)
	}
	now := s.now()
	switch {
	case now.Sub(ts) > s.cfg.Auth.SSOJWTTTL:
		return nil, errors.Join(errSSO, errors.New("timestamp is older than the SSO lifetime"))
	case ts.Sub(now) > ssoClockSkew:
		return nil, errors.Join(errSSO, errors.New("timestamp lies in the future"))
	}
	return org, nil
}

func parseSSOTimestamp(v string) (time.Time, error) {
	for _, layout := range ssoTimestampLayouts {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("timestamp claim is not YYYY-MM-DDThh:mm:ss")
}
