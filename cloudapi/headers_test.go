package cloudapi

import (
	"net/http"
	"testing"
)

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	login := e.do("POST", "/v2/authenticate", "", map[string]any{"email": "partner@example.com", "password": "Secret123"}).want(http.StatusOK)
	denied := e.do("GET", "/v2/me", "", nil).want(http.StatusUnauthorized)
	unmatched := e.do("GET", "/v2/nowhere", "", nil).want(http.StatusNotFound)
	media := e.do("GET", "/v2/media/files/1/snapshot/1/x", "", nil)
	tests := []struct {
		name string
		r    *response
		csp  string
	}{
		{"token answer", login, apiContentPolicy},
		{"error", denied, apiContentPolicy},
		{"unmatched route", unmatched, apiContentPolicy},
		{"media", media, mediaContentPolicy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for h, want := range map[string]string{
				"Cache-Control":           "no-store",
				"X-Content-Type-Options":  "nosniff",
				"Referrer-Policy":         "no-referrer",
				"X-Frame-Options":         "DENY",
				"Content-Security-Policy": tc.csp,
			} {
				if got := tc.r.header.Get(h); got != want {
					t.Errorf("%s: %q, want %q", h, got, want)
				}
			}
		})
	}
}
