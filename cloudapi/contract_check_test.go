package cloudapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestContractCheck holds the contract check itself to its rules: a wrong
// member, an undeclared 2xx and a status without a shared response that is
// not the error envelope are violations; an undeclared error status with the
// shared error body is not.
func TestContractCheck(t *testing.T) {
	t.Parallel()
	check := func(method, path string, status int, body string) (string, error) {
		req, err := http.NewRequest(method, "http://127.0.0.1/v2"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return checkContract(req, status, http.Header{"Content-Type": {"application/json"}}, []byte(body))
	}
	envelope := `{"error":"NotFoundError","message":"organization not found","requestId":"r"}`
	tests := []struct {
		name, method, path string
		status             int
		body               string
		violation          string // a fragment of the violation; empty for none
	}{
		{"wrong member type", "POST", "/devices/357660100000017/virtual-event", 200, `{"data":{"eventId":7},"requestId":"r"}`, "eventId"},
		{"undeclared 2xx", "DELETE", "/drivers", 200, `{"data":{},"requestId":"r"}`, "status 200 is not declared"},
		{"undeclared error with the shared body", "PATCH", "/organizations/1", 404, envelope, ""},
		{"undeclared error without it", "PATCH", "/organizations/1", 404, `{"message":"x"}`, "error"},
		{"no shared response, envelope", "POST", "/organizations", 413, `{"error":"PayloadTooLargeError","message":"too large","requestId":"r"}`, ""},
		{"no shared response, no envelope", "POST", "/organizations", 413, `{"oops":1}`, "error"},
		{"a 204 without a body", "DELETE", "/drivers", 204, ``, ""},
	}
	for _, tc := range tests {
		op, err := check(tc.method, tc.path, tc.status, tc.body)
		if op == "" {
			t.Errorf("%s: %s %s not found in the contract", tc.name, tc.method, tc.path)
			continue
		}
		switch {
		case tc.violation == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.violation != "" && (err == nil || !strings.Contains(err.Error(), tc.violation) || !strings.Contains(err.Error(), op)):
			t.Errorf("%s: violation %v, want one naming %s and %q", tc.name, err, op, tc.violation)
		}
	}
	if op, err := check("GET", "/healthz", 200, `{}`); op != "" || err != nil {
		t.Errorf("a route the contract does not have was checked: %q %v", op, err)
	}
}

// TestDeviationsNameEveryOperation: a deviation names every operation of the
// reference contract whose 2xx answer shows the schema it amends, and no
// other, so that one object is answered, and documented, alike wherever it
// is shown. The contract is read as published, before any amendment.
func TestDeviationsNameEveryOperation(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromFile("testdata/reference/surfsight-openapi-gateway.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deviations {
		parts := strings.SplitN(strings.TrimPrefix(d.pointer, "/"), "/", 4)
		if len(parts) < 3 {
			t.Errorf("deviation at %s: not a pointer into components", d.pointer)
			continue
		}
		component := "#/" + strings.Join(parts[:3], "/")
		want := answersShowing(doc, component)
		if got := slices.Sorted(slices.Values(d.operations)); !slices.Equal(got, want) {
			t.Errorf("deviation at %s names %q; the operations whose answers show %s are %q", d.pointer, got, component, want)
		}
	}
}

// answersShowing lists, sorted, the operations of doc with a 2xx answer that
// is, or whose schema reaches, the component ref ("#/components/…").
func answersShowing(doc *openapi3.T, ref string) []string {
	var ops []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for code, r := range op.Responses.Map() {
				if !strings.HasPrefix(code, "2") {
					continue
				}
				shows := r.Ref == ref
				if r.Value != nil {
					for _, mt := range r.Value.Content {
						shows = shows || schemaReaches(mt.Schema, ref, map[*openapi3.Schema]bool{})
					}
				}
				if shows {
					ops = append(ops, method+" "+path)
					break
				}
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// schemaReaches reports whether s is, or holds anywhere within it, a
// reference to ref; seen holds the schemas already walked.
func schemaReaches(s *openapi3.SchemaRef, ref string, seen map[*openapi3.Schema]bool) bool {
	if s == nil {
		return false
	}
	if s.Ref == ref {
		return true
	}
	v := s.Value
	if v == nil || seen[v] {
		return false
	}
	seen[v] = true
	subs := []*openapi3.SchemaRef{v.Items, v.Not, v.AdditionalProperties.Schema}
	for _, p := range v.Properties {
		subs = append(subs, p)
	}
	for _, list := range []openapi3.SchemaRefs{v.AllOf, v.AnyOf, v.OneOf} {
		subs = append(subs, list...)
	}
	return slices.ContainsFunc(subs, func(sub *openapi3.SchemaRef) bool { return schemaReaches(sub, ref, seen) })
}
