package cloudapi

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/alarmmail/smtptest"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// withSMTP sends the API's e-mail to a test SMTP server.
func withSMTP(srv *smtptest.Server) envOption {
	return func(c *configs.Config, _ *Deps) { c.SMTP.Addr = srv.Addr() }
}

var resetTokenLine = regexp.MustCompile(`Reset token: (\S+)`)

// resetToken is the token of a reset e-mail, failing the test without one.
func resetToken(t *testing.T, m smtptest.Mail) string {
	t.Helper()
	found := resetTokenLine.FindStringSubmatch(m.Data)
	if found == nil {
		t.Fatalf("no reset token in %q", m.Data)
	}
	return found[1]
}

func TestForgotPassword(t *testing.T) {
	t.Parallel()
	mail := smtptest.Start(t)
	e := newEnv(t, withSMTP(mail))
	org := e.newOrg(e.partnerToken, "Acme")
	_, oldToken := e.newUser(e.partnerToken, org.id, "ops@acme.example", store.AccessEditor)

	r := e.do("POST", "/v2/forget-password/Ops@Acme.example", "", nil).want(http.StatusOK)
	if r.str("requestId") == "" || len(r.body) != 1 {
		t.Fatalf("answer %s", r.raw)
	}
	m := mail.Await(t, "the reset e-mail", 2*time.Minute)
	mail.Take()
	if len(m.To) != 1 || m.To[0] != "ops@acme.example" || m.From != e.cfg.SMTP.From ||
		!strings.Contains(m.Data, "Subject: [fleetcam] Reset your password") || !strings.Contains(m.Data, e.cfg.PublicURL+"/v2/reset-password/") {
		t.Fatalf("mail %+v", m)
	}
	token := resetToken(t, m)
	// The token is stored hashed only.
	e.db.View(t.Context(), func(tx *store.Tx) error {
		if _, err := tx.InvitedUser(token); err != nil {
			t.Fatalf("the mailed token: %v", err)
		}
		return nil
	})

	// It works once; sessions from before end.
	e.do("POST", "/v2/reset-password/"+token, "", map[string]any{"newPassword": "Better456"}).want(http.StatusOK)
	e.do("POST", "/v2/reset-password/"+token, "", map[string]any{"newPassword": "Other7890"}).wantError(http.StatusNotFound, nameNotFound, "token")
	e.login("ops@acme.example", "Better456")
	e.do("GET", "/v2/me", oldToken, nil).want(http.StatusUnauthorized)
	if e.auditActions("user.passwordReset.request") != 1 || e.auditActions("user.setPassword") != 1 {
		t.Fatal("the reset is not audited")
	}

	// An unknown address gets the same answer and no e-mail.
	r = e.do("POST", "/v2/forget-password/nobody@acme.example", "", nil).want(http.StatusOK)
	if r.str("requestId") == "" || len(r.body) != 1 {
		t.Fatalf("answer %s", r.raw)
	}
	e.api.resets.Wait()
	if got := mail.Take(); len(got) != 0 {
		t.Fatalf("mail for an unknown address: %+v", got)
	}

	// A token expires.
	e.do("POST", "/v2/forget-password/ops@acme.example", "", nil).want(http.StatusOK)
	token = resetToken(t, mail.Await(t, "the second reset e-mail", 2*time.Minute))
	mail.Take()
	e.clock.Advance(e.cfg.Auth.PasswordResetTTL + time.Second)
	e.do("POST", "/v2/reset-password/"+token, "", map[string]any{"newPassword": "Other7890"}).want(http.StatusNotFound)
	e.login("ops@acme.example", "Better456")

	e.do("POST", "/v2/forget-password/not-an-address", "", nil).wantError(http.StatusBadRequest, nameBadRequest, "email must be an e-mail address")
}

// TestForgotPasswordBraked: requests for one address are braked whether
// or not it exists, with the same answer.
func TestForgotPasswordBraked(t *testing.T) {
	t.Parallel()
	mail := smtptest.Start(t)
	e := newEnv(t, withSMTP(mail))
	for _, addr := range []string{"partner@example.com", "nobody@example.com"} {
		for i := 0; i < e.cfg.Auth.Throttle.AccountFreeAttempts; i++ {
			e.do("POST", "/v2/forget-password/"+addr, "", nil).want(http.StatusOK)
		}
		r := e.do("POST", "/v2/forget-password/"+addr, "", nil)
		r.wantError(http.StatusTooManyRequests, nameTooManyRequests, "too many password reset requests")
		if r.header.Get("Retry-After") == "" {
			t.Fatal("no Retry-After")
		}
	}
	e.api.resets.Wait()
	mails := mail.Take()
	if len(mails) != e.cfg.Auth.Throttle.AccountFreeAttempts {
		t.Fatalf("%d e-mails, want %d", len(mails), e.cfg.Auth.Throttle.AccountFreeAttempts)
	}
	// Only the newest token works (the e-mails may arrive in any order).
	worked := 0
	for _, m := range mails {
		if e.do("POST", "/v2/reset-password/"+resetToken(t, m), "", map[string]any{"newPassword": "Better456"}).status == http.StatusOK {
			worked++
		}
	}
	if worked != 1 {
		t.Fatalf("%d of the tokens worked, want 1", worked)
	}
	// Sign-ins of the address are not braked by the reset requests.
	e.login("partner@example.com", "Better456")
}
