package cloudapi

import (
	"net/http"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// newUser creates an organization user with a password through the API
// and returns its id and a token.
func (e *testEnv) newUser(token string, orgID int64, email, level string) (int64, string) {
	e.t.Helper()
	id := e.do("POST", orgPath(orgID, "/users"), token, map[string]any{"email": email, "password": "Secret123", "accessLevel": level}).
		want(http.StatusOK).id("userId")
	return id, e.login(email, "Secret123")
}

// newContact creates a partner contact with a password and returns its id and a token.
func (e *testEnv) newContact(token string, partnerID int64, email, level string) (int64, string) {
	e.t.Helper()
	id := e.do("POST", "/v2/partners/"+itoa(partnerID)+"/contacts", token, map[string]any{"email": email, "password": "Secret123", "accessLevel": level}).
		want(http.StatusOK).id("data.id")
	return id, e.login(email, "Secret123")
}

func TestDeleteUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	other := e.newOrg(e.partnerToken, "Other")
	opsID, opsToken := e.newUser(e.partnerToken, org.id, "ops@acme.example", store.AccessEditor)
	lowID, lowToken := e.newUser(e.partnerToken, org.id, "low@acme.example", store.AccessEditorWithoutMediaAccess)
	viewerID, viewerToken := e.newUser(e.partnerToken, org.id, "viewer@acme.example", store.AccessViewer)
	otherID, otherToken := e.newUser(e.partnerToken, other.id, "ops@other.example", store.AccessEditor)
	_, tokB := e.newPartner("Partner B", "b@other.example")

	tests := []struct {
		name   string
		token  string
		id     int64
		status int
		msg    string
	}{
		{"another partner's user", tokB, opsID, 404, "user"},
		{"a user of another organization", opsToken, otherID, 404, "user"},
		{"a partner contact by an organization user", opsToken, 1, 404, "user"},
		{"no such user", e.partnerToken, 999, 404, "user"},
		{"a viewer", viewerToken, lowID, 403, "viewer"},
		{"oneself", opsToken, opsID, 403, "itself"},
		{"a higher access level", lowToken, opsID, 403, "editorWithoutMediaAccess cannot delete"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("DELETE", "/v2/users/"+itoa(tc.id), tc.token, nil).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}
	e.do("DELETE", "/v2/users/abc", e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound, "user")

	// An organization editor deletes a user of its organization; the
	// partner a user of an organization it created. Their tokens stop working.
	before := e.auditActions("user.delete")
	r := e.do("DELETE", "/v2/users/"+itoa(viewerID), opsToken, nil).want(http.StatusOK)
	if r.str("requestId") == "" {
		t.Fatalf("%s", r.raw)
	}
	e.do("GET", "/v2/me", viewerToken, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "no longer exists")
	e.do("DELETE", "/v2/users/"+itoa(otherID), e.partnerToken, nil).want(http.StatusOK)
	e.do("GET", "/v2/me", otherToken, nil).want(http.StatusUnauthorized)
	e.do("DELETE", "/v2/users/"+itoa(otherID), e.partnerToken, nil).want(http.StatusNotFound)
	if n := e.auditActions("user.delete") - before; n != 2 {
		t.Fatalf("%d user.delete entries, want 2", n)
	}
	users := e.do("GET", orgPath(org.id, "/users"), e.partnerToken, nil).want(http.StatusOK)
	if users.num("metadata.count") != 2 {
		t.Fatalf("users left: %s", users.raw)
	}
	// The e-mail is free again.
	e.newUser(e.partnerToken, other.id, "ops@other.example", store.AccessEditor)
}

// TestDeleteUserGuestPartner: a guest partner of a shared organization
// manages none of its users, which are the host's.
func TestDeleteUserGuestPartner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tokB, org := e.sharedOrg()
	id, _ := e.newUser(e.partnerToken, org.id, "ops@shared.example", store.AccessEditor)
	e.do("DELETE", "/v2/users/"+itoa(id), tokB, nil).wantError(http.StatusNotFound, nameNotFound, "user")
	e.do("DELETE", "/v2/users/"+itoa(id), e.partnerToken, nil).want(http.StatusOK)
}

func TestPartnerContactEdit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, tok := e.newContact(e.partnerToken, e.partnerID, "sales@partner.example", store.AccessViewer)
	path := "/v2/partners/" + itoa(e.partnerID) + "/contacts/" + itoa(id)
	before := e.auditActions("user.update")
	e.do("PATCH", path, e.partnerToken, map[string]any{"id": id, "name": "Sales", "email": "Sales@Partner.example", "accessLevel": store.AccessEditorWithoutMediaAccess}).
		want(http.StatusOK)
	r := e.do("GET", "/v2/partner-contacts", e.partnerToken, nil).want(http.StatusOK)
	if r.str("data.1.name") != "Sales" || r.str("data.1.accessLevel") != store.AccessEditorWithoutMediaAccess || r.str("data.1.email") != "sales@partner.example" {
		t.Fatalf("after the change: %s", r.raw)
	}
	// Absent fields stay.
	e.do("PATCH", path, e.partnerToken, map[string]any{"name": "Sales team"}).want(http.StatusOK)
	if r := e.do("GET", "/v2/partner-contacts", e.partnerToken, nil); r.str("data.1.name") != "Sales team" || r.str("data.1.accessLevel") != store.AccessEditorWithoutMediaAccess {
		t.Fatalf("after the name alone: %s", r.raw)
	}
	if n := e.auditActions("user.update") - before; n != 2 {
		t.Fatalf("%d user.update entries, want 2", n)
	}

	org := e.newOrg(e.partnerToken, "Acme")
	orgUserID, _ := e.newUser(e.partnerToken, org.id, "ops@acme.example", store.AccessEditor)
	bID, tokB := e.newPartner("Partner B", "b@other.example")
	tests := []struct {
		name   string
		token  string
		path   string
		body   any
		status int
		msg    string
	}{
		{"another e-mail", e.partnerToken, path, map[string]any{"email": "new@partner.example"}, 400, "email cannot be changed"},
		{"another id", e.partnerToken, path, map[string]any{"id": id + 1}, 400, "id must be the partnerContactId"},
		{"bad access level", e.partnerToken, path, map[string]any{"accessLevel": "owner"}, 400, "accessLevel must be one of"},
		{"empty name", e.partnerToken, path, map[string]any{"name": " "}, 400, "name is required"},
		{"name not a string", e.partnerToken, path, map[string]any{"name": 5}, 400, "name"},
		{"another partner's id", tokB, path, map[string]any{"name": "x"}, 404, "partner"},
		{"another partner's contact", tokB, "/v2/partners/" + itoa(bID) + "/contacts/" + itoa(id), map[string]any{"name": "x"}, 404, "partner contact"},
		{"an organization user", e.partnerToken, "/v2/partners/" + itoa(e.partnerID) + "/contacts/" + itoa(orgUserID), map[string]any{"name": "x"}, 404, "partner contact"},
		{"a lower access level", tok, "/v2/partners/" + itoa(e.partnerID) + "/contacts/1", map[string]any{"name": "x"}, 403, "editorWithoutMediaAccess cannot change"},
		{"the last editor lowers itself", e.partnerToken, "/v2/partners/" + itoa(e.partnerID) + "/contacts/1", map[string]any{"accessLevel": store.AccessViewer}, 409, "last contact with the editor access level"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("PATCH", tc.path, tc.token, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}

	// Deleting: not an organization user, not another partner's; once.
	e.do("DELETE", "/v2/partners/"+itoa(e.partnerID)+"/contacts/"+itoa(orgUserID), e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound, "user")
	e.do("DELETE", "/v2/partners/"+itoa(bID)+"/contacts/"+itoa(id), tokB, nil).wantError(http.StatusNotFound, nameNotFound, "user")
	e.do("DELETE", "/v2/partners/"+itoa(e.partnerID)+"/contacts/1", e.partnerToken, nil).wantError(http.StatusForbidden, nameForbidden, "itself")
	e.do("DELETE", path, e.partnerToken, nil).want(http.StatusOK)
	e.do("GET", "/v2/me", tok, nil).want(http.StatusUnauthorized)
	e.do("DELETE", path, e.partnerToken, nil).want(http.StatusNotFound)
	if n := e.do("GET", "/v2/partner-contacts", e.partnerToken, nil).num("metadata.count"); n != 1 {
		t.Fatalf("%v contacts left", n)
	}
}

func TestUserSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	_, viewer := e.newUser(e.partnerToken, org.id, "viewer@acme.example", store.AccessViewer)
	if r := e.do("GET", "/v2/me", viewer, nil).want(http.StatusOK); r.get("data.me.measurement") != nil {
		t.Fatalf("settings before any are set: %s", r.raw)
	}
	// A viewer sets its own settings.
	e.do("PUT", "/v2/users/update-settings", viewer, map[string]any{"measurement": 1, "timeFormat": 2}).want(http.StatusOK)
	r := e.do("GET", "/v2/me", viewer, nil).want(http.StatusOK)
	if r.num("data.me.measurement") != 1 || r.num("data.me.timeFormat") != 2 {
		t.Fatalf("settings: %s", r.raw)
	}
	if e.auditActions("user.settings") != 1 {
		t.Fatal("the change is not audited")
	}
	scoped := e.scopedToken(e.partnerToken, scopedBody("organization", org.id, FeatureDeviceGPS))
	tests := []struct {
		name   string
		token  string
		body   any
		status int
		msg    string
	}{
		{"measurement missing", viewer, map[string]any{"timeFormat": 1}, 400, "measurement is required"},
		{"time format missing", viewer, map[string]any{"measurement": 1}, 400, "timeFormat is required"},
		{"measurement 3", viewer, map[string]any{"measurement": 3, "timeFormat": 1}, 400, "measurement must be 1 or 2"},
		{"time format as text", viewer, map[string]any{"measurement": 1, "timeFormat": "am/pm"}, 400, "timeFormat"},
		{"a scoped token", scoped, map[string]any{"measurement": 1, "timeFormat": 1}, 403, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("PUT", "/v2/users/update-settings", tc.token, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}
	if r := e.do("GET", "/v2/me", viewer, nil); r.num("data.me.measurement") != 1 {
		t.Fatalf("a refused change changed the settings: %s", r.raw)
	}
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	id, first := e.newUser(e.partnerToken, org.id, "viewer@acme.example", store.AccessViewer)
	second := e.login("viewer@acme.example", "Secret123")
	scoped := e.scopedToken(second, scopedBody("organization", org.id, FeatureDeviceGPS))
	otherID, _ := e.newUser(e.partnerToken, org.id, "ops@acme.example", store.AccessEditor)
	path := "/v2/users/" + itoa(id) + "/change-password"

	tests := []struct {
		name   string
		path   string
		body   any
		status int
		msg    string
	}{
		{"current missing", path, map[string]any{"newPassword": "Better456"}, 400, "currentPassword is required"},
		{"new missing", path, map[string]any{"currentPassword": "Secret123"}, 400, "newPassword is required"},
		{"new too weak", path, map[string]any{"currentPassword": "Secret123", "newPassword": "weakpass"}, 400, "newPassword must contain"},
		{"new the same", path, map[string]any{"currentPassword": "Secret123", "newPassword": "Secret123"}, 400, "newPassword must differ"},
		{"current wrong", path, map[string]any{"currentPassword": "Wrong1234", "newPassword": "Better456"}, 400, "currentPassword is wrong"},
		{"another user", "/v2/users/" + itoa(otherID) + "/change-password", map[string]any{"currentPassword": "Secret123", "newPassword": "Better456"}, 404, "user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("POST", tc.path, first, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}
	e.do("POST", path, scoped, map[string]any{"currentPassword": "Secret123", "newPassword": "Better456"}).want(http.StatusForbidden)

	// A viewer changes its own password; its other tokens stop working, the
	// answer's token works.
	r := e.do("POST", path, first, map[string]any{"currentPassword": "Secret123", "newPassword": "Better456"}).want(http.StatusOK)
	fresh := r.str("data.token")
	if fresh == "" || r.str("requestId") == "" {
		t.Fatalf("%s", r.raw)
	}
	for name, tok := range map[string]string{"the calling token": first, "another session": second, "a scoped token": scoped} {
		if got := e.do("GET", "/v2/me", tok, nil); got.status != http.StatusUnauthorized || got.str("message") == "" {
			t.Fatalf("%s after the change: %d %s", name, got.status, got.raw)
		}
	}
	e.do("GET", "/v2/me", fresh, nil).want(http.StatusOK)
	e.do("POST", "/v2/authenticate", "", map[string]any{"email": "viewer@acme.example", "password": "Secret123"}).want(http.StatusUnauthorized)
	e.login("viewer@acme.example", "Better456")
	if e.auditActions("user.changePassword") != 1 {
		t.Fatal("the change is not audited")
	}
}

// TestChangePasswordBraked: wrong current passwords are braked like sign-ins.
func TestChangePasswordBraked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := "/v2/users/1/change-password"
	for i := 0; i < e.cfg.Auth.Throttle.AccountFreeAttempts; i++ {
		e.do("POST", path, e.partnerToken, map[string]any{"currentPassword": "Wrong1234", "newPassword": "Better456"}).want(http.StatusBadRequest)
	}
	r := e.do("POST", path, e.partnerToken, map[string]any{"currentPassword": "Secret123", "newPassword": "Better456"})
	r.wantError(http.StatusTooManyRequests, nameTooManyRequests, "retry after")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
}
