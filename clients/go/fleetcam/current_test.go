package fleetcam

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/fleetcam/fleetcam/cloudapi"
	"gopkg.in/yaml.v3"
)

// The committed document and client are what make openapi-client makes of
// the API as it is now; these tests fail when either is stale.

const stale = "; run make openapi-client and commit the result"

// TestDocumentIsCurrent fails when clients/openapi.json is not the document
// the server serves.
func TestDocumentIsCurrent(t *testing.T) {
	want, err := cloudapi.OpenAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("clients/openapi.json is not the document GET /v2/openapi.json serves" + stale)
	}
}

// TestClientIsCurrent generates the client from clients/openapi.json with
// the configuration and oapi-codegen version of the module (go tool), into
// a temporary directory, and fails when client.gen.go differs.
func TestClientIsCurrent(t *testing.T) {
	raw, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "client.gen.go")
	cfg["output"] = out
	if raw, err = yaml.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "oapi-codegen.yaml")
	if err := os.WriteFile(config, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	gen := exec.Command("go", "tool", "oapi-codegen", "-config", config, "../../openapi.json")
	if msg, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("client.gen.go is not what oapi-codegen generates from clients/openapi.json" + stale)
	}
}
