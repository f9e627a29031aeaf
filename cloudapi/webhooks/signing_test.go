package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestSecretIsDerivedAndStable(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	a := Secret(key, 7, []byte("salt"))
	if a != Secret(key, 7, []byte("salt")) || !strings.HasPrefix(a, SecretPrefix) {
		t.Fatalf("secret %q not stable or not whsec_", a)
	}
	for _, other := range []string{Secret(key, 8, []byte("salt")), Secret(key, 7, []byte("pepper")), Secret([]byte("another key of 32 bytes........."), 7, []byte("salt"))} {
		if other == a {
			t.Fatal("different inputs derived the same secret")
		}
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, SecretPrefix))
	if err != nil || len(raw) != 32 {
		t.Fatalf("secret body: %v, %d bytes", err, len(raw))
	}
}

// TestSignatureMatchesStandardWebhooks checks Sign against the construction
// written out by hand, as any Standard Webhooks library computes it.
func TestSignatureMatchesStandardWebhooks(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a 32 byte key for the test case!"))
	ts := time.Unix(1700000000, 0)
	body := []byte(`{"type":"event","data":{"id":1}}`)
	got, err := Sign(secret, "msg_abc", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, []byte("a 32 byte key for the test case!"))
	m.Write([]byte("msg_abc.1700000000." + string(body)))
	if want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	secret := Secret([]byte("0123456789abcdef0123456789abcdef"), 1, []byte("s"))
	other := Secret([]byte("0123456789abcdef0123456789abcdef"), 2, []byte("s"))
	now := time.Unix(1700000000, 0)
	body := []byte(`{"type":"gps","data":{"id":"a1"}}`)
	headers := func(id string, ts time.Time, sig string) http.Header {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, fmt.Sprint(ts.Unix()))
		h.Set(HeaderSignature, sig)
		return h
	}
	good, _ := Sign(secret, "msg_1", now, body)
	wrong, _ := Sign(other, "msg_1", now, body)
	tests := []struct {
		name   string
		secret string
		h      http.Header
		body   []byte
		want   error
	}{
		{"valid", secret, headers("msg_1", now, good), body, nil},
		{"valid among several", secret, headers("msg_1", now, wrong+" "+good), body, nil},
		{"other secret", secret, headers("msg_1", now, wrong), body, ErrBadSignature},
		{"body changed", secret, headers("msg_1", now, good), []byte(`{"type":"gps","data":{"id":"a2"}}`), ErrBadSignature},
		{"id changed", secret, headers("msg_2", now, good), body, ErrBadSignature},
		{"replayed later", secret, headers("msg_1", now.Add(-10*time.Minute), good), body, ErrStale},
		{"missing signature", secret, headers("msg_1", now, ""), body, ErrNoSignature},
		{"unknown version", secret, headers("msg_1", now, "v2,"+strings.TrimPrefix(good, "v1,")), body, ErrBadSignature},
		{"malformed secret", "not-a-secret", headers("msg_1", now, good), body, ErrBadSecret},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(tc.secret, tc.h, tc.body, now, 5*time.Minute); err != tc.want {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

// ExampleVerify shows a receiver checking a delivery.
func ExampleVerify() {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("the organization's 32-byte key.."))
	body := []byte(`{"type":"event","data":{"id":42,"serialNumber":"357660101000198","eventType":"accident"}}`)
	sent := time.Unix(1767225600, 0)
	sig, _ := Sign(secret, "msg_2j4k6m", sent, body)

	h := http.Header{}
	h.Set("webhook-id", "msg_2j4k6m")
	h.Set("webhook-timestamp", fmt.Sprint(sent.Unix()))
	h.Set("webhook-signature", sig)
	fmt.Println(Verify(secret, h, body, sent.Add(3*time.Second), 5*time.Minute))
	fmt.Println(Verify(secret, h, []byte(`{"forged":true}`), sent, 5*time.Minute))
	// Output:
	// <nil>
	// webhooks: no matching signature
}
