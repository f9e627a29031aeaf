package cloudapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"golang.org/x/crypto/bcrypt"
)

func TestCreatePartnerContact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := "/v2/partners/" + itoa(e.partnerID) + "/contacts"
	r := e.do("POST", path, e.partnerToken, map[string]any{"name": "Dana", "email": "Dana@Partner.example", "password": "Passw0rdX"}).want(http.StatusOK)
	if r.str("data.email") != "dana@partner.example" || r.str("data.accessLevel") != store.AccessEditor ||
		r.str("data.role") != rolePartnerContact || r.id("data.partnerId") != e.partnerID || r.get("data.invitationToken") != nil ||
		r.id("data.userId") != r.id("data.id") {
		t.Fatalf("unexpected contact %s", r.raw)
	}
	tok := e.login("dana@partner.example", "Passw0rdX")
	if me := e.do("GET", "/v2/me", tok, nil).want(http.StatusOK); me.str("data.entity") != "partner" || me.str("data.me.name") != "Dana" {
		t.Fatalf("contact /me: %s", me.raw)
	}
	// The password is stored as a bcrypt hash at the configured cost.
	e.db.View(t.Context(), func(tx *store.Tx) error {
		u, err := tx.UserByEmail("dana@partner.example")
		if err != nil {
			t.Fatal(err)
		}
		if cost, err := bcrypt.Cost(u.PasswordHash); err != nil || cost != e.cfg.Auth.BcryptCost {
			t.Fatalf("password hash cost %d, %v", cost, err)
		}
		return nil
	})

	e.do("POST", path, e.partnerToken, map[string]any{"email": "DANA@partner.example", "password": "Passw0rdX"}).
		wantError(http.StatusConflict, nameConflict, "already exists")

	list := e.do("GET", path, e.partnerToken, nil).want(http.StatusOK)
	if list.num("metadata.count") != 2 || list.str("data.1.email") != "dana@partner.example" {
		t.Fatalf("contacts %s", list.raw)
	}
	alias := e.do("GET", "/v2/partner-contacts?limit=1", e.partnerToken, nil).want(http.StatusOK)
	if alias.num("metadata.count") != 2 || len(alias.list("data")) != 1 || alias.num("metadata.limit") != 1 {
		t.Fatalf("partner-contacts %s", alias.raw)
	}
}

func TestPartnerContactRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	idB, tokB := e.newPartner("Partner B", "b@other.example")
	org := e.newOrg(e.partnerToken, "Acme")
	orgEditor := e.orgUser(org.id, "ed@acme.example", store.AccessEditor)
	own := "/v2/partners/" + itoa(e.partnerID) + "/contacts"
	e.do("POST", own, e.partnerToken, map[string]any{"email": "nomedia@partner.example", "password": "Passw0rdX", "accessLevel": "editorWithoutMediaAccess"}).want(http.StatusOK)
	noMedia := e.login("nomedia@partner.example", "Passw0rdX")

	tests := []struct {
		name   string
		token  string
		path   string
		body   any
		status int
		msg    string
	}{
		{"another partner's id", e.partnerToken, "/v2/partners/" + itoa(idB) + "/contacts", map[string]any{"email": "x@y.example"}, 404, "partner"},
		{"malformed partner id", e.partnerToken, "/v2/partners/me/contacts", map[string]any{"email": "x@y.example"}, 404, "partner"},
		{"organization user", orgEditor, own, map[string]any{"email": "x@y.example"}, 403, "partners only"},
		{"missing email", e.partnerToken, own, map[string]any{"name": "x"}, 400, "email is required"},
		{"bad email", e.partnerToken, own, map[string]any{"email": "not-an-email"}, 400, "email must be an e-mail address"},
		{"short password", e.partnerToken, own, map[string]any{"email": "x@y.example", "password": "Ab1"}, 400, "password must be at least 8 characters"},
		{"no digit", e.partnerToken, own, map[string]any{"email": "x@y.example", "password": "Abcdefgh"}, 400, "password must contain an upper-case letter, a lower-case letter and a digit"},
		{"no upper case", e.partnerToken, own, map[string]any{"email": "x@y.example", "password": "abcdefg1"}, 400, "password must contain"},
		{"bad access level", e.partnerToken, own, map[string]any{"email": "x@y.example", "accessLevel": "admin"}, 400, "accessLevel must be one of viewer, editor, editorWithoutMediaAccess"},
		{"unknown field", e.partnerToken, own, map[string]any{"email": "x@y.example", "admin": true}, 400, "admin is not a known field"},
		{"unknown role", e.partnerToken, own, map[string]any{"email": "x@y.example", "role": "partner"}, 400, "role must be one of"},
		{"granting more than held", noMedia, own, map[string]any{"email": "x@y.example", "accessLevel": "editor"}, 403, "cannot grant the editor access level"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("POST", tc.path, tc.token, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}
	e.do("GET", "/v2/partners/"+itoa(idB)+"/contacts", e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", "/v2/partner-contacts", orgEditor, nil).wantError(http.StatusForbidden, nameForbidden)
	if got := e.do("GET", "/v2/partner-contacts", tokB, nil).want(http.StatusOK).num("metadata.count"); got != 1 {
		t.Fatalf("partner B has %v contacts", got)
	}
}

func TestInvitation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := "/v2/partners/" + itoa(e.partnerID) + "/contacts"
	r := e.do("POST", path, e.partnerToken, map[string]any{"email": "new@partner.example", "accessLevel": "viewer"}).want(http.StatusOK)
	invite := r.str("data.invitationToken")
	if invite == "" || r.get("data.passwordSet") != false || r.str("data.invitationExpiresAt") != isoTime(e.clock.Now().Add(e.cfg.Auth.InviteTTL)) {
		t.Fatalf("no invitation: %s", r.raw)
	}
	e.do("POST", "/v2/authenticate", "", map[string]any{"email": "new@partner.example", "password": "Anything1"}).wantError(http.StatusUnauthorized, nameUnauthorized)

	reset := "/v2/reset-password/" + invite
	for _, tc := range []struct{ pw, msg string }{
		{"", "newPassword is required"},
		{"Short1", "newPassword must be at least 8 characters"},
		{"alllowercase1", "newPassword must contain"},
		{"NoDigitsHere", "newPassword must contain"},
	} {
		e.do("POST", reset, "", map[string]any{"newPassword": tc.pw}).wantError(http.StatusBadRequest, nameBadRequest, tc.msg)
	}
	e.do("POST", reset, "", map[string]any{"password": "Welcome123"}).wantError(http.StatusBadRequest, nameBadRequest, "password is not a known field")
	e.do("POST", reset, "", map[string]any{"newPassword": "Welcome123"}).want(http.StatusOK)
	tok := e.login("new@partner.example", "Welcome123")
	if lvl := e.do("GET", "/v2/me", tok, nil).want(http.StatusOK).str("data.me.accessLevel"); lvl != store.AccessViewer {
		t.Fatalf("access level %q", lvl)
	}
	e.do("POST", reset, "", map[string]any{"newPassword": "Again1234"}).wantError(http.StatusNotFound, nameNotFound, "invitation")
	e.do("POST", "/v2/reset-password/made-up", "", map[string]any{"newPassword": "Again1234"}).wantError(http.StatusNotFound, nameNotFound)

	// An invitation not redeemed in time is void.
	late := e.do("POST", path, e.partnerToken, map[string]any{"email": "late@partner.example"}).want(http.StatusOK).str("data.invitationToken")
	e.clock.Advance(e.cfg.Auth.InviteTTL + time.Second)
	e.do("POST", "/v2/reset-password/"+late, "", map[string]any{"newPassword": "Welcome123"}).wantError(http.StatusNotFound, nameNotFound)
}

func TestOrganizationUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	other := e.newOrg(e.partnerToken, "Other")
	users := orgPath(org.id, "/users")
	r := e.do("POST", users, e.partnerToken, map[string]any{"email": "ops@acme.example", "password": "Passw0rdX"}).want(http.StatusOK)
	if r.id("data.organizationId") != org.id || r.id("data.partnerId") != e.partnerID || r.str("data.role") != roleAdministrator ||
		r.str("data.accessLevel") != store.AccessEditor {
		t.Fatalf("organization user %s", r.raw)
	}
	// The reference contract's body: a role (roleAccess) and all groups.
	var byRole []int64
	for _, tc := range []struct{ role, level, shown string }{
		{"administrator", store.AccessEditor, "administrator"},
		{"supervisor", store.AccessEditor, "administrator"},
		{"user", store.AccessEditorWithoutMediaAccess, "user"},
		{"restricted", store.AccessViewer, "restricted"},
		{"usermapviewer", store.AccessViewer, "restricted"},
	} {
		r := e.do("POST", users, e.partnerToken, map[string]any{"email": tc.role + "@acme.example", "password": "Ref7-user-Pass",
			"role": tc.role, "groupIds": []int{-2}}).want(http.StatusOK)
		if r.str("data.accessLevel") != tc.level || r.str("data.role") != tc.shown {
			t.Fatalf("role %s: %s", tc.role, r.raw)
		}
		byRole = append(byRole, r.id("data.id"))
	}
	for _, tc := range []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"email": "x@acme.example", "role": "owner"}, "role must be one of restricted, user, administrator"},
		{map[string]any{"email": "x@acme.example", "role": "restricted", "accessLevel": "editor"}, "role restricted is the viewer access level, not editor"},
		{map[string]any{"email": "x@acme.example", "role": "user", "groupIds": []int{3}}, "groupIds must be [-2] or left out"},
	} {
		e.do("POST", users, e.partnerToken, tc.body).wantError(http.StatusBadRequest, nameBadRequest, tc.msg)
	}
	if n := e.do("GET", users, e.partnerToken, nil).want(http.StatusOK).num("metadata.count"); n != 6 {
		t.Fatalf("%v users after the refused ones", n)
	}
	for _, id := range byRole {
		e.do("DELETE", "/v2/users/"+itoa(id), e.partnerToken, nil).want(http.StatusOK)
	}
	ops := e.login("ops@acme.example", "Passw0rdX")
	if me := e.do("GET", "/v2/me", ops, nil).want(http.StatusOK); me.id("data.me.organizationId") != org.id || me.str("data.me.role") != "user" {
		t.Fatalf("/me %s", me.raw)
	}
	// An organization editor adds users of its own organization only.
	inv := e.do("POST", users, ops, map[string]any{"email": "viewer@acme.example", "accessLevel": "viewer"}).want(http.StatusOK)
	if inv.str("data.invitationToken") == "" {
		t.Fatalf("no invitation %s", inv.raw)
	}
	e.do("POST", orgPath(other.id, "/users"), ops, map[string]any{"email": "x@acme.example"}).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", orgPath(other.id, "/users"), ops, nil).wantError(http.StatusNotFound, nameNotFound)

	list := e.do("GET", users, ops, nil).want(http.StatusOK)
	if list.num("metadata.count") != 2 || list.str("data.0.email") != "ops@acme.example" || list.get("data.1.passwordSet") != false {
		t.Fatalf("organization users %s", list.raw)
	}
	viewer := e.orgUser(org.id, "v2@acme.example", store.AccessViewer)
	e.do("POST", users, viewer, map[string]any{"email": "x@acme.example"}).wantError(http.StatusForbidden, nameForbidden, "viewer")

	idB, tokB := e.newPartner("Partner B", "b@other.example")
	e.do("GET", users, tokB, nil).wantError(http.StatusNotFound, nameNotFound)
	e.shareOrg(org.id, idB, tokB)
	e.do("POST", users, tokB, map[string]any{"email": "x@acme.example"}).wantError(http.StatusForbidden, nameForbidden, "only the partner that created")
}

// TestCommonPasswordsRefused sets one of the most used passwords, in other
// letter cases, everywhere the API sets a password: each answer names the
// field and says the password is too common, and nothing is set.
func TestCommonPasswordsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	id, token := e.newUser(e.partnerToken, org.id, "ops@acme.example", store.AccessEditor)
	invite := e.do("POST", "/v2/partners/"+itoa(e.partnerID)+"/contacts", e.partnerToken,
		map[string]any{"email": "new@partner.example", "accessLevel": store.AccessViewer}).want(http.StatusOK).str("data.invitationToken")
	for _, pw := range []string{"Passw0rd", "PASSw0rd", "Password1", "Qwerty123", "Trustno1"} {
		tests := []struct {
			name, method, path, token string
			body                      map[string]any
			field                     string
		}{
			{"organization user", "POST", orgPath(org.id, "/users"), e.partnerToken,
				map[string]any{"email": "common@acme.example", "password": pw}, "password"},
			{"partner contact", "POST", "/v2/partners/" + itoa(e.partnerID) + "/contacts", e.partnerToken,
				map[string]any{"email": "common@partner.example", "password": pw}, "password"},
			{"password change", "POST", "/v2/users/" + itoa(id) + "/change-password", token,
				map[string]any{"currentPassword": "Secret123", "newPassword": pw}, "newPassword"},
			{"invitation", "POST", "/v2/reset-password/" + invite, "", map[string]any{"newPassword": pw}, "newPassword"},
		}
		for _, tc := range tests {
			t.Run(pw+"/"+tc.name, func(t *testing.T) {
				e.do(tc.method, tc.path, tc.token, tc.body).wantError(http.StatusBadRequest, nameBadRequest, tc.field+" is too common")
			})
		}
	}
	// Nothing was set: the users do not exist, the password and the invitation stand.
	e.login("ops@acme.example", "Secret123")
	for _, email := range []string{"common@acme.example", "common@partner.example"} {
		e.do("POST", "/v2/authenticate", "", map[string]any{"email": email, "password": "Passw0rd"}).wantError(http.StatusUnauthorized, nameUnauthorized)
	}
	e.do("POST", "/v2/reset-password/"+invite, "", map[string]any{"newPassword": "Uncommon7Lantern"}).want(http.StatusOK)
}
