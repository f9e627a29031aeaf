package cloudapi

import (
	"net/http"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// TestScopedTokenEndsWithItsIssuersReach: a scoped token holds only while
// whoever issued it still reaches the organization of its scope: an
// external user removed from it, an OAuth client disabled or deleted, a
// guest partner the organization is no longer shared with.
func TestScopedTokenEndsWithItsIssuersReach(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	idB, tokB, shared := e.sharedOrg()
	guestDevice := e.newDevice(tokB, shared.id, testIMEI(1), "B truck")
	home := e.newOrg(e.partnerToken, "Home")
	away := e.newOrg(e.partnerToken, "Away")
	awayDevice := e.newDevice(e.partnerToken, away.id, testIMEI(2), "Away truck")
	e.newDevice(e.partnerToken, home.id, testIMEI(3), "Home truck")
	orgScope := func(orgID int64) map[string]any {
		return map[string]any{"entities": []any{map[string]any{"entityType": "organization", "entityId": orgID,
			"features": []any{map[string]any{"featureType": "deviceGps"}}}}}
	}
	gps := func(imei string) string {
		return "/v2/devices/" + imei + "/gps?start=2026-02-28T00:00:00Z&end=2026-03-01T12:00:00Z"
	}

	// An organization user of Home, an external user of Away.
	_, userTok := e.newUser(e.partnerToken, home.id, "ops@home.example", store.AccessEditor)
	e.do("POST", orgPath(away.id, "/external-users"), e.partnerToken, map[string]any{"email": "ops@home.example"}).want(http.StatusOK)
	external := e.scopedToken(userTok, orgScope(away.id))
	e.do("GET", gps(awayDevice), external, nil).want(http.StatusOK)
	e.do("DELETE", orgPath(away.id, "/external-users"), e.partnerToken, map[string]any{"email": "ops@home.example"}).want(http.StatusOK)
	e.do("GET", gps(awayDevice), external, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "issuer no longer has access")

	// An organization's OAuth client, disabled and then deleted.
	id, secret := e.newOAuthClient(e.partnerToken, "organization", home.id)
	fromClient := e.scopedToken(e.clientToken(id, secret), orgScope(home.id))
	e.do("GET", gps(testIMEI(3)), fromClient, nil).want(http.StatusOK)
	e.do("PATCH", "/v2/oauth/clients/"+id, e.partnerToken, map[string]any{"enabled": false}).want(http.StatusOK)
	e.do("GET", gps(testIMEI(3)), fromClient, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "client is disabled")
	e.do("DELETE", "/v2/oauth/clients/"+id, e.partnerToken, nil).want(http.StatusOK)
	e.do("GET", gps(testIMEI(3)), fromClient, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "client no longer exists")

	// A guest partner, once the organization is no longer shared with it.
	guest := e.scopedToken(tokB, orgScope(shared.id))
	e.do("GET", gps(guestDevice), guest, nil).want(http.StatusOK)
	e.do("DELETE", "/v2/organizations/"+itoa(shared.id)+"/devices/"+guestDevice, tokB, nil).want(http.StatusOK)
	e.do("PATCH", orgPath(shared.id, ""), e.partnerToken, map[string]any{"partnerIds": []int64{e.partnerID}}).want(http.StatusOK)
	e.do("GET", orgPath(shared.id, "/devices"), guest, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "issuer no longer has access")
	_ = idB
}

// TestDeletedOrganizationsTokensEnd: deleting an organization deletes its
// OAuth clients, and its admin tokens and its clients' tokens are refused.
func TestDeletedOrganizationsTokensEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Short-lived")
	admin := e.ssoToken(org)
	id, secret := e.newOAuthClient(e.partnerToken, "organization", org.id)
	client := e.clientToken(id, secret)
	e.do("GET", "/v2/audit-logs", admin, nil).want(http.StatusOK)
	e.do("DELETE", orgPath(org.id, ""), e.partnerToken, nil).want(http.StatusOK)
	e.do("GET", "/v2/audit-logs", admin, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "organization no longer exists")
	e.do("GET", "/v2/me", client, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "client no longer exists")
	e.do("GET", "/v2/oauth/clients/"+id, e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.tokenRequest(id, secret).want(http.StatusUnauthorized)
	if n := e.auditActions("oauthClient.delete"); n != 1 {
		t.Fatalf("%d oauthClient.delete audit entries, want 1", n)
	}
}

// TestCreatingAnOrganizationNeedsTheEditor: an organization's ssoSecret
// gives admin tokens with the editor's rights, so creating one (its only
// sight of the secret) needs the editor access level.
func TestCreatingAnOrganizationNeedsTheEditor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noMedia := e.partnerUser("nomedia@partner.example", store.AccessEditorWithoutMediaAccess)
	e.do("POST", "/v2/organizations", noMedia, map[string]any{"name": "Side door"}).
		wantError(http.StatusForbidden, nameForbidden, "editorWithoutMediaAccess", "ssoSecret")
	editor := e.partnerUser("editor@partner.example", store.AccessEditor)
	if e.do("POST", "/v2/organizations", editor, map[string]any{"name": "Front door"}).want(http.StatusOK).str("data.ssoSecret") == "" {
		t.Fatal("no ssoSecret for the editor")
	}
}
