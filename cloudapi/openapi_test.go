package cloudapi

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// TestOpenAPICoversRoutes fails when a route is missing from the OpenAPI
// document or the document names an operation that is not routed.
func TestOpenAPICoversRoutes(t *testing.T) {
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
