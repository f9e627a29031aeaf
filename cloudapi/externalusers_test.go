package cloudapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestExternalUsers(t *testing.T) {
	t.Parallel()
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
		{"not an editor", "POST", e.partnerToken, away.id, map[string]any{"email": "low@home.example"}, 404, "user low@home.example"},
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

// TestExternalUserRefusalsTellNothing adds addresses to an organization as
// the administrator of a sibling organization of the same partner would
// probe them: every address it may not add gets the answer of an unknown
// address, and the reason is in the audit log of the user's own
// organization, not in the caller's.
func TestExternalUserRefusalsTellNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := e.newOrg(e.partnerToken, "Home")
	away := e.newOrg(e.partnerToken, "Away")
	_, caller := e.newUser(e.partnerToken, home.id, "admin@home.example", store.AccessEditor)
	_, awayAdmin := e.newUser(e.partnerToken, away.id, "admin@away.example", store.AccessEditor)
	e.newUser(e.partnerToken, away.id, "viewer@away.example", store.AccessViewer)
	e.newUser(e.partnerToken, away.id, "nomedia@away.example", store.AccessEditorWithoutMediaAccess)
	e.newContact(e.partnerToken, e.partnerID, "contact@partner.example", store.AccessEditor)
	_, tokB := e.newPartner("Partner B", "b@other.example")
	orgB := e.newOrg(tokB, "B fleet")
	e.newUser(tokB, orgB.id, "admin@b.example", store.AccessEditor)
	path := orgPath(home.id, "/external-users")

	// answer is a refusal with the address taken out, to compare them, and
	// the number of audit entries it wrote.
	answer := func(email string) string {
		before := e.auditActions(actionExternalRefuse)
		r := e.do("POST", path, caller, map[string]any{"email": email})
		return fmt.Sprintf("%d %s %s, %d entries", r.status, r.str("error"), strings.ReplaceAll(r.str("message"), email, "ADDRESS"),
			e.auditActions(actionExternalRefuse)-before)
	}
	want := answer("nobody@away.example")
	if want != "404 "+nameNotFound+" user ADDRESS not found, 2 entries" {
		t.Fatalf("an unknown address: %s", want)
	}
	for _, email := range []string{"viewer@away.example", "nomedia@away.example", "contact@partner.example", "admin@b.example", "b@other.example"} {
		if got := answer(email); got != want {
			t.Errorf("%s: %s, an unknown address %s", email, got, want)
		}
	}
	e.do("POST", path, caller, map[string]any{"email": "admin@away.example"}).want(http.StatusOK)

	// The caller's organization reads one entry per refusal, each saying
	// what the answer said.
	r := e.do("GET", "/v2/audit-logs?action="+actionExternalRefuse, caller, nil).want(http.StatusOK)
	if n := len(r.list("data")); n != 6 {
		t.Fatalf("%d refusals in the caller's audit log, want 6: %s", n, r.raw)
	}
	for i := range 6 {
		if !strings.HasSuffix(r.str(fmt.Sprintf("data.%d.reason", i)), " is not the e-mail of a user with the editor access level in another organization of this partner") {
			t.Fatalf("the caller's audit log tells more than the answers: %s", r.raw)
		}
	}
	// The organization of the refused users reads why.
	r = e.do("GET", "/v2/audit-logs?action="+actionExternalRefuse, awayAdmin, nil).want(http.StatusOK)
	raw := string(r.raw)
	if n := len(r.list("data")); n != 2 || !strings.Contains(raw, "viewer@away.example has viewer") ||
		!strings.Contains(raw, "nomedia@away.example has editorWithoutMediaAccess") {
		t.Fatalf("the refused users' organization's audit log: %s", raw)
	}
	// The partner reads both entries of every refusal; another partner none.
	if r := e.do("GET", "/v2/audit-logs?action="+actionExternalRefuse, e.partnerToken, nil).want(http.StatusOK); r.num("metadata.count") != 12 {
		t.Fatalf("the partner's audit log: %s", r.raw)
	}
	if r := e.do("GET", "/v2/audit-logs?action="+actionExternalRefuse, tokB, nil).want(http.StatusOK); len(r.list("data")) != 0 {
		t.Fatalf("another partner reads the refusals: %s", r.raw)
	}
}
