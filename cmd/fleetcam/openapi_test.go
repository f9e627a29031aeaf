package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// fleetcam openapi prints the document the API serves, with no
// configuration or store, and takes no arguments.
func TestOpenAPICommand(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"openapi"}, env{}.get, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var doc struct {
		OpenAPI  string                    `json:"openapi"`
		Paths    map[string]map[string]any `json:"paths"`
		Webhooks map[string]any            `json:"webhooks"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Paths["/v2/authenticate"]["post"] == nil || doc.Webhooks["event"] == nil {
		t.Fatalf("not the API's document: openapi %q, %d paths, %d webhooks", doc.OpenAPI, len(doc.Paths), len(doc.Webhooks))
	}

	stdout.Reset()
	stderr.Reset()
	code := run(context.Background(), []string{"openapi", "out.json"}, env{}.get, &stdout, &stderr)
	if code != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), `unexpected argument "out.json"`) {
		t.Fatalf("with an argument: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
