package cloudapi

import (
	"bytes"
	"net/http"
	"os"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

func TestCreateOrganization(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("POST", "/v2/organizations", e.partnerToken, map[string]any{"name": " Acme Fleet "}).want(http.StatusOK)
	id, secret := r.id("data.organizationId"), r.str("data.ssoSecret")
	if id == 0 || len(secret) < 32 || r.id("organizationId") != id || r.str("ssoSecret") != secret {
		t.Fatalf("unexpected create answer %s", r.raw)
	}

	g := e.do("GET", orgPath(id, ""), e.partnerToken, nil).want(http.StatusOK)
	if g.str("data.name") != "Acme Fleet" || g.get("data.isOrganizationProfileEnabled") != false ||
		g.get("data.exclusivePartnerOnly") != true || g.num("data.purgeDays") != 31 ||
		g.id("data.partnerId") != e.partnerID || g.str("data.resellerName") != "First partner" ||
		g.num("data.devicesCount") != 0 || g.num("data.usersCount") != 0 {
		t.Fatalf("unexpected organization %s", g.raw)
	}
	if bytes.Contains(g.raw, []byte(secret)) || g.get("data.ssoSecret") != nil {
		t.Fatal("GET shows the ssoSecret")
	}
	// The secret is derived, never stored: the bbolt file does not hold it
	// (PostgreSQL's organizations table has a column for the salt, none
	// for a secret).
	if path := e.db.Path(); path != "" {
		e.db.Close()
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(secret)) {
			t.Fatal("the store file holds the ssoSecret")
		}
	}
}

func TestCreateOrganizationNotExclusive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("POST", "/v2/organizations", e.partnerToken, map[string]any{"name": "Shared", "exclusivePartnerOnly": false}).want(http.StatusOK)
	g := e.do("GET", orgPath(r.id("data.organizationId"), ""), e.partnerToken, nil).want(http.StatusOK)
	if g.get("data.exclusivePartnerOnly") != false {
		t.Fatalf("exclusivePartnerOnly not kept: %s", g.raw)
	}
}

func TestCreateOrganizationRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	orgEditor := e.orgUser(org.id, "ed@acme.example", store.AccessEditor)
	e.do("POST", "/v2/partners/"+itoa(e.partnerID)+"/contacts", e.partnerToken,
		map[string]any{"email": "look@partner.example", "password": "Secret123", "accessLevel": "viewer"}).want(http.StatusOK)
	partnerViewer := e.login("look@partner.example", "Secret123")
	tests := []struct {
		name   string
		token  string
		body   any
		status int
		msg    string
	}{
		{"missing name", e.partnerToken, map[string]any{}, 400, "name is required"},
		{"blank name", e.partnerToken, map[string]any{"name": "  "}, 400, "name is required"},
		{"long name", e.partnerToken, map[string]any{"name": string(bytes.Repeat([]byte("x"), 101))}, 400, "name must be at most 100"},
		{"wrong type", e.partnerToken, map[string]any{"name": 12}, 400, "name must be a string"},
		{"unknown field", e.partnerToken, map[string]any{"name": "x", "ssoSecret": "mine"}, 400, "ssoSecret is not a known field"},
		{"malformed", e.partnerToken, `{"name":`, 400, "JSON"},
		{"no token", "", map[string]any{"name": "x"}, 401, "bearer"},
		{"organization user", orgEditor, map[string]any{"name": "x"}, 403, "partners only"},
		{"partner viewer", partnerViewer, map[string]any{"name": "x"}, 403, "viewer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("POST", "/v2/organizations", tc.token, tc.body).wantError(tc.status, errorName(tc.status), tc.msg)
		})
	}
}

func TestListOrganizationsTenancy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a1 := e.newOrg(e.partnerToken, "A1")
	a2 := e.newOrg(e.partnerToken, "A2")
	_, tokB := e.newPartner("Other partner", "b@other.example")
	b1 := e.newOrg(tokB, "B1")
	userA1 := e.orgUser(a1.id, "u@a1.example", store.AccessViewer)

	ids := func(r *response) []int64 {
		var out []int64
		for _, o := range r.list("data") {
			out = append(out, int64(o.(map[string]any)["id"].(float64)))
		}
		return out
	}
	r := e.do("GET", "/v2/organizations", e.partnerToken, nil).want(http.StatusOK)
	if got := ids(r); len(got) != 2 || got[0] != a1.id || got[1] != a2.id || r.num("metadata.count") != 2 {
		t.Fatalf("partner A lists %v: %s", got, r.raw)
	}
	if got := ids(e.do("GET", "/v2/organizations", tokB, nil).want(http.StatusOK)); len(got) != 1 || got[0] != b1.id {
		t.Fatalf("partner B lists %v", got)
	}
	if got := ids(e.do("GET", "/v2/organizations", userA1, nil).want(http.StatusOK)); len(got) != 1 || got[0] != a1.id {
		t.Fatalf("organization user lists %v", got)
	}
	if got := ids(e.do("GET", "/v2/organizations?limit=1&offset=1", e.partnerToken, nil).want(http.StatusOK)); len(got) != 1 || got[0] != a2.id {
		t.Fatalf("second page %v", got)
	}
	for _, tc := range []struct {
		name, token, path string
	}{
		{"partner B reads A1", tokB, orgPath(a1.id, "")},
		{"A1 user reads A2", userA1, orgPath(a2.id, "")},
		{"A1 user reads B1", userA1, orgPath(b1.id, "")},
		{"partner A reads B1 settings", e.partnerToken, orgPath(b1.id, "/default-settings")},
		{"malformed id", e.partnerToken, "/v2/organizations/abc"},
		{"unknown id", e.partnerToken, "/v2/organizations/999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.do("GET", tc.path, tc.token, nil).wantError(http.StatusNotFound, nameNotFound, "organization")
		})
	}
	e.do("PATCH", orgPath(a1.id, ""), tokB, map[string]any{"name": "mine"}).wantError(http.StatusNotFound, nameNotFound)
}

func TestUpdateOrganization(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	r := e.do("PATCH", orgPath(org.id, ""), e.partnerToken, map[string]any{
		"purgeDays": 60, "purgeDaysRearCamera": 7, "deviceRetentionMinutes": 240,
		"isOrganizationProfileEnabled": true, "liveVideoTimeoutSeconds": 90, "defaultDataProfileId": 4,
	}).want(http.StatusOK)
	if r.num("data.purgeDays") != 60 || r.num("data.purgeDaysRearCamera") != 7 || r.num("data.purgeDaysFrontCamera") != 60 ||
		r.num("data.deviceRetentionMinutes") != 240 || r.get("data.isOrganizationProfileEnabled") != true ||
		r.num("data.liveVideoTimeoutSeconds") != 90 || r.num("data.defaultDataProfileId") != 4 || r.str("data.name") != "Acme" {
		t.Fatalf("unexpected update answer %s", r.raw)
	}
	// PATCH keeps what the call does not name.
	r = e.do("PATCH", orgPath(org.id, ""), e.partnerToken, map[string]any{"name": "Acme Logistics"}).want(http.StatusOK)
	if r.str("data.name") != "Acme Logistics" || r.num("data.purgeDays") != 60 || r.get("data.isOrganizationProfileEnabled") != true {
		t.Fatalf("PATCH lost members: %s", r.raw)
	}
	// The organization's own editor may change it; its viewer may not.
	editor := e.orgUser(org.id, "ed@acme.example", store.AccessEditor)
	viewer := e.orgUser(org.id, "view@acme.example", store.AccessViewer)
	e.do("PATCH", orgPath(org.id, ""), editor, map[string]any{"purgeDays": 90}).want(http.StatusOK)
	e.do("PATCH", orgPath(org.id, ""), viewer, map[string]any{"purgeDays": 10}).wantError(http.StatusForbidden, nameForbidden, "viewer")
	e.do("PATCH", orgPath(org.id, ""), editor, map[string]any{"exclusivePartnerOnly": false}).
		wantError(http.StatusForbidden, nameForbidden, "exclusivePartnerOnly")

	a := e.do("GET", "/v2/audit-logs?entityType=organization&action=organization.update&limit=1", e.partnerToken, nil).want(http.StatusOK)
	if a.text("data.0.previousValue").num("retention.purgeDays") != 60 || a.text("data.0.value").num("retention.purgeDays") != 90 {
		t.Fatalf("audit of the last update: %s", a.raw)
	}
}

func TestUpdateOrganizationValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	tests := []struct {
		name string
		body any
		msg  string
	}{
		{"empty object", map[string]any{}, "at least one member"},
		{"purgeDays zero", map[string]any{"purgeDays": 0}, "purgeDays must be an integer from 1 to 366"},
		{"purgeDays too big", map[string]any{"purgeDays": 367}, "purgeDays must be an integer from 1 to 366"},
		{"purgeDays fraction", map[string]any{"purgeDays": 1.5}, "purgeDays must be an integer"},
		{"purgeDays string", map[string]any{"purgeDays": "30"}, "purgeDays must be an integer"},
		{"camera purge", map[string]any{"purgeDaysAuxiliaryCameras": -1}, "purgeDaysAuxiliaryCameras must be"},
		{"retention minutes", map[string]any{"deviceRetentionMinutes": 3}, "deviceRetentionMinutes must be an integer from 4"},
		{"live video timeout", map[string]any{"liveVideoTimeoutSeconds": 10}, "liveVideoTimeoutSeconds must be an integer from 30"},
		{"data profile", map[string]any{"defaultDataProfileId": -2}, "defaultDataProfileId"},
		{"blank name", map[string]any{"name": ""}, "name is required"},
		{"profile flag type", map[string]any{"isOrganizationProfileEnabled": "yes"}, "isOrganizationProfileEnabled must be a boolean"},
		{"unknown member", map[string]any{"purgeDay": 3}, "purgeDay is not a known field"},
		{"partners while exclusive", map[string]any{"partnerIds": []int{99}}, "partnerIds can name other partners only when exclusivePartnerOnly is false"},
		{"too many partners", map[string]any{"exclusivePartnerOnly": false, "partnerIds": make([]int, store.MaxInvitedPartners+1)}, "partnerIds must hold at most 100 partner ids"},
		{"not a partner id", map[string]any{"exclusivePartnerOnly": false, "partnerIds": []int{0}}, "partnerIds must hold partner ids"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do("PATCH", orgPath(org.id, ""), e.partnerToken, tc.body).wantError(http.StatusBadRequest, nameBadRequest, tc.msg)
		})
	}
	// Nothing of the refused calls was written.
	g := e.do("GET", orgPath(org.id, ""), e.partnerToken, nil).want(http.StatusOK)
	if g.get("data.exclusivePartnerOnly") != true || g.num("data.purgeDays") != 31 {
		t.Fatalf("refused PATCH changed the organization: %s", g.raw)
	}
}

// TestSharedOrganization: with exclusivePartnerOnly false the creating partner
// invites another, which shares the organization once it accepts; each
// partner sees and manages only its own devices there.
func TestSharedOrganization(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	idB, tokB := e.newPartner("Partner B", "b@other.example")
	org := e.newOrg(e.partnerToken, "Shared fleet")

	e.do("POST", orgPath(org.id, "/devices"), tokB, map[string]any{"imei": testIMEI(1), "name": "B1"}).wantError(http.StatusNotFound, nameNotFound)
	r := e.do("PATCH", orgPath(org.id, ""), e.partnerToken, map[string]any{"exclusivePartnerOnly": false, "partnerIds": []int64{idB}}).want(http.StatusOK)
	if ids := r.list("data.partnerIds"); len(ids) != 1 || r.id("data.invitedPartnerIds.0") != idB {
		t.Fatalf("partnerIds %v before the invitation is accepted: %s", ids, r.raw)
	}
	e.do("POST", orgPath(org.id, "/devices"), tokB, map[string]any{"imei": testIMEI(1), "name": "B1"}).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", invitationPath(org.id, "/accept"), tokB, nil).want(http.StatusOK)
	if ids := e.do("GET", orgPath(org.id, ""), e.partnerToken, nil).want(http.StatusOK).list("data.partnerIds"); len(ids) != 2 {
		t.Fatalf("partnerIds %v", ids)
	}
	if got := e.do("GET", "/v2/organizations", tokB, nil).want(http.StatusOK).list("data"); len(got) != 1 {
		t.Fatalf("partner B does not see the shared organization: %v", got)
	}
	devA := e.newDevice(e.partnerToken, org.id, testIMEI(2), "A truck")
	devB := e.newDevice(tokB, org.id, testIMEI(1), "B van")
	if d := e.do("GET", "/v2/devices/"+devB, tokB, nil).want(http.StatusOK); d.id("data.partnerId") != idB {
		t.Fatalf("device of B: %s", d.raw)
	}

	if got := imeis(e.do("GET", orgPath(org.id, "/devices"), e.partnerToken, nil).want(http.StatusOK)); len(got) != 1 || got[0] != devA {
		t.Fatalf("partner A lists %v", got)
	}
	if got := imeis(e.do("GET", orgPath(org.id, "/devices"), tokB, nil).want(http.StatusOK)); len(got) != 1 || got[0] != devB {
		t.Fatalf("partner B lists %v", got)
	}
	orgUser := e.orgUser(org.id, "ops@shared.example", store.AccessEditor)
	if got := imeis(e.do("GET", orgPath(org.id, "/devices"), orgUser, nil).want(http.StatusOK)); len(got) != 2 {
		t.Fatalf("organization user lists %v", got)
	}
	if n := e.do("GET", orgPath(org.id, ""), tokB, nil).want(http.StatusOK).num("data.devicesCount"); n != 1 {
		t.Fatalf("partner B counts %v devices", n)
	}
	e.do("GET", "/v2/devices/"+devA, tokB, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("PATCH", "/v2/devices/"+devA, tokB, map[string]any{"name": "mine"}).wantError(http.StatusNotFound, nameNotFound)
	e.do("DELETE", orgPath(org.id, "/devices/"+devA), tokB, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("PATCH", orgPath(org.id, ""), tokB, map[string]any{"name": "taken"}).wantError(http.StatusForbidden, nameForbidden, "only the partner that created")

	// Making it exclusive again waits until B's devices are gone.
	e.do("PATCH", orgPath(org.id, ""), e.partnerToken, map[string]any{"exclusivePartnerOnly": true}).
		wantError(http.StatusConflict, nameConflict, "still has 1 devices")
	e.do("DELETE", orgPath(org.id, "/devices/"+devB), tokB, nil).want(http.StatusOK)
	e.do("PATCH", orgPath(org.id, ""), e.partnerToken, map[string]any{"exclusivePartnerOnly": true}).want(http.StatusOK)
	e.do("GET", orgPath(org.id, ""), tokB, nil).wantError(http.StatusNotFound, nameNotFound)
}

func TestDefaultSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	r := e.do("GET", orgPath(org.id, "/default-settings"), e.partnerToken, nil).want(http.StatusOK)
	if r.num("data.device.brightness.value") != 128 || r.get("data.device.privacy.recordingEnabled") != true ||
		len(r.list("data.events.events")) == 0 || r.num("data.purgeDays") != 31 || r.get("data.isOrganizationProfileEnabled") != false ||
		r.str("data.gpsWebhookUrl") != "[]" || r.str("data.eventWebhookUrl") != "[]" {
		t.Fatalf("unexpected defaults %s", r.raw)
	}

	err := e.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		dev := store.DefaultDeviceConfig()
		dev.Brightness = 40
		ev := store.DefaultEventConfig()
		ev.Events = map[string]store.EventSetting{"laneWeaving": {Enabled: false}}
		pr := store.DefaultPrivacyConfig()
		pr.Cameras = map[int]bool{2: false}
		return tx.PutOrgSettings(&store.OrgSettings{OrganizationID: org.id, Device: &dev, Events: &ev, Privacy: &pr}, "test")
	})
	if err != nil {
		t.Fatal(err)
	}
	e.do("PATCH", orgPath(org.id, ""), e.partnerToken, map[string]any{"purgeDays": 14, "isOrganizationProfileEnabled": true}).want(http.StatusOK)
	r = e.do("GET", orgPath(org.id, "/default-settings"), e.partnerToken, nil).want(http.StatusOK)
	if r.num("data.device.brightness.value") != 40 || hasEvent(r.list("data.events.events"), "laneWeaving") ||
		!hasEvent(r.list("data.events.events"), "deceleration") ||
		r.num("data.purgeDays") != 14 || r.num("data.purgeDaysFrontCamera") != 14 || r.get("data.isOrganizationProfileEnabled") != true {
		t.Fatalf("stored settings not shown: %s", r.raw)
	}
}

// hasEvent reports whether an event settings list names eventType.
func hasEvent(events []any, eventType string) bool {
	for _, e := range events {
		if m, ok := e.(map[string]any); ok && m["eventType"] == eventType {
			return true
		}
	}
	return false
}

// errorName is the API error name of an HTTP status in these tests.
func errorName(status int) string {
	return map[int]string{400: nameBadRequest, 401: nameUnauthorized, 403: nameForbidden, 404: nameNotFound,
		409: nameConflict, 413: nameTooLarge, 503: nameTimeout}[status]
}
