package cloudapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPICoversRoutes fails when a route is missing from the OpenAPI
// document or the document names an operation that is not routed.
func TestOpenAPICoversRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/v2/openapi.json", "", nil).want(http.StatusOK)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	routed := map[string]bool{}
	for _, rt := range e.api.Routes() {
		routed[rt.Method+" "+ginToOpenAPI(rt.Path)] = true
	}
	var missing, extra []string
	for k := range routed {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !routed[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routed but not documented:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("documented but not routed:\n  %s", strings.Join(extra, "\n  "))
	}
}

// TestOpenAPIUnauthorized calls every operation that the document says needs
// a token without one: each answers 401 UnauthorizedError, and each lists 401.
func TestOpenAPIUnauthorized(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(e.do("GET", "/v2/openapi.json", "", nil).want(http.StatusOK).raw, &doc); err != nil {
		t.Fatal(err)
	}
	params := strings.NewReplacer("{imei}", testIMEI(1), "{", "", "}", "")
	checked := 0
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			if method == "parameters" {
				continue
			}
			var op struct {
				Security  *[]any                     `json:"security"`
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			if op.Security != nil && len(*op.Security) == 0 {
				continue
			}
			checked++
			if _, listed := op.Responses["401"]; !listed {
				t.Errorf("%s %s needs a token but does not list 401", strings.ToUpper(method), path)
			}
			// A path parameter's own name stands in for its value: 401 comes first.
			e.do(strings.ToUpper(method), params.Replace(path), "", nil).wantError(http.StatusUnauthorized, nameUnauthorized)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d operations need a token", checked)
	}
}

// ginToOpenAPI turns /v2/devices/:imei into /v2/devices/{imei}.
func ginToOpenAPI(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// TestOpenAPIRefsResolve fails when a $ref of the document names a component
// no fragment defines.
func TestOpenAPIRefsResolve(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/v2/openapi.json", "", nil).want(http.StatusOK)
	var doc map[string]any
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch n := v.(type) {
		case map[string]any:
			for k, c := range n {
				if k == "$ref" {
					ref, _ := c.(string)
					if !resolves(doc, ref) {
						t.Errorf("%s: $ref %q does not resolve", where, ref)
					}
					continue
				}
				walk(c, where+"/"+k)
			}
		case []any:
			for _, c := range n {
				walk(c, where)
			}
		}
	}
	walk(doc, "")
}

func resolves(doc map[string]any, ref string) bool {
	path, found := strings.CutPrefix(ref, "#/")
	if !found {
		return false
	}
	var node any = doc
	for _, part := range strings.Split(path, "/") {
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if node, ok = m[part]; !ok {
			return false
		}
	}
	return true
}

// loadOpenAPI loads the document with kin-openapi.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	raw, err := buildOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOpenAPIIsValid fails when the document breaks OpenAPI 3.1: a member
// a schema or parameter does not have (a description that YAML read as a
// key, such as "2 medium" of "1 high, 2 medium, 3 low"), or nullable, which
// 3.1 replaced by a type that includes "null".
func TestOpenAPIIsValid(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := buildOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, where string, names bool)
	walk = func(v any, where string, names bool) {
		switch n := v.(type) {
		case map[string]any:
			for k, c := range n {
				// The members of properties are names, not keywords.
				if k == "nullable" && !names {
					t.Errorf("%s: nullable is not OpenAPI 3.1; give the type as [T, \"null\"]", where)
				}
				walk(c, where+"/"+k, k == "properties" && !names)
			}
		case []any:
			for i, c := range n {
				walk(c, fmt.Sprintf("%s/%d", where, i), false)
			}
		}
	}
	walk(tree, "#", false)
}

var operationIDForm = regexp.MustCompile(`^[a-z][A-Za-z0-9]*$`)

// TestOpenAPIOperationIDs fails when an operation, of a path or a webhook,
// has no operationId, one that is not camelCase, or one another operation
// has: the generated clients name their methods and types by it. (By
// convention, see base.yaml, an operation of the reference contract has the
// contract's operationId, so code written against a client of the contract
// reads the same.)
func TestOpenAPIOperationIDs(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	seen := map[string]string{}
	check := func(where string, item *openapi3.PathItem) {
		for method, op := range item.Operations() {
			at := method + " " + where
			switch id := op.OperationID; {
			case id == "":
				t.Errorf("%s has no operationId", at)
			case !operationIDForm.MatchString(id):
				t.Errorf("%s: operationId %q is not camelCase", at, id)
			case seen[id] != "":
				t.Errorf("%s: operationId %q is also %s's", at, id, seen[id])
			default:
				seen[id] = at
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		check(path, item)
	}
	for name, item := range doc.Webhooks {
		check("webhook "+name, item)
	}
	if len(seen) == 0 {
		t.Fatal("no operations")
	}
}
