package cloudapi

import (
	"net/http"
	"strings"
	"testing"
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
