package cloudapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/store"
	"github.com/golang-jwt/jwt/v5"
)

// newOAuthClient creates a client of the entity with token and returns its
// id and secret.
func (e *testEnv) newOAuthClient(token, entityType string, entityID int64) (string, string) {
	e.t.Helper()
	r := e.do("POST", "/v2/oauth/clients/"+entityType+"/"+itoa(entityID), token, map[string]any{"clientName": "Integration"}).
		want(http.StatusCreated)
	return r.str("data.clientId"), r.str("data.clientSecret")
}

// ssoToken exchanges an SSO JWT of org for its administrator's token.
func (e *testEnv) ssoToken(org createdOrg) string {
	e.t.Helper()
	jwtok := ssoJWT(e.t, jwt.SigningMethodHS256, org.secret, ssoClaimsAt(org.id, e.clock.Now()))
	return e.do("GET", "/v2/organizations/sso", jwtok, nil).want(http.StatusOK).str("data.token")
}

// oauthAudit returns the audit entries of OAuth clients, as JSON.
func (e *testEnv) oauthAudit() []string {
	e.t.Helper()
	entries, _, err := e.db.AuditLog(e.t.Context(), store.AuditFilter{}, store.Page{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, en := range entries {
		if en.EntityType == "oauthClient" {
			raw, _ := json.Marshal(en)
			out = append(out, string(raw))
		}
	}
	return out
}

// TestOAuthClientLifecycle creates, lists, reads, disables, rotates and
// deletes clients of a partner and of its organization: the secret is in
// the answers of creation and rotation only, and every write is audited
// without it.
func TestOAuthClientLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")

	r := e.do("POST", "/v2/oauth/clients/partner/"+itoa(e.partnerID), e.partnerToken, map[string]any{"clientName": " Dispatch "}).
		want(http.StatusCreated)
	partnerClient, secret := r.str("data.clientId"), r.str("data.clientSecret")
	if partnerClient == "" || len(secret) < 40 || r.str("data.clientName") != "Dispatch" ||
		r.str("data.entityType") != "partner" || r.str("data.entityId") != itoa(e.partnerID) || r.str("data.createdAt") == "" {
		t.Fatalf("created partner client: %s", r.raw)
	}
	r = e.do("POST", "/v2/oauth/clients/organization/"+itoa(org.id), e.partnerToken, map[string]any{}).want(http.StatusCreated)
	orgClient, orgSecret := r.str("data.clientId"), r.str("data.clientSecret")
	if r.str("data.entityType") != "organization" || r.str("data.entityId") != itoa(org.id) || orgSecret == secret || orgClient == partnerClient {
		t.Fatalf("created organization client: %s", r.raw)
	}

	r = e.do("GET", "/v2/oauth/clients", e.partnerToken, nil).want(http.StatusOK)
	if n := len(r.list("data")); n != 2 || r.num("metadata.totalClientsIssued") != 2 || r.num("metadata.totalActiveClients") != 2 ||
		r.num("metadata.maxClientsQuota") != store.MaxOAuthClientsPerPartner {
		t.Fatalf("listed: %s", r.raw)
	}
	if strings.Contains(string(r.raw), "clientSecret") || strings.Contains(string(r.raw), secret) {
		t.Fatalf("the listing shows a secret: %s", r.raw)
	}
	r = e.do("GET", "/v2/oauth/clients/"+partnerClient, e.partnerToken, nil).want(http.StatusOK)
	if r.str("data.clientId") != partnerClient || r.get("data.enabled") != true || r.str("data.lastRefreshedAt") == "" || r.get("data.clientSecret") != nil {
		t.Fatalf("read: %s", r.raw)
	}

	r = e.do("PATCH", "/v2/oauth/clients/"+orgClient, e.partnerToken, map[string]any{"enabled": false}).want(http.StatusOK)
	if r.str("data.clientStatus") != "disabled" || r.get("data.enabled") != false {
		t.Fatalf("disabled: %s", r.raw)
	}
	r = e.do("GET", "/v2/oauth/clients", e.partnerToken, nil).want(http.StatusOK)
	if r.num("metadata.totalActiveClients") != 1 {
		t.Fatalf("listed after disabling: %s", r.raw)
	}
	r = e.do("PATCH", "/v2/oauth/clients/"+orgClient, e.partnerToken, map[string]any{"enabled": true}).want(http.StatusOK)
	if r.str("data.clientStatus") != "enabled" {
		t.Fatalf("enabled: %s", r.raw)
	}

	r = e.do("PUT", "/v2/oauth/clients/"+partnerClient+"/secret", e.partnerToken, nil).want(http.StatusOK)
	rotated := r.str("data.clientSecret")
	if rotated == "" || rotated == secret || r.str("data.clientId") != partnerClient {
		t.Fatalf("rotated: %s", r.raw)
	}

	r = e.do("DELETE", "/v2/oauth/clients/"+orgClient, e.partnerToken, nil).want(http.StatusOK)
	if r.str("clientId") != orgClient || r.str("message") == "" {
		t.Fatalf("deleted: %s", r.raw)
	}
	e.do("GET", "/v2/oauth/clients/"+orgClient, e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("DELETE", "/v2/oauth/clients/"+orgClient, e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)

	audit := e.oauthAudit()
	actions := strings.Join(audit, "\n")
	for _, a := range []string{"oauthClient.create", "oauthClient.update", "oauthClient.rotateSecret", "oauthClient.delete"} {
		if !strings.Contains(actions, `"action":"`+a+`"`) {
			t.Errorf("no audit entry %s in %s", a, actions)
		}
	}
	if len(audit) != 6 {
		t.Errorf("%d audit entries, want 6 (2 creations, 2 updates, a rotation, a deletion)", len(audit))
	}
	for _, s := range []string{secret, orgSecret, rotated, "secretHash"} {
		if strings.Contains(actions, s) {
			t.Fatalf("the audit log holds a secret or its digest: %s", actions)
		}
	}
}

// TestOAuthClientTenancy: another partner's and another organization's
// clients, partners and organizations are not found.
func TestOAuthClientTenancy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	org2 := e.newOrg(e.partnerToken, "Bolt")
	otherID, other := e.newPartner("Other", "other@example.com")
	otherOrg := e.newOrg(other, "Other fleet")
	partnerClient, _ := e.newOAuthClient(e.partnerToken, "partner", e.partnerID)
	orgClient, _ := e.newOAuthClient(e.partnerToken, "organization", org.id)
	org2Client, _ := e.newOAuthClient(e.partnerToken, "organization", org2.id)
	otherClient, _ := e.newOAuthClient(other, "partner", otherID)
	admin := e.orgUser(org.id, "admin@acme.example", store.AccessEditor)

	for _, id := range []string{partnerClient, orgClient} {
		e.do("GET", "/v2/oauth/clients/"+id, other, nil).wantError(http.StatusNotFound, nameNotFound)
		e.do("PATCH", "/v2/oauth/clients/"+id, other, map[string]any{"enabled": false}).wantError(http.StatusNotFound, nameNotFound)
		e.do("PUT", "/v2/oauth/clients/"+id+"/secret", other, nil).wantError(http.StatusNotFound, nameNotFound)
		e.do("DELETE", "/v2/oauth/clients/"+id, other, nil).wantError(http.StatusNotFound, nameNotFound)
	}
	e.do("POST", "/v2/oauth/clients/partner/"+itoa(e.partnerID), other, map[string]any{}).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", "/v2/oauth/clients/organization/"+itoa(org.id), other, map[string]any{}).wantError(http.StatusNotFound, nameNotFound)
	if r := e.do("GET", "/v2/oauth/clients", other, nil).want(http.StatusOK); len(r.list("data")) != 1 || r.str("data.0.clientId") != otherClient {
		t.Fatalf("the other partner lists %s", r.raw)
	}

	// An organization's editor manages its organization's clients only.
	r := e.do("GET", "/v2/oauth/clients", admin, nil).want(http.StatusOK)
	if len(r.list("data")) != 1 || r.str("data.0.clientId") != orgClient {
		t.Fatalf("the organization's editor lists %s", r.raw)
	}
	for _, id := range []string{partnerClient, org2Client, otherClient} {
		e.do("GET", "/v2/oauth/clients/"+id, admin, nil).wantError(http.StatusNotFound, nameNotFound)
		e.do("DELETE", "/v2/oauth/clients/"+id, admin, nil).wantError(http.StatusNotFound, nameNotFound)
	}
	e.do("POST", "/v2/oauth/clients/partner/"+itoa(e.partnerID), admin, map[string]any{}).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", "/v2/oauth/clients/organization/"+itoa(org2.id), admin, map[string]any{}).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", "/v2/oauth/clients/organization/"+itoa(otherOrg.id), admin, map[string]any{}).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", "/v2/oauth/clients/organization/"+itoa(org.id), admin, map[string]any{"clientName": "Own"}).want(http.StatusCreated)
	e.do("PUT", "/v2/oauth/clients/"+orgClient+"/secret", admin, nil).want(http.StatusOK)

	// The SSO administrator of the organization manages them too.
	sso := e.ssoToken(org)
	e.do("GET", "/v2/oauth/clients/"+orgClient, sso, nil).want(http.StatusOK)
	e.do("GET", "/v2/oauth/clients/"+partnerClient, sso, nil).wantError(http.StatusNotFound, nameNotFound)
}

// TestOAuthClientAccess: read-only and media-less users, and client
// tokens, cannot manage clients.
func TestOAuthClientAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	orgClient, secret := e.newOAuthClient(e.partnerToken, "organization", org.id)
	viewer := e.orgUser(org.id, "viewer@acme.example", store.AccessViewer)
	noMedia := e.orgUser(org.id, "nomedia@acme.example", store.AccessEditorWithoutMediaAccess)
	hash := testHash("Secret123")
	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		return tx.CreateUser(&store.User{Email: "pviewer@example.com", PasswordHash: hash, PartnerID: e.partnerID, AccessLevel: store.AccessViewer})
	})
	if err != nil {
		t.Fatal(err)
	}
	partnerViewer := e.login("pviewer@example.com", "Secret123")
	clientToken := e.clientToken(orgClient, secret)

	calls := []struct{ method, path string }{
		{"POST", "/v2/oauth/clients/organization/" + itoa(org.id)},
		{"GET", "/v2/oauth/clients"},
		{"GET", "/v2/oauth/clients/" + orgClient},
		{"PATCH", "/v2/oauth/clients/" + orgClient},
		{"PUT", "/v2/oauth/clients/" + orgClient + "/secret"},
		{"DELETE", "/v2/oauth/clients/" + orgClient},
	}
	for name, token := range map[string]string{"viewer": viewer, "editorWithoutMediaAccess": noMedia,
		"partner viewer": partnerViewer, "client token": clientToken} {
		for _, call := range calls {
			var body any
			switch call.method {
			case "POST":
				body = map[string]any{}
			case "PATCH":
				body = map[string]any{"enabled": false}
			}
			t.Run(name+" "+call.method+" "+call.path, func(t *testing.T) {
				e.do(call.method, call.path, token, body).wantError(http.StatusForbidden, nameForbidden)
			})
		}
	}
	// Nothing changed: the client still gets tokens with its secret.
	e.clientToken(orgClient, secret)
}

// TestOAuthClientBadInput: each rule broken is a 400 naming the field.
func TestOAuthClientBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	id, _ := e.newOAuthClient(e.partnerToken, "organization", org.id)
	tests := []struct {
		name, method, path string
		body               any
		field              string
	}{
		{"a subpartner", "POST", "/v2/oauth/clients/subpartner/" + itoa(e.partnerID), map[string]any{}, "entityType must be partner or organization"},
		{"an id that is no number", "POST", "/v2/oauth/clients/organization/acme", map[string]any{}, "entityId must be a positive integer"},
		{"an empty name", "POST", "/v2/oauth/clients/partner/" + itoa(e.partnerID), map[string]any{"clientName": " "}, "clientName must be from 1 to 255"},
		{"a long name", "POST", "/v2/oauth/clients/partner/" + itoa(e.partnerID), map[string]any{"clientName": strings.Repeat("x", 256)}, "clientName must be from 1 to 255"},
		{"a name that is no string", "POST", "/v2/oauth/clients/partner/" + itoa(e.partnerID), map[string]any{"clientName": 7}, "clientName"},
		{"an unknown member", "POST", "/v2/oauth/clients/partner/" + itoa(e.partnerID), map[string]any{"scopes": "all"}, "scopes"},
		{"no enabled", "PATCH", "/v2/oauth/clients/" + id, map[string]any{}, "enabled is required"},
		{"enabled as text", "PATCH", "/v2/oauth/clients/" + id, map[string]any{"enabled": "yes"}, "enabled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do(tc.method, tc.path, e.partnerToken, tc.body).wantError(http.StatusBadRequest, nameBadRequest, tc.field)
		})
	}
}

// TestOAuthClientQuota: a partner and its organizations have at most
// MaxOAuthClientsPerPartner enabled clients; a disabled one does not count
// until it is enabled again.
func TestOAuthClientQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	var first string
	for i := range store.MaxOAuthClientsPerPartner {
		id, _ := e.newOAuthClient(e.partnerToken, []string{"partner", "organization"}[i%2], []int64{e.partnerID, org.id}[i%2])
		if i == 0 {
			first = id
		}
	}
	e.do("POST", "/v2/oauth/clients/partner/"+itoa(e.partnerID), e.partnerToken, map[string]any{}).
		wantError(http.StatusTooManyRequests, nameTooManyRequests, "most allowed")
	e.do("PATCH", "/v2/oauth/clients/"+first, e.partnerToken, map[string]any{"enabled": false}).want(http.StatusOK)
	second, _ := e.newOAuthClient(e.partnerToken, "organization", org.id)
	e.do("PATCH", "/v2/oauth/clients/"+first, e.partnerToken, map[string]any{"enabled": true}).
		wantError(http.StatusTooManyRequests, nameTooManyRequests, "most allowed")
	e.do("DELETE", "/v2/oauth/clients/"+second, e.partnerToken, nil).want(http.StatusOK)
	e.do("PATCH", "/v2/oauth/clients/"+first, e.partnerToken, map[string]any{"enabled": true}).want(http.StatusOK)
}
