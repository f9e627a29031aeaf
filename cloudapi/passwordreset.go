package cloudapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/alarmmail"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// endpointForgotPassword labels the refusals of POST /forget-password in
// the sign-in metrics.
const endpointForgotPassword = "forgot_password"

// resetMailTimeout bounds the SMTP conversation of one reset e-mail.
const resetMailTimeout = 30 * time.Second

// forgotPassword handles POST /forget-password/{email}: when a user has
// that e-mail, a reset token is recorded (hashed, expiring after
// auth.passwordResetTTL, replacing any older one) and e-mailed to it
// through the SMTP server of alarm e-mail; POST /reset-password/{token}
// redeems it once. The answer is the same, and given before the store is
// read, whether or not the address exists; requests for one address are
// braked like sign-ins of one account.
func (s *Server) forgotPassword(c *gin.Context) error {
	email, err := checkEmail("email", c.Param("email"))
	if err != nil {
		return err
	}
	email = store.NormalizeEmail(email)
	if err := s.admitReset(c, email); err != nil {
		return err
	}
	rid := requestID(c)
	s.resets.Add(1)
	go func() {
		defer s.resets.Done()
		s.mailReset(email, rid)
	}()
	return okBody(c, gin.H{"requestId": rid})
}

// admitReset counts a reset request for email; past the free attempts of
// an account (auth.throttle) each must wait: it returns the 429 to answer,
// with Retry-After set.
func (s *Server) admitReset(c *gin.Context, email string) error {
	key := "reset:" + email
	wait, engaged := s.guard.accounts.admit(key)
	if engaged {
		s.lockout(c, "account", key)
	}
	if wait <= 0 {
		return nil
	}
	s.guard.failures.WithLabelValues(endpointForgotPassword, reasonThrottledAccount).Inc()
	secs := int(math.Ceil(wait.Seconds()))
	c.Header("Retry-After", strconv.Itoa(secs))
	return apiErr(http.StatusTooManyRequests, nameTooManyRequests,
		"too many password reset requests for this e-mail address; retry after %d s", secs)
}

// mailReset records a reset token for the user of email, if there is one,
// and e-mails it. It runs after the answer, so failures are only logged.
func (s *Server) mailReset(email, rid string) {
	if s.cfg.SMTP.Addr == "" {
		s.log.Warn("password reset not e-mailed: smtp.addr is empty", "requestId", rid)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), resetMailTimeout)
	defer cancel()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		s.log.Error("password reset token", "requestId", rid, "err", err)
		return
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	var u *store.User
	var expires time.Time
	actor := store.Actor{Source: "api:forgetPassword", RequestID: rid}
	err := s.store.Update(ctx, actor, func(tx *store.Tx) error {
		found, err := tx.UserByEmail(email)
		if err != nil {
			return err
		}
		expires = tx.Now().Add(s.cfg.Auth.PasswordResetTTL)
		u, err = tx.SetResetToken(found.ID, token, expires)
		return err
	})
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			s.log.Error("password reset not recorded", "requestId", rid, "err", err)
		}
		return
	}
	msg := alarmmail.Compose(s.cfg.SMTP.From, u.Email, "[fleetcam] Reset your password", resetMailBody(s.cfg.PublicURL, u.Email, token, expires), s.now())
	if err := alarmmail.Send(s.cfg.SMTP, resetMailTimeout, u.Email, msg); err != nil {
		s.log.Error("password reset e-mail not sent", "requestId", rid, "userId", u.ID, "err", err)
	}
}

// resetMailBody is the text of a reset e-mail.
func resetMailBody(publicURL, email, token string, expires time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "A new password was asked for the fleetcam account %s.\n\n", email)
	fmt.Fprintf(&b, "To choose it, send POST %s/v2/reset-password/%s\nwith the body {\"newPassword\": \"...\"} before %s.\n\n",
		strings.TrimSuffix(publicURL, "/"), token, expires.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "Reset token: %s\n\n", token)
	b.WriteString("The token works once. If you did not ask for a new password, ignore this message: your password stays as it is.\n")
	return b.String()
}
