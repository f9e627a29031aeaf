package cloudapi

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// scopedBody is a POST /scoped-token body for one entity.
func scopedBody(entityType string, id any, features ...string) map[string]any {
	fs := []map[string]any{}
	for _, f := range features {
		fs = append(fs, map[string]any{"featureType": f})
	}
	return map[string]any{"entities": []map[string]any{{"entityType": entityType, "entityId": id, "features": fs}}}
}

func (e *testEnv) scopedToken(token string, body any) string {
	e.t.Helper()
	return e.do("POST", "/v2/scoped-token", token, body).want(http.StatusOK).str("data.token")
}

// scopedFleet is an organization with devices d1, d2 (d1 in group g) and another organization.
type scopedFleet struct {
	org, other createdOrg
	d1, d2     string
	g          int64
}

func newScopedFleet(e *testEnv) scopedFleet {
	f := scopedFleet{org: e.newOrg(e.partnerToken, "Acme"), other: e.newOrg(e.partnerToken, "Other")}
	f.d1 = e.newDevice(e.partnerToken, f.org.id, testIMEI(1), "one")
	f.d2 = e.newDevice(e.partnerToken, f.org.id, testIMEI(2), "two")
	f.g = e.newGroup(e.partnerToken, f.org.id, "G")
	e.do("POST", orgPath(f.org.id, "/groups/"+itoa(f.g)+"/devices"), e.partnerToken, []string{f.d1}).want(http.StatusOK)
	return f
}

func TestScopedTokenDevice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := newScopedFleet(e)
	r := e.do("POST", "/v2/scoped-token", e.partnerToken, scopedBody("device", f.d1, FeatureDeviceEvent)).want(http.StatusOK)
	tok := r.str("data.token")
	if r.str("data.scope.imei") != f.d1 || r.id("data.scope.organizationId") != f.org.id ||
		r.str("data.expiresAt") != isoTime(e.clock.Now().Add(24*time.Hour)) {
		t.Fatalf("scoped token answer %s", r.raw)
	}
	e.do("GET", "/v2/devices/"+f.d1, tok, nil).want(http.StatusOK)
	e.do("GET", "/v2/devices/"+f.d2, tok, nil).wantError(http.StatusNotFound, nameNotFound)
	if got := imeis(e.do("GET", orgPath(f.org.id, "/devices"), tok, nil).want(http.StatusOK)); len(got) != 1 || got[0] != f.d1 {
		t.Fatalf("scoped list %v", got)
	}
	if got := imeis(e.do("GET", orgPath(f.org.id, "/devices?imei="+f.d2), tok, nil).want(http.StatusOK)); len(got) != 0 {
		t.Fatalf("filter outside the scope lists %v", got)
	}
	e.do("GET", orgPath(f.other.id, "/devices"), tok, nil).wantError(http.StatusNotFound, nameNotFound)
	if me := e.do("GET", "/v2/me", tok, nil).want(http.StatusOK); me.str("data.me.role") != "restricted" || me.str("data.me.scope.imei") != f.d1 {
		t.Fatalf("scoped /me %s", me.raw)
	}

	// Routes that declare no feature refuse the token, writes included, and
	// a scoped token cannot mint another.
	undeclared := []struct{ method, path string }{
		{"GET", "/v2/organizations"},
		{"GET", orgPath(f.org.id, "")},
		{"GET", orgPath(f.org.id, "/default-settings")},
		{"GET", "/v2/audit-logs"},
		{"GET", orgPath(f.org.id, "/groups")},
		{"PATCH", "/v2/devices/" + f.d1},
		{"DELETE", orgPath(f.org.id, "/devices/"+f.d1)},
		{"POST", "/v2/scoped-token"},
	}
	for _, u := range undeclared {
		t.Run(u.method+" "+u.path, func(t *testing.T) {
			var body any
			if u.method != "GET" && u.method != "DELETE" {
				body = scopedBody("device", f.d1, FeatureDeviceEvent)
			}
			e.do(u.method, u.path, tok, body).wantError(http.StatusForbidden, nameForbidden, "scoped token cannot call this operation")
		})
	}
	e.clock.Advance(24*time.Hour + time.Second)
	e.do("GET", "/v2/devices/"+f.d1, tok, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "expired")
}

func TestScopedTokenGroupAndOrganization(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := newScopedFleet(e)
	group := e.scopedToken(e.partnerToken, scopedBody("group", f.g, FeatureDeviceLiveStreaming))
	e.do("GET", "/v2/devices/"+f.d1, group, nil).want(http.StatusOK)
	e.do("GET", "/v2/devices/"+f.d2, group, nil).wantError(http.StatusNotFound, nameNotFound)
	// The group scope follows the group's membership.
	e.do("POST", orgPath(f.org.id, "/groups/"+itoa(f.g)+"/devices"), e.partnerToken, []string{f.d2}).want(http.StatusOK)
	e.do("GET", "/v2/devices/"+f.d2, group, nil).want(http.StatusOK)
	if got := imeis(e.do("GET", orgPath(f.org.id, "/devices"), group, nil).want(http.StatusOK)); len(got) != 2 {
		t.Fatalf("group scope lists %v", got)
	}

	org := e.scopedToken(e.partnerToken, scopedBody("organization", itoa(f.org.id), FeatureDeviceRecordingTimeline))
	if got := imeis(e.do("GET", orgPath(f.org.id, "/devices"), org, nil).want(http.StatusOK)); len(got) != 2 {
		t.Fatalf("organization scope lists %v", got)
	}
	d3 := e.newDevice(e.partnerToken, f.other.id, testIMEI(3), "three")
	e.do("GET", "/v2/devices/"+d3, org, nil).wantError(http.StatusNotFound, nameNotFound)

	// An organization user's scoped token: its own organization only.
	user := e.orgUser(f.org.id, "u@acme.example", store.AccessViewer)
	e.scopedToken(user, scopedBody("device", f.d1, FeatureDeviceEvent))
	e.do("POST", "/v2/scoped-token", user, scopedBody("device", d3, FeatureDeviceEvent)).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", "/v2/scoped-token", user, scopedBody("organization", f.other.id, FeatureDeviceEvent)).wantError(http.StatusNotFound, nameNotFound)
}

// TestScopedTokenSharedOrganization: a partner's scoped token for a shared
// organization reaches only that partner's devices.
func TestScopedTokenSharedOrganization(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	idB, tokB := e.newPartner("Partner B", "b@other.example")
	org := e.newOrg(e.partnerToken, "Shared")
	e.shareOrg(org.id, idB, tokB)
	dA := e.newDevice(e.partnerToken, org.id, testIMEI(1), "A")
	dB := e.newDevice(tokB, org.id, testIMEI(2), "B")
	tok := e.scopedToken(tokB, scopedBody("organization", org.id, FeatureDeviceEvent))
	if got := imeis(e.do("GET", orgPath(org.id, "/devices"), tok, nil).want(http.StatusOK)); len(got) != 1 || got[0] != dB {
		t.Fatalf("partner B's scoped token lists %v", got)
	}
	e.do("GET", "/v2/devices/"+dA, tok, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", "/v2/scoped-token", tokB, scopedBody("device", dA, FeatureDeviceEvent)).wantError(http.StatusNotFound, nameNotFound)
}

func TestScopedTokenValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := newScopedFleet(e)
	_, tokB := e.newPartner("Partner B", "b@other.example")
	two := scopedBody("device", f.d1, FeatureDeviceEvent)
	two["entities"] = append(two["entities"].([]map[string]any), two["entities"].([]map[string]any)[0])
	tests := []struct {
		name   string
		token  string
		body   any
		status int
		msg    string
	}{
		{"no entities", e.partnerToken, map[string]any{"entities": []any{}}, 400, "entities must hold exactly one entity"},
		{"two entities", e.partnerToken, two, 400, "entities must hold exactly one entity"},
		{"unknown entity type", e.partnerToken, scopedBody("fleet", 1, FeatureDeviceEvent), 400, "entityType must be one of device, group, organization"},
		{"bad IMEI", e.partnerToken, scopedBody("device", "12345", FeatureDeviceEvent), 400, "entityId of a device must be 15 digits"},
		{"bad group id", e.partnerToken, scopedBody("group", "x", FeatureDeviceEvent), 400, "entityId of a group must be a positive integer"},
		{"missing id", e.partnerToken, scopedBody("group", nil, FeatureDeviceEvent), 400, "entityId is required"},
		{"no features", e.partnerToken, scopedBody("device", f.d1), 400, "features must name at least one feature"},
		{"unknown feature", e.partnerToken, scopedBody("device", f.d1, "everything"), 400, "features[0].featureType must be one of deviceEvent"},
		{"unknown member", e.partnerToken, map[string]any{"entities": []any{}, "ttl": 5}, 400, "ttl is not a known field"},
		{"another partner's device", tokB, scopedBody("device", f.d1, FeatureDeviceEvent), 404, "device"},
		{"another partner's group", tokB, scopedBody("group", f.g, FeatureDeviceEvent), 404, "group"},
		{"another partner's organization", tokB, scopedBody("organization", f.org.id, FeatureDeviceEvent), 404, "organization"},
		{"unknown group", e.partnerToken, scopedBody("group", 999, FeatureDeviceEvent), 404, "group"},
		{"no token", "", scopedBody("device", f.d1, FeatureDeviceEvent), 401, "bearer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("POST", "/v2/scoped-token", tc.token, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}
}

// TestScopedFeatureAndMediaGates drives the scope middleware through two
// routes that declare features the way media endpoints will.
func TestScopedFeatureAndMediaGates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := newScopedFleet(e)
	handler := func(c *gin.Context) {
		var imei string
		err := e.api.view(c, func(tx *store.Tx) error {
			d, err := e.api.device(c, tx)
			if err == nil {
				imei = d.IMEI
			}
			return err
		})
		if err != nil {
			e.api.fail(c, err)
			return
		}
		ok(c, imei)
	}
	e.api.engine.GET("/v2/test/devices/:imei/live", scoped(FeatureDeviceLiveStreaming), e.api.authenticate, e.api.media, handler)
	e.api.engine.GET("/v2/test/devices/:imei/event-media", scoped(FeatureDeviceEvent, FeatureDeviceRecordingTimeline), e.api.authenticate, e.api.media, handler)

	events := e.scopedToken(e.partnerToken, scopedBody("device", f.d1, FeatureDeviceEvent))
	e.do("GET", "/v2/test/devices/"+f.d1+"/event-media", events, nil).want(http.StatusOK)
	e.do("GET", "/v2/test/devices/"+f.d2+"/event-media", events, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", "/v2/test/devices/"+f.d1+"/live", events, nil).wantError(http.StatusForbidden, nameForbidden, "does not grant deviceLiveStreaming")

	noMedia := scopedBody("device", f.d1, FeatureDeviceEvent)
	noMedia["entities"].([]map[string]any)[0]["features"] = []map[string]any{{"featureType": FeatureDeviceEvent, "allowMedia": false}}
	r := e.do("POST", "/v2/scoped-token", e.partnerToken, noMedia).want(http.StatusOK)
	if slices.Contains(r.list("data.scope.mediaFeatures"), any(FeatureDeviceEvent)) {
		t.Fatalf("allowMedia false granted media: %s", r.raw)
	}
	e.do("GET", "/v2/test/devices/"+f.d1+"/event-media", r.str("data.token"), nil).wantError(http.StatusForbidden, nameForbidden, "without media access")

	// A token minted by a user without media access never reaches media,
	// and neither does the user.
	e.do("POST", "/v2/partners/"+itoa(e.partnerID)+"/contacts", e.partnerToken,
		map[string]any{"email": "nm@partner.example", "password": "Passw0rdX", "accessLevel": "editorWithoutMediaAccess"}).want(http.StatusOK)
	nm := e.login("nm@partner.example", "Passw0rdX")
	e.do("GET", "/v2/test/devices/"+f.d1+"/event-media", nm, nil).wantError(http.StatusForbidden, nameForbidden, "editorWithoutMediaAccess")
	fromNM := e.scopedToken(nm, scopedBody("device", f.d1, FeatureDeviceEvent))
	e.do("GET", "/v2/test/devices/"+f.d1+"/event-media", fromNM, nil).wantError(http.StatusForbidden, nameForbidden, "editorWithoutMediaAccess")
	e.do("GET", "/v2/test/devices/"+f.d1+"/event-media", e.partnerToken, nil).want(http.StatusOK)
}
