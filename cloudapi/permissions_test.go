package cloudapi

import (
	"net/http"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestUserPermissions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	other := e.newOrg(e.partnerToken, "Other")
	id, tok := e.newUser(e.partnerToken, org.id, "ops@acme.example", store.AccessEditor)
	lowID, lowTok := e.newUser(e.partnerToken, org.id, "low@acme.example", store.AccessEditorWithoutMediaAccess)
	_, viewerTok := e.newUser(e.partnerToken, org.id, "viewer@acme.example", store.AccessViewer)
	otherID, _ := e.newUser(e.partnerToken, other.id, "ops@other.example", store.AccessEditor)
	_, tokB := e.newPartner("Partner B", "b@other.example")
	path := func(userID, orgID int64) string {
		return "/v2/users/" + itoa(userID) + "/organizations/" + itoa(orgID) + "/permissions"
	}
	all := []int{allGroups}

	for _, tc := range []struct {
		role, level string
	}{{"restricted", store.AccessViewer}, {"user", store.AccessEditorWithoutMediaAccess}, {"supervisor", store.AccessEditor},
		{"usermapviewer", store.AccessViewer}, {"administrator", store.AccessEditor}} {
		r := e.do("PATCH", path(lowID, org.id), e.partnerToken, map[string]any{"role": tc.role, "organizationAccessEdgeGroupIds": all}).want(http.StatusOK)
		if r.str("data.accessLevel") != tc.level {
			t.Fatalf("role %s: %s", tc.role, r.raw)
		}
		if got := e.do("GET", "/v2/me", lowTok, nil).want(http.StatusOK).str("data.me.accessLevel"); got != tc.level {
			t.Fatalf("role %s: the user's token has %s", tc.role, got)
		}
	}
	if e.auditActions("user.permissions") != 5 {
		t.Fatal("the changes are not audited")
	}
	// An organization editor sets a user of its organization.
	e.do("PATCH", path(lowID, org.id), tok, map[string]any{"role": "user", "organizationAccessEdgeGroupIds": all}).want(http.StatusOK)

	tests := []struct {
		name   string
		token  string
		path   string
		body   any
		status int
		msg    string
	}{
		{"role missing", e.partnerToken, path(lowID, org.id), map[string]any{"organizationAccessEdgeGroupIds": all}, 400, "role is required"},
		{"unknown role", e.partnerToken, path(lowID, org.id), map[string]any{"role": "owner", "organizationAccessEdgeGroupIds": all}, 400, "role must be one of"},
		{"groups missing", e.partnerToken, path(lowID, org.id), map[string]any{"role": "user"}, 400, "organizationAccessEdgeGroupIds is required"},
		{"some groups", e.partnerToken, path(lowID, org.id), map[string]any{"role": "user", "organizationAccessEdgeGroupIds": []int{3}}, 400, "organizationAccessEdgeGroupIds must be [-2]"},
		{"a user of another organization", e.partnerToken, path(otherID, org.id), map[string]any{"role": "user", "organizationAccessEdgeGroupIds": all}, 404, "user"},
		{"another partner", tokB, path(lowID, org.id), map[string]any{"role": "user", "organizationAccessEdgeGroupIds": all}, 404, "organization"},
		{"an organization the user cannot see", tok, path(otherID, other.id), map[string]any{"role": "user", "organizationAccessEdgeGroupIds": all}, 404, "organization"},
		{"a viewer", viewerTok, path(lowID, org.id), map[string]any{"role": "restricted", "organizationAccessEdgeGroupIds": all}, 403, "viewer"},
		{"granting more than one holds", lowTok, path(lowID, org.id), map[string]any{"role": "administrator", "organizationAccessEdgeGroupIds": all}, 403, "cannot grant the editor"},
		{"changing a higher user", lowTok, path(id, org.id), map[string]any{"role": "restricted", "organizationAccessEdgeGroupIds": all}, 403, "cannot change a user with the editor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("PATCH", tc.path, tc.token, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}
	if got := e.do("GET", "/v2/me", lowTok, nil).str("data.me.accessLevel"); got != store.AccessEditorWithoutMediaAccess {
		t.Fatalf("refused changes left %s", got)
	}
}
