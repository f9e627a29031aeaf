package cloudapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// webhookOfType names the webhook of the document that describes the
// bodies of each webhook type.
var webhookOfType = map[string]string{
	"event": "event", "gps": "gps", "alarms": "alarm", "systemMessages": "systemMessages", "activation": "activation",
}

// webhookBodySchema returns the request body schema of the document's
// webhook for bodies of webhook type typ.
func webhookBodySchema(t *testing.T, doc *openapi3.T, typ string) *openapi3.Schema {
	t.Helper()
	item := doc.Webhooks[webhookOfType[typ]]
	if item == nil || item.Post == nil || item.Post.RequestBody == nil {
		t.Fatalf("the document has no webhook for type %q", typ)
	}
	mt := item.Post.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		t.Fatalf("webhook %q has no JSON body schema", typ)
	}
	return mt.Schema.Value
}

// TestOpenAPIWebhookBodies fails when a webhook body fleetcam renders (the
// golden bodies of cloudapi/webhooks, one per message type) does not
// validate against the document's schema of its webhook and against
// WebhookMessage, the body the delivery log shows; and when a body that
// breaks the schema passes.
func TestOpenAPIWebhookBodies(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	message := doc.Components.Schemas["WebhookMessage"]
	if message == nil {
		t.Fatal("no WebhookMessage schema")
	}
	names, err := filepath.Glob("webhooks/testdata/golden/*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no golden webhook bodies: %v", err)
	}
	types := map[string]bool{}
	for _, name := range names {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		typ, _ := body["type"].(string)
		types[typ] = true
		if err := webhookBodySchema(t, doc, typ).VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s does not fit webhook %q: %v", filepath.Base(name), webhookOfType[typ], err)
		}
		if err := message.Value.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s is not a WebhookMessage: %v", filepath.Base(name), err)
		}
	}
	for typ := range webhookOfType {
		if !types[typ] {
			t.Errorf("no golden body of webhook type %q", typ)
		}
	}

	// Bodies that break the schemas: a missing member, a value of the wrong
	// type, a message type of another webhook.
	for _, bad := range []string{
		`{"type":"event","mediaAvailable":false,"data":{"id":1,"eventType":"acceleration","time":1,"lat":0,"lon":0,"alt":0,"speed":0,"metadata":"","severity":2,"files":[],"driver":null}}`,
		`{"type":"gps","data":{"id":"a1","serialNumber":"356000000000018","gps":[{"time":"now","lat":0,"lon":0,"alt":0,"speed":0,"accuracy":0}]}}`,
		`{"type":"systemMessages","messageType":"deviceActivation","data":{"eventType":"deviceActivation","id":1,"organizationId":1,"serialNumber":"356000000000018","time":1}}`,
	} {
		var body map[string]any
		if err := json.Unmarshal([]byte(bad), &body); err != nil {
			t.Fatal(err)
		}
		if err := message.Value.VisitJSON(body, openapi3.EnableJSONSchema2020()); err == nil {
			t.Errorf("WebhookMessage accepts %s", strings.TrimSpace(bad))
		}
	}
}
