package cloudapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// postForm posts form to path, with HTTP Basic credentials when user is
// not empty.
func (e *testEnv) postForm(path string, form url.Values, user, pass string) *response {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	return e.send(req)
}

// tokenRequest asks for a token with the contract's member names.
func (e *testEnv) tokenRequest(id, secret string) *response {
	e.t.Helper()
	return e.postForm("/v2/oauth/token", url.Values{"grantType": {"client_credentials"}, "clientId": {id}, "clientSecret": {secret}}, "", "")
}

// clientToken gets a token with client credentials, failing on anything but 200.
func (e *testEnv) clientToken(id, secret string) string {
	e.t.Helper()
	return e.tokenRequest(id, secret).want(http.StatusOK).str("accessToken")
}

// introspect asks, as client id, about token.
func (e *testEnv) introspect(id, secret, token string) *response {
	e.t.Helper()
	return e.postForm("/v2/oauth/introspect", url.Values{"token": {token}, "clientId": {id}, "clientSecret": {secret}}, "", "").
		want(http.StatusOK)
}

// TestOAuthTokenActsForItsEntity gets tokens with client credentials and
// uses them: an organization's client is that organization's
// administrator, a partner's client has the partner's rights; neither
// reaches another tenant's records, and the tokens stop working at once
// when the client is disabled, its secret rotated or the client deleted.
func TestOAuthTokenActsForItsEntity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	org2 := e.newOrg(e.partnerToken, "Bolt")
	truck := e.newDevice(e.partnerToken, org.id, testIMEI(1), "Truck")
	van := e.newDevice(e.partnerToken, org2.id, testIMEI(2), "Van")
	_, other := e.newPartner("Other", "other@example.com")
	otherOrg := e.newOrg(other, "Other fleet")
	foreign := e.newDevice(other, otherOrg.id, testIMEI(3), "Foreign")

	orgClient, orgSecret := e.newOAuthClient(e.partnerToken, "organization", org.id)
	r := e.tokenRequest(orgClient, orgSecret).want(http.StatusOK)
	orgToken := r.str("accessToken")
	if r.str("tokenType") != "Bearer" || r.num("expiresIn") != 3600 || r.str("access_token") != orgToken ||
		r.str("token_type") != "Bearer" || r.num("expires_in") != 3600 || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token answer %s (headers %v)", r.raw, r.header)
	}
	if me := e.do("GET", "/v2/me", orgToken, nil).want(http.StatusOK); me.str("data.me.role") != "administrator" || me.id("data.me.organizationId") != org.id {
		t.Fatalf("the organization client's /me: %s", me.raw)
	}
	if got := imeis(e.do("GET", orgPath(org.id, "/devices"), orgToken, nil).want(http.StatusOK)); len(got) != 1 || got[0] != truck {
		t.Fatalf("the organization client's devices: %v", got)
	}
	e.do("PATCH", "/v2/devices/"+truck, orgToken, map[string]any{"name": "Truck 1"}).want(http.StatusOK)
	e.do("GET", "/v2/devices/"+van, orgToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", orgPath(org2.id, ""), orgToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", "/v2/devices/"+foreign, orgToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", "/v2/partner-devices", orgToken, nil).wantError(http.StatusForbidden, nameForbidden)

	// A partner's client, asking the RFC's way: names of RFC 6749 and HTTP Basic.
	partnerClient, partnerSecret := e.newOAuthClient(e.partnerToken, "partner", e.partnerID)
	r = e.postForm("/v2/oauth/token", url.Values{"grant_type": {"client_credentials"}, "scope": {"all"}}, partnerClient, partnerSecret).
		want(http.StatusOK)
	partnerToken := r.str("access_token")
	if me := e.do("GET", "/v2/me", partnerToken, nil).want(http.StatusOK); me.str("data.entity") != "partner" || me.id("data.me.partnerId") != e.partnerID {
		t.Fatalf("the partner client's /me: %s", me.raw)
	}
	if got := imeis(e.do("GET", "/v2/partner-devices", partnerToken, nil).want(http.StatusOK)); len(got) != 2 {
		t.Fatalf("the partner client's devices: %v", got)
	}
	e.do("GET", "/v2/devices/"+van, partnerToken, nil).want(http.StatusOK)
	e.do("POST", "/v2/organizations", partnerToken, map[string]any{"name": "Created by a client"}).want(http.StatusOK)
	e.do("GET", "/v2/devices/"+foreign, partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", orgPath(otherOrg.id, ""), partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)

	// The writes of a client are audited as the client's.
	entries, _, err := e.db.AuditLog(t.Context(), store.AuditFilter{}, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(entries[0].Source, "api:client:"+partnerClient) {
		t.Fatalf("the client's write is audited as %q", entries[0].Source)
	}

	// Disabled: refused; enabled again: its unexpired token works again.
	e.do("PATCH", "/v2/oauth/clients/"+orgClient, e.partnerToken, map[string]any{"enabled": false}).want(http.StatusOK)
	e.do("GET", "/v2/devices/"+truck, orgToken, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "disabled")
	e.tokenRequest(orgClient, orgSecret).wantError(http.StatusUnauthorized, oauthInvalidClient)
	e.do("PATCH", "/v2/oauth/clients/"+orgClient, e.partnerToken, map[string]any{"enabled": true}).want(http.StatusOK)
	e.do("GET", "/v2/devices/"+truck, orgToken, nil).want(http.StatusOK)

	// Rotated: the old token and the old secret are refused, the new secret works.
	newSecret := e.do("PUT", "/v2/oauth/clients/"+orgClient+"/secret", e.partnerToken, nil).want(http.StatusOK).str("data.clientSecret")
	e.do("GET", "/v2/devices/"+truck, orgToken, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "rotated")
	e.tokenRequest(orgClient, orgSecret).wantError(http.StatusUnauthorized, oauthInvalidClient)
	e.do("GET", "/v2/devices/"+truck, e.clientToken(orgClient, newSecret), nil).want(http.StatusOK)

	// Deleted: refused at once.
	e.do("DELETE", "/v2/oauth/clients/"+partnerClient, e.partnerToken, nil).want(http.StatusOK)
	e.do("GET", "/v2/devices/"+van, partnerToken, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "no longer exists")
	e.postForm("/v2/oauth/token", url.Values{"grant_type": {"client_credentials"}}, partnerClient, partnerSecret).
		wantError(http.StatusUnauthorized, oauthInvalidClient)
}

// TestOAuthTokenExpires: a client token lasts auth.oauthTokenTTL.
func TestOAuthTokenExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config, _ *Deps) { c.Auth.OAuthTokenTTL = 10 * time.Minute })
	org := e.newOrg(e.partnerToken, "Acme")
	id, secret := e.newOAuthClient(e.partnerToken, "organization", org.id)
	r := e.tokenRequest(id, secret).want(http.StatusOK)
	if r.num("expiresIn") != 600 {
		t.Fatalf("expiresIn %v, want 600", r.get("expiresIn"))
	}
	token := r.str("accessToken")
	e.clock.Advance(10*time.Minute - time.Second)
	e.do("GET", orgPath(org.id, ""), token, nil).want(http.StatusOK)
	e.clock.Advance(2 * time.Second)
	e.do("GET", orgPath(org.id, ""), token, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "expired")
}

// TestOAuthTokenRequestErrors: malformed requests are RFC 6749 errors
// naming what is wrong, and wrong credentials read the same whether or not
// the client exists.
func TestOAuthTokenRequestErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.newOAuthClient(e.partnerToken, "partner", e.partnerID)
	grant := "client_credentials"
	tests := []struct {
		name       string
		form       url.Values
		user, pass string
		status     int
		code, msg  string
	}{
		{"no grant type", url.Values{"clientId": {id}, "clientSecret": {secret}}, "", "", 400, oauthInvalidRequest, "grantType is required"},
		{"another grant", url.Values{"grantType": {"password"}, "clientId": {id}, "clientSecret": {secret}}, "", "", 400, oauthUnsupportedGrantType, "client_credentials"},
		{"a grant given twice", url.Values{"grantType": {grant}, "grant_type": {grant}, "clientId": {id}, "clientSecret": {secret}}, "", "", 400, oauthInvalidRequest, "grantType must be given once"},
		{"another scope", url.Values{"grantType": {grant}, "clientId": {id}, "clientSecret": {secret}, "scope": {"all admin"}}, "", "", 400, oauthInvalidScope, "scope must be all"},
		{"no client id", url.Values{"grantType": {grant}, "clientSecret": {secret}}, "", "", 400, oauthInvalidRequest, "clientId is required"},
		{"no secret", url.Values{"grantType": {grant}, "clientId": {id}}, "", "", 400, oauthInvalidRequest, "clientSecret is required"},
		{"credentials twice", url.Values{"grantType": {grant}, "clientSecret": {secret}}, id, secret, 400, oauthInvalidRequest, "not both"},
		{"a wrong secret", url.Values{"grantType": {grant}, "clientId": {id}, "clientSecret": {secret + "x"}}, "", "", 401, oauthInvalidClient, "the client credentials are not valid"},
		{"an unknown client", url.Values{"grantType": {grant}, "clientId": {"0123456789abcdef01234567"}, "clientSecret": {secret}}, "", "", 401, oauthInvalidClient, "the client credentials are not valid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.postForm("/v2/oauth/token", tc.form, tc.user, tc.pass).wantError(tc.status, tc.code, tc.msg)
			if tc.status == 401 && r.header.Get("WWW-Authenticate") != "" {
				t.Fatalf("WWW-Authenticate without Basic authentication")
			}
		})
	}
	r := e.postForm("/v2/oauth/token", url.Values{"grant_type": {grant}}, id, "wrong").wantError(http.StatusUnauthorized, oauthInvalidClient)
	if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("WWW-Authenticate %q after Basic authentication", r.header.Get("WWW-Authenticate"))
	}
	// The contract's body is a form; JSON is refused.
	e.do("POST", "/v2/oauth/token", "", map[string]any{"grantType": grant, "clientId": id, "clientSecret": secret}).
		wantError(http.StatusBadRequest, oauthInvalidRequest, "application/x-www-form-urlencoded")
	e.clientToken(id, secret)
}

// TestOAuthIntrospect: a live token of the client's entity is active with
// its claims; an expired, revoked, foreign or garbage token is not; the
// asking client must authenticate.
func TestOAuthIntrospect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	org2 := e.newOrg(e.partnerToken, "Bolt")
	id, secret := e.newOAuthClient(e.partnerToken, "organization", org.id)
	id2, secret2 := e.newOAuthClient(e.partnerToken, "organization", org2.id)
	partnerClient, partnerSecret := e.newOAuthClient(e.partnerToken, "partner", e.partnerID)
	token := e.clientToken(id, secret)

	r := e.introspect(id, secret, token)
	if r.get("active") != true || r.str("azp") != id || r.str("clientId") != id || r.str("source") != "oauth" ||
		r.str("type") != "organization" || r.id("id") != org.id || r.id("parentResellerId") != e.partnerID ||
		r.str("accessLevel") != store.AccessEditor || r.num("exp") != r.num("iat")+3600 || r.num("iat") != float64(e.clock.Now().Unix()) ||
		r.str("jti") == "" || r.str("sub") != "client:"+id || r.str("tokenType") != "Bearer" {
		t.Fatalf("live token: %s", r.raw)
	}
	// The partner's client sees its organizations' tokens and its users'; another organization's client does not.
	if r := e.introspect(partnerClient, partnerSecret, token); r.get("active") != true {
		t.Fatalf("the partner's client on the organization's token: %s", r.raw)
	}
	if r := e.introspect(partnerClient, partnerSecret, e.partnerToken); r.get("active") != true || r.str("type") != "user" || r.str("email") != "partner@example.com" {
		t.Fatalf("the partner's client on its user's token: %s", r.raw)
	}
	inactive := func(what, token string) {
		t.Helper()
		r := e.introspect(id, secret, token)
		if r.get("active") != false || len(r.body) != 2 {
			t.Fatalf("%s: %s", what, r.raw)
		}
	}
	inactive("another organization's token", e.clientToken(id2, secret2))
	inactive("the partner's user token", e.partnerToken)
	inactive("garbage", "not.a.token")
	inactive("a token of another key", token[:len(token)-4]+"AAAA")

	// Revoked: the other organization's client is deleted.
	token2 := e.clientToken(id2, secret2)
	if r := e.introspect(id2, secret2, token2); r.get("active") != true {
		t.Fatalf("own token: %s", r.raw)
	}
	e.do("DELETE", "/v2/oauth/clients/"+id2, e.partnerToken, nil).want(http.StatusOK)
	if r := e.introspect(partnerClient, partnerSecret, token2); r.get("active") != false {
		t.Fatalf("a deleted client's token: %s", r.raw)
	}
	// Expired.
	e.clock.Advance(time.Hour + time.Second)
	inactive("an expired token", token)

	// The asking client must authenticate.
	e.postForm("/v2/oauth/introspect", url.Values{"token": {token}, "clientId": {id}, "clientSecret": {"wrong"}}, "", "").
		wantError(http.StatusUnauthorized, oauthInvalidClient)
	e.postForm("/v2/oauth/introspect", url.Values{"token": {token}}, id2, secret2).
		wantError(http.StatusUnauthorized, oauthInvalidClient)
	e.postForm("/v2/oauth/introspect", url.Values{"clientId": {id}, "clientSecret": {secret}}, "", "").
		wantError(http.StatusBadRequest, oauthInvalidRequest, "token is required")
}

// TestOAuthTokenBruteForce: wrong secrets are braked per client and per
// client address like passwords, before any secret is checked, and
// requests are rate-limited per address like POST /authenticate.
func TestOAuthTokenBruteForce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.newOAuthClient(e.partnerToken, "partner", e.partnerID)
	free := e.cfg.Auth.Throttle.AccountFreeAttempts
	for range free {
		e.tokenRequest(id, "guess-"+secret).wantError(http.StatusUnauthorized, oauthInvalidClient)
	}
	// The right secret now waits too.
	e.tokenRequest(id, secret).wantThrottled(1)
	if got := e.metric(`fleetcam_auth_failures_total{endpoint="oauth_token",reason="throttled_account"}`); !strings.HasSuffix(got, " 1") {
		t.Fatalf("throttled attempts counted as %q", got)
	}
	e.clock.Advance(time.Second)
	e.clientToken(id, secret)

	// Guesses spread over client ids are one address, which has spent
	// free attempts already.
	for i := range e.cfg.Auth.Throttle.AddressFreeAttempts - free {
		e.tokenRequest("guess"+itoa(int64(i)), secret).wantError(http.StatusUnauthorized, oauthInvalidClient)
	}
	e.tokenRequest(id, secret).wantThrottled(1)
	e.postForm("/v2/oauth/introspect", url.Values{"token": {"x"}, "clientId": {id}, "clientSecret": {secret}}, "", "").wantThrottled(1)
}

// TestOAuthTokenRateLimitByAddress: POST /oauth/token spends the address's
// request budget like POST /authenticate.
func TestOAuthTokenRateLimitByAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config, _ *Deps) { c.HTTP.RateLimit, c.HTTP.RateBurst = 1, 3 })
	id, secret := e.newOAuthClient(e.partnerToken, "partner", e.partnerID)
	// newEnv logged in once already from this address.
	e.clientToken(id, secret)
	e.clientToken(id, secret)
	e.tokenRequest(id, secret).wantError(http.StatusTooManyRequests, nameTooManyRequests, "retry after 1 s")
	e.clock.Advance(time.Second)
	e.clientToken(id, secret)
}
