package cloudapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"
)

// tryLogin posts an e-mail and password, with extra headers.
func (e *testEnv) tryLogin(email, password string, headers ...string) *response {
	e.t.Helper()
	raw, _ := json.Marshal(map[string]any{"email": email, "password": password})
	req, err := http.NewRequest("POST", e.srv.URL+"/v2/authenticate", bytes.NewReader(raw))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return e.send(req)
}

// wantThrottled fails the test unless r is the sign-in throttle's 429
// asking to wait secs seconds.
func (r *response) wantThrottled(secs int) *response {
	r.t.Helper()
	r.wantError(http.StatusTooManyRequests, nameTooManyRequests, fmt.Sprintf("too many failed sign-in attempts; retry after %d s", secs))
	if got := r.header.Get("Retry-After"); got != fmt.Sprint(secs) {
		r.t.Fatalf("Retry-After %q, want %d", got, secs)
	}
	return r
}

// metric returns the line of the exposition that starts with series, or "".
func (e *testEnv) metric(series string) string {
	e.t.Helper()
	body := string(e.do("GET", "/metrics", "", nil).want(http.StatusOK).raw)
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, series+" ") {
			return line
		}
	}
	return ""
}

// throttleAudit returns the audit entries of engaged sign-in throttles.
func (e *testEnv) throttleAudit() []store.AuditEntry {
	e.t.Helper()
	entries, _, err := e.db.AuditLog(e.t.Context(), store.AuditFilter{Action: "auth.throttle"}, store.Page{})
	if err != nil {
		e.t.Fatal(err)
	}
	return entries
}

func TestLoginThrottlePerAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, email := range []string{"partner@example.com", "nobody@example.com"} {
		for i := range 5 {
			e.tryLogin(email, fmt.Sprintf("Wrong%d", i)).wantError(http.StatusUnauthorized, nameUnauthorized, "e-mail or password is wrong")
		}
		// Refused before any password is checked, the right one included,
		// and the same for an e-mail that exists and one that does not.
		e.tryLogin(email, "Secret123").wantThrottled(1)
	}
	// The e-mail is the account however it is written.
	e.tryLogin(" PARTNER@example.com", "Secret123").wantThrottled(1)
	if got := e.metric(`fleetcam_auth_failures_total{endpoint="authenticate",reason="throttled_account"}`); !strings.HasSuffix(got, " 3") {
		t.Fatalf("throttled attempts counted as %q", got)
	}
	if got := e.metric(`fleetcam_auth_failures_total{endpoint="authenticate",reason="bad_credentials"}`); !strings.HasSuffix(got, " 10") {
		t.Fatalf("bad credentials counted as %q", got)
	}

	// Each attempt past the free ones doubles the wait.
	e.clock.Advance(time.Second)
	e.tryLogin("partner@example.com", "Wrong").wantError(http.StatusUnauthorized, nameUnauthorized)
	e.tryLogin("partner@example.com", "Secret123").wantThrottled(2)
	e.clock.Advance(2 * time.Second)
	e.tryLogin("partner@example.com", "Wrong").wantError(http.StatusUnauthorized, nameUnauthorized)
	e.tryLogin("partner@example.com", "Secret123").wantThrottled(4)

	// A success frees the account: five free attempts again.
	e.clock.Advance(4 * time.Second)
	e.tryLogin("partner@example.com", "Secret123").want(http.StatusOK)
	for range 5 {
		e.tryLogin("partner@example.com", "Wrong").wantError(http.StatusUnauthorized, nameUnauthorized)
	}
	e.tryLogin("partner@example.com", "Secret123").wantThrottled(1)

	// One audit entry and one lockout each time the brake engages, not one per refusal.
	entries := e.throttleAudit()
	if len(entries) != 3 {
		t.Fatalf("%d throttle audit entries, want 3: %+v", len(entries), entries)
	}
	for _, a := range entries {
		if a.EntityType != "account" || a.Source != "system" {
			t.Fatalf("throttle audit entry %+v", a)
		}
		// The partner reads the lockouts of its users; nobody's are the operator's.
		switch {
		case a.EntityID == "email:partner@example.com" && a.PartnerID == e.partnerID:
		case a.EntityID == "email:nobody@example.com" && a.PartnerID == 0 && a.OrganizationID == 0:
		default:
			t.Fatalf("throttle audit entry %+v", a)
		}
	}
	if got := e.metric(`fleetcam_auth_lockouts_total{scope="account"}`); !strings.HasSuffix(got, " 3") {
		t.Fatalf("lockouts counted as %q", got)
	}

	// The brake forgets an account that stays quiet.
	e.clock.Advance(e.cfg.Auth.Throttle.MaxBackoff + time.Minute)
	for range 5 {
		e.tryLogin("partner@example.com", "Wrong").wantError(http.StatusUnauthorized, nameUnauthorized)
	}
}

func TestLoginThrottlePerAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A guesser spreading its attempts over e-mails, and naming other
	// client addresses, is still one address.
	for i := range 20 {
		e.tryLogin(fmt.Sprintf("guess%d@example.com", i), "Wrong1", "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i)).
			wantError(http.StatusUnauthorized, nameUnauthorized)
	}
	e.tryLogin("partner@example.com", "Secret123", "X-Forwarded-For", "198.51.100.99", "X-Real-IP", "198.51.100.98").wantThrottled(1)
	if got := e.metric(`fleetcam_auth_failures_total{endpoint="authenticate",reason="throttled_address"}`); !strings.HasSuffix(got, " 1") {
		t.Fatalf("throttled attempts counted as %q", got)
	}
	entries := e.throttleAudit()
	if len(entries) != 1 || entries[0].EntityType != "address" || entries[0].EntityID != "127.0.0.1" {
		t.Fatalf("throttle audit entries %+v", entries)
	}
	// Successes do not count against an address.
	e.clock.Advance(time.Second)
	for range 30 {
		e.tryLogin("partner@example.com", "Secret123").want(http.StatusOK)
	}
}

func TestLoginThrottleBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config, _ *Deps) { c.HTTP.TrustedProxies = []string{"127.0.0.1/32"} })
	for i := range 20 {
		e.tryLogin(fmt.Sprintf("guess%d@example.com", i), "Wrong1", "X-Forwarded-For", "198.51.100.7").
			wantError(http.StatusUnauthorized, nameUnauthorized)
	}
	e.tryLogin("partner@example.com", "Secret123", "X-Forwarded-For", "198.51.100.7").wantThrottled(1)
	// The proxy's other clients are not braked.
	e.tryLogin("partner@example.com", "Secret123", "X-Forwarded-For", "203.0.113.5").want(http.StatusOK)
	if a := e.throttleAudit(); len(a) != 1 || a[0].EntityID != "198.51.100.7" {
		t.Fatalf("throttle audit entries %+v", a)
	}
}

// holdPasswordCores takes every core of the password checker until release.
func (e *testEnv) holdPasswordCores() (release func()) {
	slots := e.api.passwords.slots
	for range cap(slots) {
		slots <- struct{}{}
	}
	return func() {
		for range cap(slots) {
			<-slots
		}
	}
}

func TestPasswordChecksAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config, _ *Deps) { c.Auth.Throttle.PasswordWait = 20 * time.Millisecond })
	if n, cores := cap(e.api.passwords.slots), runtime.GOMAXPROCS(0); n != cores {
		t.Fatalf("%d passwords are checked at once, want one per core (%d)", n, cores)
	}
	// Logins, invitations and new users with a password each wait for a core.
	release := e.holdPasswordCores()
	for range 8 {
		r := e.tryLogin("partner@example.com", "Secret123").wantError(http.StatusTooManyRequests, nameTooManyRequests, "busy checking other passwords")
		if r.header.Get("Retry-After") != "1" {
			t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
		}
	}
	e.do("POST", "/v2/partners/"+itoa(e.partnerID)+"/contacts", e.partnerToken,
		map[string]any{"email": "new@partner.example", "password": "Secret123"}).wantError(http.StatusTooManyRequests, nameTooManyRequests, "busy")
	if got := e.metric(`fleetcam_auth_failures_total{endpoint="authenticate",reason="busy"}`); !strings.HasSuffix(got, " 8") {
		t.Fatalf("busy refusals counted as %q", got)
	}
	// Attempts refused for want of a core were never checked: they use up no free attempts.
	release()
	e.tryLogin("partner@example.com", "Secret123").want(http.StatusOK)
	if a := e.throttleAudit(); len(a) != 0 {
		t.Fatalf("throttle engaged by unchecked attempts: %+v", a)
	}
}

func TestResetPasswordChecksTokenFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *configs.Config, _ *Deps) { c.Auth.Throttle.PasswordWait = 20 * time.Millisecond })
	invite := e.do("POST", "/v2/partners/"+itoa(e.partnerID)+"/contacts", e.partnerToken,
		map[string]any{"email": "new@partner.example"}).want(http.StatusOK).str("data.invitationToken")
	t.Cleanup(e.holdPasswordCores())
	// No password is hashed for an unknown token, valid password or not:
	// with every core taken, hashing first would answer 429.
	for i := range 10 {
		for _, pw := range []string{"Valid1234", "weak"} {
			e.do("POST", "/v2/reset-password/guess"+itoa(int64(i)), "", map[string]any{"newPassword": pw}).
				wantError(http.StatusNotFound, nameNotFound, "invitation token not found")
		}
	}
	if got := e.metric(`fleetcam_auth_failures_total{endpoint="reset_password",reason="bad_credentials"}`); !strings.HasSuffix(got, " 20") {
		t.Fatalf("wrong tokens counted as %q", got)
	}
	// Guessing tokens is braked like passwords, the right token included.
	e.do("POST", "/v2/reset-password/"+invite, "", map[string]any{"newPassword": "Valid1234"}).wantThrottled(1)
	e.clock.Advance(time.Second)
	// A right token with a weak password is told what the rule is.
	e.do("POST", "/v2/reset-password/"+invite, "", map[string]any{"newPassword": "weak"}).
		wantError(http.StatusBadRequest, nameBadRequest, "newPassword must be at least 8 characters")
}

func TestSSOThrottleAndReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	other := e.newOrg(e.partnerToken, "Other")
	now := e.clock.Now()
	for range 5 {
		e.do("GET", "/v2/organizations/sso", ssoJWT(t, jwt.SigningMethodHS256, "guessed-secret", ssoClaimsAt(org.id, now)), nil).
			wantError(http.StatusUnauthorized, nameUnauthorized, "SSO token is not valid")
	}
	// The organization is braked, the right secret included; another is not.
	good := ssoJWT(t, jwt.SigningMethodHS256, org.secret, ssoClaimsAt(org.id, now))
	e.do("GET", "/v2/organizations/sso", good, nil).wantThrottled(1)
	e.do("GET", "/v2/organizations/sso", ssoJWT(t, jwt.SigningMethodHS256, other.secret, ssoClaimsAt(other.id, now)), nil).want(http.StatusOK)
	if a := e.throttleAudit(); len(a) != 1 || a[0].EntityID != "organization:"+itoa(org.id) {
		t.Fatalf("throttle audit entries %+v", a)
	}

	// Each JWT is exchanged once, for as long as it would be valid.
	e.clock.Advance(time.Second)
	e.do("GET", "/v2/organizations/sso", good, nil).want(http.StatusOK)
	e.do("GET", "/v2/organizations/sso", good, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "already used")
	e.clock.Advance(10 * time.Minute)
	e.do("GET", "/v2/organizations/sso", good, nil).wantError(http.StatusUnauthorized, nameUnauthorized, "already used")
	// A jti names the token: reusing it with another timestamp is a replay too.
	withID := func(ts time.Time) string {
		cl := ssoClaimsAt(org.id, ts)
		cl["jti"] = "login-42"
		return ssoJWT(t, jwt.SigningMethodHS256, org.secret, cl)
	}
	e.do("GET", "/v2/organizations/sso", withID(e.clock.Now()), nil).want(http.StatusOK)
	e.do("GET", "/v2/organizations/sso", withID(e.clock.Now().Add(-time.Second)), nil).wantError(http.StatusUnauthorized, nameUnauthorized, "already used")
	if got := e.metric(`fleetcam_auth_failures_total{endpoint="sso",reason="replayed"}`); !strings.HasSuffix(got, " 3") {
		t.Fatalf("replays counted as %q", got)
	}
}

func TestAttemptThrottleMemoryIsBounded(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	th := newAttemptThrottle(1, time.Second, time.Minute, 100, func() time.Time { return now })
	th.admit("victim")
	for i := range 1000 {
		th.admit(fmt.Sprint("rotated", i))
		if i%50 == 0 {
			th.admit("victim") // recently seen: kept
		}
	}
	if n := th.len(); n != 100 {
		t.Fatalf("%d keys remembered, want the bound of 100", n)
	}
	if wait, _ := th.admit("victim"); wait == 0 {
		t.Fatal("a key seen recently was forgotten")
	}

	used := newUsedTokens(10)
	for i := range 100 {
		if !used.use(fmt.Sprint("token", i), now.Add(time.Duration(i)*time.Second), now) {
			t.Fatalf("token %d refused", i)
		}
	}
	if len(used.until) != 10 || used.use("token99", now.Add(time.Hour), now) {
		t.Fatalf("used tokens: %d kept, latest forgotten", len(used.until))
	}
}

func TestClientAddressOfIPv6IsItsNetwork(t *testing.T) {
	t.Parallel()
	tests := []struct{ remote, want string }{
		{"198.51.100.7:5000", "198.51.100.7"},
		{"[::ffff:198.51.100.7]:5000", "198.51.100.7"},
		{"[2001:db8:1:2:aaaa::1]:5000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]:5000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:5000", "2001:db8:1:3::/64"},
	}
	for _, tc := range tests {
		t.Run(tc.remote, func(t *testing.T) {
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			c.Request = httptest.NewRequest("POST", "/v2/authenticate", nil)
			c.Request.RemoteAddr = tc.remote
			if got := clientAddress(c); got != tc.want {
				t.Fatalf("clientAddress %q, want %q", got, tc.want)
			}
		})
	}
}
