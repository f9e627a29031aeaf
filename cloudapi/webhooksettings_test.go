package cloudapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// addOrg creates an organization of partnerID directly in the store.
func (e *testEnv) addOrg(partnerID int64, name string) int64 {
	e.t.Helper()
	var id int64
	err := e.db.Update(e.t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		o, err := tx.CreateOrganization(partnerID, name, []byte("salt"))
		if o != nil {
			id = o.ID
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// addDevice puts a device with a valid IMEI ending in n into an organization.
func (e *testEnv) addDevice(orgID int64, n int) string {
	e.t.Helper()
	imei := luhnIMEI(n)
	err := e.db.Update(e.t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		o, err := tx.Organization(orgID)
		if err != nil {
			return err
		}
		return tx.AddDevice(&store.Device{IMEI: imei, OrganizationID: orgID, PartnerID: o.PartnerID, Name: fmt.Sprint("Truck ", n)})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return imei
}

func luhnIMEI(n int) string { return storetest.IMEI(fmt.Sprintf("3576601010%04d", n)) }

func allowPrivate(c *configs.Config, _ *Deps) { c.Webhooks.AllowPrivateTargets = true }

func TestWebhookSettingsPostReplacesPatchKeeps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.addOrg(e.partnerID, "Fleet")
	path := fmt.Sprintf("/v2/organizations/%d/webhook-settings", org)
	const a, b, c, d = "https://a.example.com/gps", "https://b.example.com/ev", "https://c.example.com/sys", "https://d.example.com/ev"

	r := e.do("POST", path, e.partnerToken, map[string]any{
		"gpsWebhookUrl":   []string{a},
		"eventWebhookUrl": []string{b},
		"systemMessagesWebhook": []any{map[string]any{"url": c,
			"config": map[string]any{"deviceRemoved": map[string]any{"isEnabled": true}}}},
	}).want(http.StatusOK)
	secret := r.str("data.webhookSecret")
	if !strings.HasPrefix(secret, webhooks.SecretPrefix) || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("first save: secret %q, Cache-Control %q", secret, r.header.Get("Cache-Control"))
	}
	if r.str("data.systemMessagesWebhook.0.url") != c || r.get("data.systemMessagesWebhook.0.config.deviceRemoved.isEnabled") != true ||
		r.get("data.systemMessagesWebhook.0.config.privacyMode.isEnabled") != false {
		t.Fatalf("saved %s", r.raw)
	}

	r = e.do("PATCH", path, e.partnerToken, map[string]any{"eventWebhookUrl": []string{b, d}}).want(http.StatusOK)
	if r.str("data.webhookSecret") != "" {
		t.Fatal("the secret was shown a second time")
	}
	if r.str("data.gpsWebhookUrl.0") != a || len(r.list("data.eventWebhookUrl")) != 2 || r.str("data.systemMessagesWebhook.0.url") != c {
		t.Fatalf("PATCH changed settings it did not name: %s", r.raw)
	}
	r = e.do("PATCH", path, e.partnerToken, map[string]any{"eventWebhookConfig": map[string]any{"notifyMediaAvailable": map[string]any{"isEnabled": false}}}).want(http.StatusOK)
	if r.get("data.eventWebhookConfig.notifyMediaAvailable.isEnabled") != false || len(r.list("data.eventWebhookUrl")) != 2 {
		t.Fatalf("PATCH of one toggle: %s", r.raw)
	}

	r = e.do("POST", path, e.partnerToken, map[string]any{"eventWebhookUrl": []string{d}}).want(http.StatusOK)
	if len(r.list("data.gpsWebhookUrl")) != 0 || len(r.list("data.systemMessagesWebhook")) != 0 ||
		r.str("data.eventWebhookUrl.0") != d || r.get("data.eventWebhookConfig.notifyMediaAvailable.isEnabled") != true {
		t.Fatalf("POST kept settings it did not name: %s", r.raw)
	}
	g := e.do("GET", path, e.partnerToken, nil).want(http.StatusOK)
	if string(mustJSON(t, g.get("data"))) != string(mustJSON(t, r.get("data"))) {
		t.Fatalf("GET %s differs from the POST answer %s", g.raw, r.raw)
	}
	entries, _, _ := e.db.AuditLog(t.Context(), store.AuditFilter{OrganizationID: org, Action: "webhook.settings.update"}, store.Page{})
	if len(entries) != 4 {
		t.Fatalf("%d audit entries for 4 saves", len(entries))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestWebhookSettingsRules(t *testing.T) {
	t.Parallel()
	urls := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("https://h%d.example.com/x", i))
		}
		return out
	}
	system := func(n int) []any {
		var out []any
		for _, u := range urls(n) {
			out = append(out, map[string]any{"url": u})
		}
		return out
	}
	tests := []struct {
		name   string
		method string
		body   any
		msg    string
	}{
		{"four GPS URLs", "POST", map[string]any{"gpsWebhookUrl": urls(4)}, "gpsWebhookUrl may hold at most 3 URLs"},
		{"four event URLs", "POST", map[string]any{"eventWebhookUrl": urls(4)}, "eventWebhookUrl may hold at most 3 URLs"},
		{"four event URLs by PATCH", "PATCH", map[string]any{"eventWebhookUrl": urls(4)}, "eventWebhookUrl may hold at most 3 URLs"},
		{"four alarm URLs", "POST", map[string]any{"alarmsWebhookUrl": urls(4)}, "alarmsWebhookUrl may hold at most 3 URLs"},
		{"four system URLs", "PATCH", map[string]any{"systemMessagesWebhook": system(4)}, "systemMessagesWebhook may hold at most 3 URLs"},
		{"repeated URL", "POST", map[string]any{"gpsWebhookUrl": []string{"https://a.example.com", "https://a.example.com"}}, "gpsWebhookUrl[1] repeats a URL"},
		{"not http", "POST", map[string]any{"eventWebhookUrl": []string{"ftp://a.example.com/x"}}, "eventWebhookUrl[0] must be an absolute http or https URL"},
		{"relative", "PATCH", map[string]any{"gpsWebhookUrl": []string{"/hooks/gps"}}, "gpsWebhookUrl[0] must be an absolute http or https URL"},
		{"loopback", "POST", map[string]any{"eventWebhookUrl": []string{"http://127.0.0.1:8080/x"}}, "eventWebhookUrl[0] must not point to a loopback, private, link-local or metadata address; the operator allows them with FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS=true"},
		{"private", "POST", map[string]any{"gpsWebhookUrl": []string{"http://10.0.0.7/x"}}, "gpsWebhookUrl[0] must not point to"},
		{"metadata", "POST", map[string]any{"alarmsWebhookUrl": []string{"http://169.254.169.254/latest"}}, "alarmsWebhookUrl[0] must not point to"},
		{"system URL missing", "POST", map[string]any{"systemMessagesWebhook": []any{map[string]any{"config": map[string]any{}}}}, "systemMessagesWebhook[0].url is required"},
		{"system URL private", "POST", map[string]any{"systemMessagesWebhook": []any{map[string]any{"url": "http://localhost/x"}}}, "systemMessagesWebhook[0].url must not point to"},
		{"data profile limit", "POST", map[string]any{"systemMessagesWebhook": []any{map[string]any{"url": "https://a.example.com",
			"config": map[string]any{"dataProfile": map[string]any{"isEnabled": true, "dataProfileLimit": 5}}}}}, "dataProfileLimit must be an integer from 10 to 100"},
		{"unknown field", "PATCH", map[string]any{"gpsUrls": urls(1)}, "gpsUrls is not a known field"},
		{"wrong type", "PATCH", map[string]any{"gpsWebhookUrl": "https://a.example.com"}, "gpsWebhookUrl must be an array"},
	}
	e := newEnv(t)
	org := e.addOrg(e.partnerID, "Fleet")
	path := fmt.Sprintf("/v2/organizations/%d/webhook-settings", org)
	e.do("POST", path, e.partnerToken, map[string]any{"gpsWebhookUrl": urls(3)}).want(http.StatusOK)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.do(tc.method, path, e.partnerToken, tc.body).wantError(http.StatusBadRequest, nameBadRequest, tc.msg)
			r := e.do("GET", path, e.partnerToken, nil).want(http.StatusOK)
			if len(r.list("data.gpsWebhookUrl")) != 3 {
				t.Fatalf("a refused call changed the settings: %s", r.raw)
			}
		})
	}
	t.Run("three of each are accepted", func(t *testing.T) {
		e.do("POST", path, e.partnerToken, map[string]any{"gpsWebhookUrl": urls(3), "eventWebhookUrl": urls(3),
			"alarmsWebhookUrl": urls(3), "systemMessagesWebhook": system(3)}).want(http.StatusOK)
	})
	t.Run("private targets when the operator allows them", func(t *testing.T) {
		dev := newEnv(t, allowPrivate)
		org := dev.addOrg(dev.partnerID, "Lab")
		dev.do("POST", fmt.Sprintf("/v2/organizations/%d/webhook-settings", org), dev.partnerToken,
			map[string]any{"eventWebhookUrl": []string{"http://127.0.0.1:9000/x", "http://localhost:9001/y"}, "allowInsecureWebhookUrls": true}).want(http.StatusOK)
	})
}

func TestWebhookSettingsAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.addOrg(e.partnerID, "Fleet")
	otherPartner := e.addPartner("Other", "other@example.com", "Secret123")
	foreign := e.addOrg(otherPartner, "Not yours")
	e.addOrgUser(org, "viewer@example.com", "Secret123", store.AccessViewer)
	e.addOrgUser(org, "editor@example.com", "Secret123", store.AccessEditor)
	viewer := e.login("viewer@example.com", "Secret123")
	editor := e.login("editor@example.com", "Secret123")
	path := func(id int64) string { return fmt.Sprintf("/v2/organizations/%d/webhook-settings", id) }
	body := map[string]any{"eventWebhookUrl": []string{"https://a.example.com/x"}}

	e.do("POST", path(foreign), e.partnerToken, body).wantError(http.StatusNotFound, nameNotFound, "organization")
	e.do("GET", path(foreign), e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", path(foreign), editor, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("PATCH", path(org), viewer, body).wantError(http.StatusForbidden, nameForbidden, "viewer")
	e.do("GET", path(org), viewer, nil).want(http.StatusOK)
	e.do("PATCH", path(org), editor, body).want(http.StatusOK)
	e.do("POST", fmt.Sprintf("/v2/organizations/%d/webhook-secret/rotate", foreign), e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
}

func TestWebhookSettingsInDefaultSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.addOrg(e.partnerID, "Fleet")
	e.do("POST", fmt.Sprintf("/v2/organizations/%d/webhook-settings", org), e.partnerToken,
		map[string]any{"gpsWebhookUrl": []string{"https://a.example.com/gps"}}).want(http.StatusOK)
	r := e.do("GET", fmt.Sprintf("/v2/organizations/%d/default-settings", org), e.partnerToken, nil).want(http.StatusOK)
	// The contract gives the lists and configurations as JSON text.
	if r.str("data.gpsWebhookUrl") != `["https://a.example.com/gps"]` || r.str("data.eventWebhookUrl") != "[]" ||
		r.str("data.eventWebhookConfig") != `{"notifyMediaAvailable":{"isEnabled":true}}` || r.str("data.webhookSecret") != "" {
		t.Fatalf("default settings %s", r.raw)
	}
}

func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.addOrg(e.partnerID, "Fleet")
	rotate := fmt.Sprintf("/v2/organizations/%d/webhook-secret/rotate", org)
	first := e.do("POST", rotate, e.partnerToken, nil).want(http.StatusOK)
	second := e.do("POST", rotate, e.partnerToken, nil).want(http.StatusOK)
	s1, s2 := first.str("data.webhookSecret"), second.str("data.webhookSecret")
	if !strings.HasPrefix(s1, "whsec_") || s1 == s2 || first.str("data.previousSecretValidUntil") != "" ||
		second.str("data.previousSecretValidUntil") != "2026-03-02T12:00:00.000Z" {
		t.Fatalf("rotations: %s then %s", first.raw, second.raw)
	}
	// The secret is never stored: the store holds salts only.
	var sec *store.WebhookSecret
	e.db.View(t.Context(), func(tx *store.Tx) error { sec, _ = tx.WebhookSecret(org); return nil })
	if raw, _ := json.Marshal(sec); strings.Contains(string(raw), strings.TrimPrefix(s2, "whsec_")) {
		t.Fatal("the secret is stored")
	}
	if webhooks.Secret(e.key, org, sec.Salt) != s2 || webhooks.Secret(e.key, org, sec.PreviousSalt) != s1 {
		t.Fatal("the shown secrets are not the ones deliveries are signed with")
	}
	// Saving settings afterwards does not show the secret again.
	r := e.do("POST", fmt.Sprintf("/v2/organizations/%d/webhook-settings", org), e.partnerToken, map[string]any{}).want(http.StatusOK)
	if r.str("data.webhookSecret") != "" {
		t.Fatal("settings showed an existing secret")
	}
}

// TestOpenAPIDocumentsWebhookPayloads checks that every webhook type is in
// the document's webhooks section, signed, with examples in envelope form.
func TestOpenAPIDocumentsWebhookPayloads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/v2/openapi.json", "", nil).want(http.StatusOK)
	var doc struct {
		OpenAPI  string `json:"openapi"`
		Webhooks map[string]struct {
			Post struct {
				Parameters  []map[string]any `json:"parameters"`
				RequestBody struct {
					Content map[string]struct {
						Example  json.RawMessage `json:"example"`
						Examples map[string]struct {
							Value json.RawMessage `json:"value"`
						} `json:"examples"`
					} `json:"content"`
				} `json:"requestBody"`
			} `json:"post"`
		} `json:"webhooks"`
	}
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI < "3.1" {
		t.Fatalf("openapi %s: the webhooks section needs 3.1", doc.OpenAPI)
	}
	for typ, name := range webhookOfType {
		w, found := doc.Webhooks[name]
		if !found {
			t.Errorf("webhook %s is not documented", name)
			continue
		}
		if len(w.Post.Parameters) != 4 {
			t.Errorf("webhook %s documents %d signature headers, want 4 (Standard Webhooks and X-Surfsight-Signature)", name, len(w.Post.Parameters))
		}
		c := w.Post.RequestBody.Content["application/json"]
		examples := []json.RawMessage{}
		if c.Example != nil {
			examples = append(examples, c.Example)
		}
		for _, x := range c.Examples {
			examples = append(examples, x.Value)
		}
		if len(examples) == 0 {
			t.Errorf("webhook %s has no example", name)
		}
		for _, raw := range examples {
			var env webhooks.Envelope
			if err := json.Unmarshal(raw, &env); err != nil || env.Type != typ || len(env.Data) < 3 {
				t.Errorf("webhook %s example %s is not a %s envelope", name, raw, typ)
			}
		}
	}
}

func TestWebhookURLsAreHTTPSUnlessTheOrganizationOptsIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.addOrg(e.partnerID, "Fleet")
	dev := e.addDevice(org, 1)
	settings := fmt.Sprintf("/v2/organizations/%d/webhook-settings", org)
	subs := fmt.Sprintf("/v2/organizations/%d/webhooks", org)
	const plain = "http://hooks.example.com/x"
	sub := map[string]any{"imei": dev, "url": plain, "type": "event"}

	e.do("POST", settings, e.partnerToken, map[string]any{"eventWebhookUrl": []string{plain}}).
		wantError(http.StatusBadRequest, nameBadRequest, "eventWebhookUrl[0] must be an https URL", "allowInsecureWebhookUrls")
	e.do("POST", subs, e.partnerToken, sub).wantError(http.StatusBadRequest, nameBadRequest, "url must be an https URL")
	e.do("PUT", subs, e.partnerToken, []any{sub}).wantError(http.StatusBadRequest, nameBadRequest, "[0].url must be an https URL")
	if r := e.do("GET", settings, e.partnerToken, nil).want(http.StatusOK); r.get("data.allowInsecureWebhookUrls") != false {
		t.Fatalf("default opt-in: %s", r.raw)
	}

	r := e.do("POST", settings, e.partnerToken, map[string]any{"eventWebhookUrl": []string{plain}, "allowInsecureWebhookUrls": true}).want(http.StatusOK)
	if r.get("data.allowInsecureWebhookUrls") != true || r.str("data.eventWebhookUrl.0") != plain {
		t.Fatalf("opted in: %s", r.raw)
	}
	e.do("PATCH", settings, e.partnerToken, map[string]any{"gpsWebhookUrl": []string{plain + "/gps"}}).want(http.StatusOK)
	e.do("POST", subs, e.partnerToken, sub).want(http.StatusOK)
	// The opt-in is a setting like the others: a replace that leaves it out
	// turns it off, and the http URLs with it.
	e.do("POST", settings, e.partnerToken, map[string]any{"eventWebhookUrl": []string{plain}}).
		wantError(http.StatusBadRequest, nameBadRequest, "eventWebhookUrl[0] must be an https URL")
	// Opting in does not open internal targets.
	e.do("POST", settings, e.partnerToken, map[string]any{"eventWebhookUrl": []string{"http://[64:ff9b::a9fe:a9fe]/x"}, "allowInsecureWebhookUrls": true}).
		wantError(http.StatusBadRequest, nameBadRequest, "eventWebhookUrl[0] must not point to")
}

func TestWebhookURLsRefuseIPv6FormsOfInternalAddresses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.addOrg(e.partnerID, "Fleet")
	dev := e.addDevice(org, 1)
	for _, u := range []string{"https://[::127.0.0.1]/x", "https://[64:ff9b::a9fe:a9fe]/x", "https://[2002:a9fe:a9fe::1]/x",
		"https://[2001:0:4136:e378:8000:63bf:5601:5601]/x", "https://[::ffff:0:a9fe:a9fe]/x"} {
		t.Run(u, func(t *testing.T) {
			e.do("POST", fmt.Sprintf("/v2/organizations/%d/webhook-settings", org), e.partnerToken, map[string]any{"gpsWebhookUrl": []string{u}}).
				wantError(http.StatusBadRequest, nameBadRequest, "gpsWebhookUrl[0] must not point to a loopback, private, link-local or metadata address")
			e.do("POST", fmt.Sprintf("/v2/organizations/%d/webhooks", org), e.partnerToken, map[string]any{"imei": dev, "url": u, "type": "gps"}).
				wantError(http.StatusBadRequest, nameBadRequest, "url must not point to")
		})
	}
}
