package cloudapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"sync"

	"gopkg.in/yaml.v3"
)

// The OpenAPI document is kept as one YAML fragment per API area under
// openapi/; base.yaml holds the document's frame and shared components.
// buildOpenAPI merges them into the JSON served at /v2/openapi.json.
//
//go:embed openapi/*.yaml
var openapiFS embed.FS

// OpenAPIDocument returns the OpenAPI document GET /v2/openapi.json serves,
// indented and ending in a newline as clients/openapi.json keeps it, so that
// tools (the linter, the client generators) have it without a running
// server.
func OpenAPIDocument() ([]byte, error) {
	doc, err := buildOpenAPI()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// servedOpenAPI is the document every Server serves, built once per process
// from the embedded fragments, which never change while it runs: a server
// shares it, read-only, rather than parsing the YAML again (tens of
// milliseconds each time, more under the race detector).
var servedOpenAPI = sync.OnceValues(buildOpenAPI)

func buildOpenAPI() ([]byte, error) {
	names, err := fs.Glob(openapiFS, "openapi/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	doc := map[string]any{}
	for _, name := range names {
		raw, err := openapiFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var frag map[string]any
		if err := yaml.Unmarshal(raw, &frag); err != nil {
			return nil, fmt.Errorf("cloudapi: openapi fragment %s: %w", name, err)
		}
		if err := mergeDoc(doc, frag, name); err != nil {
			return nil, err
		}
	}
	addUnauthorized(doc)
	return json.Marshal(doc)
}

// addUnauthorized gives every operation that needs a token (one that does
// not set security to an empty list) the shared 401 answer, so that no
// fragment has to repeat it.
func addUnauthorized(doc map[string]any) {
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for method, op := range ops {
			o, isOp := op.(map[string]any)
			if !isOp || !httpMethods[method] {
				continue
			}
			if sec, set := o["security"].([]any); set && len(sec) == 0 {
				continue
			}
			responses, _ := o["responses"].(map[string]any)
			if responses == nil {
				responses = map[string]any{}
				o["responses"] = responses
			}
			if _, listed := responses["401"]; !listed {
				responses["401"] = map[string]any{"$ref": "#/components/responses/Unauthorized"}
			}
		}
	}
}

// httpMethods are the members of an OpenAPI path item that are operations.
var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true,
	"options": true, "head": true, "patch": true, "trace": true}

// mergeDoc adds frag into doc; maps merge recursively and any other value
// defined twice is an error, so two fragments cannot silently disagree.
func mergeDoc(doc, frag map[string]any, where string) error {
	for k, v := range frag {
		existing, found := doc[k]
		if !found {
			doc[k] = v
			continue
		}
		em, ok1 := existing.(map[string]any)
		vm, ok2 := v.(map[string]any)
		if !ok1 || !ok2 {
			return fmt.Errorf("cloudapi: openapi %s: %q is defined twice", where, k)
		}
		if err := mergeDoc(em, vm, where+"."+k); err != nil {
			return err
		}
	}
	return nil
}
