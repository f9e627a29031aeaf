package cloudapi

import (
	"net/http"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestExternalUsers(t *testing.T) {
	e := newEnv(t)
	home := e.newOrg(e.partnerToken, "Home")
	away := e.newOrg(e.partnerToken, "Away")
	imei := e.newDevice(e.partnerToken, away.id, testIMEI(1), "Away truck")
	id, tok := e.newUser(e.partnerToken, home.id, "admin@home.example", store.AccessEditor)
	e.newUser(e.partnerToken, home.id, "low@home.example", store.AccessEditorWithoutMediaAccess)
	_, viewer := e.newUser(e.partnerToken, away.id, "viewer@away.example", store.AccessViewer)
	_, tokB := e.newPartner("Partner B", "b@other.example")
	orgB := e.newOrg(tokB, "B fleet")
	e.newUser(tokB, orgB.id, "admin@b.example", store.AccessEditor)
	path := orgPath(away.id, "/external-users")

	// Before: the user sees nothing of the other organization.
	e.do("GET", orgPath(away.id, ""), tok, nil).want(http.StatusNotFound)
	e.do("GET", "/v2/devices/"+imei, tok, nil).want(http.StatusNotFound)

	e.do("POST", path, e.partnerToken, map[string]any{"email": "Admin@Home.example"}).want(http.StatusOK)
	r := e.do("GET", path, e.partnerToken, nil).want(http.StatusOK)
	if users := r.list("users"); len(users) != 1 || r.id("users.0.id") != id || r.str("users.0.email") != "admin@home.example" ||
		r.str("users.0.role") != roleAdministrator {
		t.Fatalf("%s", r.raw)
	}
	// After: it acts in both organizations with its token, at once.
	e.do("GET", orgPath(away.id, ""), tok, nil).want(http.StatusOK)
	e.do("GET", "/v2/devices/"+imei, tok, nil).want(http.StatusOK)
	e.do("PATCH", "/v2/devices/"+imei, tok, map[string]any{"name": "Renamed"}).want(http.StatusOK)
	if list := e.do("GET", "/v2/organizations", tok, nil).want(http.StatusOK); list.num("metadata.count") != 2 {
		t.Fatalf("organizations %s", list.raw)
	}
	e.do("GET", "/v2/audit-logs?organizationId="+itoa(away.id), tok, nil).want(http.StatusOK)
	e.do("GET", "/v2/audit-logs?organizationId="+itoa(orgB.id), tok, nil).want(http.StatusNotFound)
	if e.auditActions("organization.externalUser.add") != 1 {
		t.Fatal("the addition is not audited")
	}

	tests := []struct {
		name   string
		method string
		token  string
		orgID  int64
		body   any
		status int
		msg    string
	}{
		{"no e-mail", "POST", e.partnerToken, away.id, map[string]any{}, 400, "email is required"},
		{"not an e-mail", "POST", e.partnerToken, away.id, map[string]any{"email": "admin"}, 400, "email must be an e-mail address"},
		{"not an editor", "POST", e.partnerToken, away.id, map[string]any{"email": "low@home.example"}, 400, "editor access level"},
		{"unknown address", "POST", e.partnerToken, away.id, map[string]any{"email": "nobody@home.example"}, 404, "user nobody@home.example"},
		{"another partner's user", "POST", e.partnerToken, away.id, map[string]any{"email": "admin@b.example"}, 404, "user admin@b.example"},
		{"a partner contact", "POST", e.partnerToken, away.id, map[string]any{"email": "partner@example.com"}, 404, "user partner@example.com"},
		{"twice", "POST", e.partnerToken, away.id, map[string]any{"email": "admin@home.example"}, 409, "already an external user"},
		{"its own organization", "POST", e.partnerToken, home.id, map[string]any{"email": "admin@home.example"}, 409, "already"},
		{"another partner's organization", "POST", tokB, away.id, map[string]any{"email": "admin@b.example"}, 404, "organization"},
		{"a viewer", "POST", viewer, away.id, map[string]any{"email": "admin@home.example"}, 403, "viewer"},
		{"another partner lists", "GET", tokB, away.id, nil, 404, "organization"},
		{"removing who is not one", "DELETE", e.partnerToken, away.id, map[string]any{"email": "low@home.example"}, 404, "external user"},
		{"removing from another partner's organization", "DELETE", tokB, away.id, map[string]any{"email": "admin@home.example"}, 404, "organization"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do(tc.method, orgPath(tc.orgID, "/external-users"), tc.token, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}

	// Removed, it is back to its own organization alone.
	e.do("DELETE", path, e.partnerToken, map[string]any{"email": "admin@home.example"}).want(http.StatusOK)
	e.do("GET", orgPath(away.id, ""), tok, nil).want(http.StatusNotFound)
	e.do("GET", "/v2/devices/"+imei, tok, nil).want(http.StatusNotFound)
	e.do("GET", orgPath(home.id, ""), tok, nil).want(http.StatusOK)
	if r := e.do("GET", path, e.partnerToken, nil).want(http.StatusOK); len(r.list("users")) != 0 {
		t.Fatalf("%s", r.raw)
	}
}
