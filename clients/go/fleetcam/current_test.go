package fleetcam_test

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

// checkCurrent fails the test when the committed file at path is not want,
// what the generator makes now.
func checkCurrent(t *testing.T, path string, want []byte, what string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not %s; run make openapi-client and commit the result", path, what)
	}
}

// TestDocumentIsCurrent fails when clients/openapi.json is not the document
// the server serves.
func TestDocumentIsCurrent(t *testing.T) {
	want, err := cloudapi.OpenAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	checkCurrent(t, "../../openapi.json", want, "the document GET /v2/openapi.json serves")
}

// TestClientIsCurrent generates the client from clients/openapi.json with
// the configuration and oapi-codegen version of the module, into a
// temporary directory, and fails when client.gen.go differs. It runs the
// generator with go run rather than go tool (go generate's way): go tool
// takes no build flags, not even from GOFLAGS, so under make test, whose
// GOFLAGS compile without DWARF, it would build the generator's every
// package again, the standard library included, where go run reuses them.
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
	gen := exec.Command("go", "run", "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen", "-config", config, "../../openapi.json")
	if msg, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	checkCurrent(t, "client.gen.go", want, "what oapi-codegen generates from clients/openapi.json")
}
