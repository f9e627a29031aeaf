package cloudapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestNullOrRepeatedBodyChangesNothing sends a null body, a member given
// twice and a null member to every call that stores settings or
// subscriptions: each is a 400 naming the body or the member, and what
// was stored before stays as it was.
func TestNullOrRepeatedBodyChangesNothing(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	imei := w.imeis[0]
	org := fmt.Sprintf("/v2/organizations/%d", w.orgID)
	w.do("PUT", "/v2/devices/"+imei+"/device-config", w.partnerToken, map[string]any{"brightness": v(42)}).want(http.StatusOK)
	w.do("POST", org+"/device-settings", w.partnerToken, map[string]any{"brightness": v(43)}).want(http.StatusOK)
	w.do("POST", org+"/webhook-settings", w.partnerToken, map[string]any{"gpsWebhookUrl": []string{"https://a.example.com/gps"}}).want(http.StatusOK)
	w.do("PUT", org+"/webhooks", w.partnerToken, []any{map[string]any{"imei": imei, "url": "https://a.example.com/ev", "type": "event"}}).want(http.StatusOK)
	rid := w.do("POST", q("/v2/recipients/alarms", w.orgID), w.partnerToken, map[string]any{"email": "ops@fleet.example", "reportIntervalSeconds": 600}).
		want(http.StatusOK).id("data.id")
	w.do("PATCH", org+"/privacy-config", w.partnerToken, map[string]any{"voiceRecording": "enabled"}).want(http.StatusOK)

	calls := []struct {
		name, method, path, read string
		repeated, nullMember     string // bodies with a member given twice or null
		repeatedPath, nullPath   string // the member each must name
	}{
		{"device config", "PUT", "/v2/devices/" + imei + "/device-config", "/v2/devices/" + imei + "/device-config",
			`{"brightness":{"value":1},"brightness":{"value":2}}`, `{"brightness":null}`, "brightness", "brightness"},
		{"organization device settings", "POST", org + "/device-settings", org + "/device-settings",
			`{"brightness":{"value":1,"value":2}}`, `{"brightness":{"value":null}}`, "brightness.value", "brightness.value"},
		{"webhook settings replace", "POST", org + "/webhook-settings", org + "/webhook-settings",
			`{"gpsWebhookUrl":[],"gpsWebhookUrl":["https://b.example.com"]}`, `{"gpsWebhookUrl":null}`, "gpsWebhookUrl", "gpsWebhookUrl"},
		{"webhook settings change", "PATCH", org + "/webhook-settings", org + "/webhook-settings",
			`{"eventWebhookUrl":["https://b.example.com"],"eventWebhookUrl":[]}`, `{"eventWebhookUrl":[null]}`, "eventWebhookUrl", "eventWebhookUrl[0]"},
		{"webhook subscriptions replace", "PUT", org + "/webhooks", org + "/webhooks",
			`[{"imei":"` + imei + `","url":"https://b.example.com","type":"gps","type":"event"}]`, `[null]`, "[0].type", "[0]"},
		{"alarm recipient", "PATCH", fmt.Sprintf("/v2/recipients/alarms/%d", rid), q("/v2/recipients/alarms", w.orgID),
			`{"reportIntervalSeconds":60,"reportIntervalSeconds":120}`, `{"alarmDefinitions":null}`, "reportIntervalSeconds", "alarmDefinitions"},
		{"organization privacy config", "PATCH", org + "/privacy-config", org + "/privacy-config",
			`{"voiceRecording":"disabled","voiceRecording":"enabled"}`, `{"voiceRecording":null}`, "voiceRecording", "voiceRecording"},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			before := w.do("GET", tc.read, w.partnerToken, nil).want(http.StatusOK).get("data")
			w.do(tc.method, tc.path, w.partnerToken, "null").wantError(http.StatusBadRequest, nameBadRequest, "body must be an", "not null")
			w.do(tc.method, tc.path, w.partnerToken, " null\n").wantError(http.StatusBadRequest, nameBadRequest, "body must be an", "not null")
			w.do(tc.method, tc.path, w.partnerToken, tc.repeated).wantError(http.StatusBadRequest, nameBadRequest, tc.repeatedPath+" is given more than once")
			w.do(tc.method, tc.path, w.partnerToken, tc.nullMember).wantError(http.StatusBadRequest, nameBadRequest, tc.nullPath+" must not be null")
			after := w.do("GET", tc.read, w.partnerToken, nil).want(http.StatusOK).get("data")
			if !reflect.DeepEqual(before, after) {
				b, _ := json.Marshal(before)
				a, _ := json.Marshal(after)
				t.Fatalf("stored data changed:\nbefore %s\nafter  %s", b, a)
			}
		})
	}
}

// TestBodyNamesAndTextAreExact: a member name that differs from the
// operation's only in case, and text that is not valid UTF-8, are 400s
// naming what is wrong, and nothing stored changes.
func TestBodyNamesAndTextAreExact(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 1)
	imei := w.imeis[0]
	org := fmt.Sprintf("/v2/organizations/%d", w.orgID)
	for _, tc := range []struct {
		method, path, read, body string
		msg                      []string
	}{
		{"PATCH", "/v2/devices/" + imei, "/v2/devices/" + imei, `{"nAmE":"Truck X"}`,
			[]string{"nAmE is not a known field", "case-sensitive: name"}},
		{"PUT", "/v2/devices/" + imei + "/device-config", "/v2/devices/" + imei + "/device-config", `{"brightness":{"VALUE":7}}`,
			[]string{"brightness.VALUE is not a known field", "case-sensitive: value"}},
		{"PATCH", org, org, "{\"name\":\"\xff\xfe\"}", []string{"not valid UTF-8", "offset 9"}},
		{"PATCH", "/v2/devices/" + imei, "/v2/devices/" + imei, "{\"name\":\"ok\xc3\"}", []string{"not valid UTF-8", "offset 11"}},
	} {
		before := w.do("GET", tc.read, w.partnerToken, nil).want(http.StatusOK).get("data")
		w.do(tc.method, tc.path, w.partnerToken, tc.body).wantError(http.StatusBadRequest, nameBadRequest, tc.msg...)
		if after := w.do("GET", tc.read, w.partnerToken, nil).want(http.StatusOK).get("data"); !reflect.DeepEqual(before, after) {
			t.Fatalf("%s %s %q changed stored data: before %v after %v", tc.method, tc.path, tc.body, before, after)
		}
	}
	// Valid UTF-8 beyond ASCII, and the replacement character itself, are text like any other.
	w.do("PATCH", org, w.partnerToken, `{"name":"Flotte Größe \ufffd 東京"}`).want(http.StatusOK)
	if got := w.do("GET", org, w.partnerToken, nil).want(http.StatusOK).str("data.name"); got != "Flotte Größe \ufffd 東京" {
		t.Fatalf("name %q", got)
	}
}

func TestCheckBody(t *testing.T) {
	t.Parallel()
	type inner struct {
		Name *string `json:"name"`
	}
	type embedded struct {
		IMEIs []string `json:"imeis"`
	}
	type body struct {
		embedded
		Items    []inner            `json:"items"`
		Labels   map[string]string  `json:"labels"`
		Raw      json.RawMessage    `json:"raw"`
		Any      any                `json:"any"`
		Optional *string            `json:"optional" nullable:"true"`
		Nested   map[string][]inner `json:"nested"`
	}
	for _, tc := range []struct {
		name, body, want string // want "": accepted
	}{
		{"plain", `{"imeis":["1"],"items":[{"name":"a"}],"labels":{"a":"b"}}`, ""},
		{"null body", `null`, "body must be an object, not null"},
		{"null member", `{"items":null}`, "items must not be null"},
		{"null in a list", `{"imeis":["1",null]}`, "imeis[1] must not be null"},
		{"null inside an item", `{"items":[{"name":"a"},{"name":null}]}`, "items[1].name must not be null"},
		{"null map value", `{"labels":{"a":null}}`, "labels.a must not be null"},
		{"nullable member", `{"optional":null}`, ""},
		{"raw and any take null", `{"raw":null,"any":{"x":null}}`, ""},
		{"repeated member", `{"items":[],"imeis":[],"items":[]}`, "items is given more than once"},
		{"another case", `{"items":[],"Items":[]}`, "Items is not a known field (member names are case-sensitive: items)"},
		{"only in another case", `{"Items":[]}`, "Items is not a known field"},
		{"repeated in an item", `{"items":[{"name":"a","name":"b"}]}`, "items[0].name is given more than once"},
		{"repeated map key", `{"nested":{"k":[{"name":"a"}],"k":[]}}`, "nested.k is given more than once"},
		{"repeated inside any", `{"any":{"x":1,"x":2}}`, "any.x is given more than once"},
		{"same key in two items", `{"items":[{"name":"a"},{"name":"b"}]}`, ""},
		{"NUL in a member", `{"items":[{"name":"a\u0000b"}]}`, "items[0].name must not contain the NUL character"},
		{"NUL inside any", `{"any":{"x":["\u0000"]}}`, "any.x[0] must not contain the NUL character"},
		{"NUL in a map key", `{"labels":{"a\u0000":"b"}}`, "labels must not have a member name with the NUL character"},
		{"escaped backslash before u0000", `{"items":[{"name":"\\u0000"}]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dst body
			if err := json.Unmarshal([]byte(tc.body), &dst); err != nil {
				t.Fatal(err)
			}
			err := checkBody([]byte(tc.body), reflect.TypeOf(&dst))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(statusOf(err).Message, tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	var list []string
	if err := checkBody([]byte(`null`), reflect.TypeOf(&list)); err == nil || statusOf(err).Message != "body must be an array, not null" {
		t.Fatalf("null list body: %v", err)
	}
}
