package cloudapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
)

func TestRateLimitPerCaller(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config, _ *Deps) { c.HTTP.RateLimit, c.HTTP.RateBurst = 2, 3 })
	e.addPartner("Other partner", "other@example.com", "Secret123")
	otherToken := e.login("other@example.com", "Secret123")

	for i := 0; i < 3; i++ {
		e.do("GET", "/v2/me", e.partnerToken, nil).want(http.StatusOK)
	}
	r := e.do("GET", "/v2/me", e.partnerToken, nil).wantError(http.StatusTooManyRequests, nameTooManyRequests, "retry after 1 s")
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q, want 1", r.header.Get("Retry-After"))
	}
	// Another caller has a budget of its own.
	e.do("GET", "/v2/me", otherToken, nil).want(http.StatusOK)

	// Half a second refills one request at 2 per second.
	e.clock.Advance(500 * time.Millisecond)
	e.do("GET", "/v2/me", e.partnerToken, nil).want(http.StatusOK)
	e.do("GET", "/v2/me", e.partnerToken, nil).wantError(http.StatusTooManyRequests, nameTooManyRequests)
}

func TestRateLimitOnLoginByAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config, _ *Deps) { c.HTTP.RateLimit, c.HTTP.RateBurst = 1, 2 })
	// newEnv logged in once already from this address.
	e.do("POST", "/v2/authenticate", "", map[string]any{"email": "partner@example.com", "password": "wrong"}).
		wantError(http.StatusUnauthorized, nameUnauthorized)
	e.do("POST", "/v2/authenticate", "", map[string]any{"email": "partner@example.com", "password": "Secret123"}).
		wantError(http.StatusTooManyRequests, nameTooManyRequests)
	e.clock.Advance(time.Second)
	e.do("POST", "/v2/authenticate", "", map[string]any{"email": "partner@example.com", "password": "Secret123"}).want(http.StatusOK)
}
