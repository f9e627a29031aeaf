package cloudapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
)

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name   string
		body   any
		status int
		errMsg string
	}{
		{"right password", map[string]any{"email": "Partner@Example.com", "password": "Secret123"}, 200, ""},
		{"wrong password", map[string]any{"email": "partner@example.com", "password": "nope"}, 401, "wrong"},
		{"unknown email", map[string]any{"email": "who@example.com", "password": "Secret123"}, 401, "wrong"},
		{"missing password", map[string]any{"email": "partner@example.com"}, 400, "password is required"},
		{"unknown field", map[string]any{"email": "a@b.cd", "password": "x", "role": "admin"}, 400, "role is not a known field"},
		{"wrong type", map[string]any{"email": 7, "password": "x"}, 400, "email must be a string"},
		{"malformed JSON", `{"email": "a@b.cd",`, 400, "JSON"},
		{"empty body", ``, 400, "JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", "/v2/authenticate", "", tc.body)
			if tc.status == 200 {
				r.want(200)
				if r.str("data.token") == "" || r.id("data.partnerId") != e.partnerID {
					t.Fatalf("unexpected body %s", r.raw)
				}
				return
			}
			name := map[int]string{400: nameBadRequest, 401: nameUnauthorized}[tc.status]
			r.wantError(tc.status, name, tc.errMsg)
		})
	}
}

func TestTokenChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := newEnv(t, func(c *configs.Config, d *Deps) { c.Cloud = "eu" })
	euToken := other.partnerToken

	forged := e.partnerToken[:len(e.partnerToken)-4] + "AAAA"
	tests := []struct {
		name   string
		header string
		msg    string
	}{
		{"no token", "", "bearer token"},
		{"bad signature", forged, "not valid"},
		{"garbage", "not.a.jwt", "not valid"},
		{"other cloud", euToken, "eu"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := tc.msg
			if tc.name == "other cloud" {
				msg = "not valid in the us cloud"
			}
			e.do("GET", "/v2/me", tc.header, nil).wantError(http.StatusUnauthorized, nameUnauthorized, msg)
		})
	}
	t.Run("expired", func(t *testing.T) {
		tok := e.login("partner@example.com", "Secret123")
		e.do("GET", "/v2/me", tok, nil).want(http.StatusOK)
		e.clock.Advance(e.cfg.Auth.UserTokenTTL + time.Second)
		e.do("GET", "/v2/me", tok, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "expired")
	})
}

func TestMe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/v2/me", e.partnerToken, nil).want(http.StatusOK)
	if r.str("data.entity") != "partner" || r.str("data.me.email") != "partner@example.com" ||
		r.id("data.me.partnerId") != e.partnerID || r.str("data.me.partnerName") != "First partner" {
		t.Fatalf("unexpected /me: %s", r.raw)
	}
	if r.header.Get("X-Request-Id") == "" || r.str("requestId") != r.header.Get("X-Request-Id") {
		t.Fatalf("request id header %q body %q", r.header.Get("X-Request-Id"), r.str("requestId"))
	}
}

func TestUnknownRouteIsJSON404(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("GET", "/v2/nothing-here", e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound, "route")
}
