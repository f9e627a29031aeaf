package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks signing. Every delivery carries
//
//	webhook-id:        the message id, the same on every attempt and redelivery
//	webhook-timestamp: the attempt's time in Unix seconds
//	webhook-signature: "v1,<base64 HMAC-SHA256(key, id + "." + timestamp + "." + body)>"
//
// where key is the organization's secret without its "whsec_" prefix,
// base64-decoded. Several signatures may be given, separated by spaces: for
// a while after a rotation deliveries are signed with the new and the
// previous secret.

// Header names of a signed delivery.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// HeaderSurfsightSignature carries the signature of the public contract's
// subscriptions: see SurfsightSignature.
const HeaderSurfsightSignature = "X-Surfsight-Signature"

// SecretPrefix starts every webhook secret.
const SecretPrefix = "whsec_"

// Verification errors.
var (
	// ErrNoSignature means the delivery lacks a webhook header.
	ErrNoSignature = errors.New("webhooks: missing webhook-id, webhook-timestamp or webhook-signature header")
	// ErrBadSignature means no signature matches the body and the secret.
	ErrBadSignature = errors.New("webhooks: no matching signature")
	// ErrStale means the timestamp is too far from the receiver's clock (replay protection).
	ErrStale = errors.New("webhooks: timestamp outside the tolerance")
	// ErrBadSecret means the secret is not whsec_ followed by base64.
	ErrBadSecret = errors.New("webhooks: malformed secret")
)

// NewSalt returns fresh random salt for an organization's secret.
func NewSalt() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

// Secret derives an organization's webhook secret from the server key and
// the organization's stored salt. Only the salt is stored; rotating the salt
// rotates the secret.
func Secret(key []byte, orgID int64, salt []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("fleetcam webhook secret\x00" + strconv.FormatInt(orgID, 10) + "\x00"))
	m.Write(salt)
	return SecretPrefix + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SSOSecret derives an organization's ssoSecret from the server key and the
// organization's stored SSO salt; only the salt is stored. The API shows it
// once, when a partner creates the organization; it signs the SSO JWTs that
// enter the organization, and fleetcam signs the organization's deliveries
// with it (SurfsightSignature). An organization without a salt has none.
func SSOSecret(key []byte, orgID int64, salt []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("fleetcam sso secret\x00" + strconv.FormatInt(orgID, 10) + "\x00"))
	m.Write(salt)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// SurfsightSignature is the X-Surfsight-Signature of a delivery, as the
// public contract defines it: the lowercase hex HMAC-SHA512, keyed with the
// organization's ssoSecret (its text as bytes), of the body exactly as sent
// followed by the URL exactly as configured (the string saved in the webhook
// settings or the device subscription, to which the delivery is posted).
// In the contract's words: createHmac("sha512", ssoSecret)
// .update(body + url).digest("hex").
func SurfsightSignature(ssoSecret string, body []byte, url string) string {
	m := hmac.New(sha512.New, []byte(ssoSecret))
	m.Write(body)
	m.Write([]byte(url))
	return hex.EncodeToString(m.Sum(nil))
}

func secretKey(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, ErrBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) == 0 {
		return nil, ErrBadSecret
	}
	return key, nil
}

// Sign returns the signature of one delivery ("v1,<base64>") under secret.
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body)), nil
}

func mac(key []byte, id string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", id, ts)
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a received delivery the way a receiver should: the headers
// are present, the timestamp is within tolerance of now, and one of the
// signatures is the HMAC of the body under secret. body must be the raw
// request body, before any JSON decoding.
//
//	func handle(w http.ResponseWriter, r *http.Request) {
//		body, _ := io.ReadAll(r.Body)
//		if err := webhooks.Verify(secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
//			http.Error(w, "bad signature", http.StatusUnauthorized)
//			return
//		}
//		// Deduplicate on r.Header.Get("webhook-id"), then process body.
//		w.WriteHeader(http.StatusNoContent)
//	}
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := secretKey(secret)
	if err != nil {
		return err
	}
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrNoSignature
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrNoSignature
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	want := mac(key, id, ts, body)
	for _, s := range strings.Fields(sigs) {
		v, sig, ok := strings.Cut(s, ",")
		if !ok || v != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrBadSignature
}
