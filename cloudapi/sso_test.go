package cloudapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/golang-jwt/jwt/v5"
)

// ssoJWT builds the JWT a partner sends to GET /organizations/sso.
func ssoJWT(t *testing.T, method jwt.SigningMethod, secret string, claims jwt.MapClaims) string {
	t.Helper()
	var key any = []byte(secret)
	if method == jwt.SigningMethodNone {
		key = jwt.UnsafeAllowNoneSignatureType
	}
	tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func ssoClaimsAt(orgID int64, ts time.Time) jwt.MapClaims {
	return jwt.MapClaims{"organizationId": orgID, "timestamp": ts.UTC().Format("2006-01-02T15:04:05")}
}

func TestSSOAdminToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	r := e.do("GET", "/v2/organizations/sso", ssoJWT(t, jwt.SigningMethodHS256, org.secret, ssoClaimsAt(org.id, e.clock.Now())), nil).want(http.StatusOK)
	admin := r.str("data.token")
	if admin == "" || r.str("token") != admin || r.str("data.expiresAt") != isoTime(e.clock.Now().Add(24*time.Hour)) {
		t.Fatalf("unexpected sso answer %s", r.raw)
	}
	me := e.do("GET", "/v2/me", admin, nil).want(http.StatusOK)
	if me.str("data.me.role") != "administrator" || me.id("data.me.organizationId") != org.id {
		t.Fatalf("admin /me: %s", me.raw)
	}
	// The admin token acts for the organization: its devices belong to the creating partner.
	d := e.do("POST", orgPath(org.id, "/devices"), admin, map[string]any{"imei": testIMEI(1), "name": "Truck"}).want(http.StatusOK)
	if d.id("data.partnerId") != e.partnerID {
		t.Fatalf("device added by admin token: %s", d.raw)
	}
	other := e.newOrg(e.partnerToken, "Other")
	e.do("GET", orgPath(other.id, ""), admin, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", "/v2/organizations", admin, map[string]any{"name": "x"}).wantError(http.StatusForbidden, nameForbidden, "partners only")

	// The organization id may come as a string, and the timestamp with a zone.
	e.do("GET", "/v2/organizations/sso", ssoJWT(t, jwt.SigningMethodHS256, org.secret,
		jwt.MapClaims{"organizationId": itoa(org.id), "timestamp": e.clock.Now().Format(time.RFC3339)}), nil).want(http.StatusOK)

	e.clock.Advance(24*time.Hour + time.Second)
	e.do("GET", "/v2/me", admin, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "expired")
}

func TestSSOExpiresAfter15Minutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	at := e.clock.Now()
	tok := ssoJWT(t, jwt.SigningMethodHS256, org.secret, ssoClaimsAt(org.id, at))
	e.clock.Advance(15 * time.Minute)
	e.do("GET", "/v2/organizations/sso", tok, nil).want(http.StatusOK)
	e.clock.Advance(time.Second)
	late := ssoClaimsAt(org.id, at)
	late["jti"] = "never used"
	r := e.do("GET", "/v2/organizations/sso", ssoJWT(t, jwt.SigningMethodHS256, org.secret, late), nil).
		wantError(http.StatusUnauthorized, nameUnauthorized, "SSO token is not valid")
	if r.get("data") != nil || r.get("token") != nil {
		t.Fatalf("refusal carries a token: %s", r.raw)
	}
}

func TestSSORefusals(t *testing.T) {
	t.Parallel()
	// Every case is refused for what it is, not for the refusals before it.
	e := newEnv(t, func(c *configs.Config, _ *Deps) {
		c.Auth.Throttle.AccountFreeAttempts, c.Auth.Throttle.AddressFreeAttempts = 100, 100
	})
	org := e.newOrg(e.partnerToken, "Acme")
	other := e.newOrg(e.partnerToken, "Other")
	now := e.clock.Now()

	// An organization no partner created through the API has no ssoSecret salt.
	var bare *store.Organization
	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) (err error) {
		bare, err = tx.CreateOrganization(e.partnerID, "Imported", nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		token string
	}{
		{"no token", ""},
		{"not a JWT", "abc.def"},
		{"forged signature", ssoJWT(t, jwt.SigningMethodHS256, "not-the-secret", ssoClaimsAt(org.id, now))},
		{"secret of another organization", ssoJWT(t, jwt.SigningMethodHS256, other.secret, ssoClaimsAt(org.id, now))},
		{"unknown organization", ssoJWT(t, jwt.SigningMethodHS256, org.secret, ssoClaimsAt(999, now))},
		{"no organization id", ssoJWT(t, jwt.SigningMethodHS256, org.secret, jwt.MapClaims{"timestamp": now.Format("2006-01-02T15:04:05")})},
		{"stale", ssoJWT(t, jwt.SigningMethodHS256, org.secret, ssoClaimsAt(org.id, now.Add(-16*time.Minute)))},
		{"future", ssoJWT(t, jwt.SigningMethodHS256, org.secret, ssoClaimsAt(org.id, now.Add(5*time.Minute)))},
		{"no timestamp", ssoJWT(t, jwt.SigningMethodHS256, org.secret, jwt.MapClaims{"organizationId": org.id})},
		{"bad timestamp", ssoJWT(t, jwt.SigningMethodHS256, org.secret, jwt.MapClaims{"organizationId": org.id, "timestamp": "yesterday"})},
		{"HS512", ssoJWT(t, jwt.SigningMethodHS512, org.secret, ssoClaimsAt(org.id, now))},
		{"unsigned", ssoJWT(t, jwt.SigningMethodNone, "", ssoClaimsAt(org.id, now))},
		{"organization without a partner secret", ssoJWT(t, jwt.SigningMethodHS256, e.api.ssoSecret(bare.ID, nil), ssoClaimsAt(bare.ID, now))},
		{"an API token", e.partnerToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("GET", "/v2/organizations/sso", tc.token, nil).wantError(http.StatusUnauthorized, nameUnauthorized)
		})
	}
}
