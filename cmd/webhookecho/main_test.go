package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
)

// start runs webhookecho with args on a free port and returns its URL and
// its output, line by line.
func start(t *testing.T, args ...string) (string, <-chan string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), w, io.Discard); w.Close() }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("webhookecho exited with %d", code)
		}
	})
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, r)
	}()
	first := next(t, lines)
	url, ok := strings.CutPrefix(first, "webhookecho: listening on ")
	if !ok {
		t.Fatalf("first line %q, want the address", first)
	}
	return url, lines
}

// next returns the next line webhookecho prints.
func next(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("webhookecho ended its output")
		}
		return l
	case <-time.After(2 * time.Minute):
		t.Fatal("webhookecho printed no line in 2 minutes")
	}
	return ""
}

// post sends body to url with the headers of a delivery signed by secret
// (unsigned when secret is empty) and returns the status.
func post(t *testing.T, url, secret, body string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"events", strings.NewReader(body))
	if secret != "" {
		now := time.Now()
		sig, err := webhooks.Sign(secret, "msg_1", now, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(webhooks.HeaderID, "msg_1")
		req.Header.Set(webhooks.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(webhooks.HeaderSignature, sig)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestPrintsEveryWebhook(t *testing.T) {
	url, lines := start(t)
	if got := post(t, url, "", `{"eventType":"tailgating"}`+"\n"); got != http.StatusNoContent {
		t.Fatalf("status %d, want 204", got)
	}
	if got := next(t, lines); !strings.HasSuffix(got, ` POST /events webhook-id= {"eventType":"tailgating"}`) {
		t.Fatalf("printed %q", got)
	}
}

func TestChecksSignaturesWithTheSecret(t *testing.T) {
	secret := webhooks.Secret([]byte("key"), 1, []byte("salt"))
	url, lines := start(t, "-secret", secret)
	if got := post(t, url, secret, `{"eventType":"tailgating"}`); got != http.StatusNoContent {
		t.Fatalf("signed: status %d, want 204", got)
	}
	if got := next(t, lines); !strings.Contains(got, `webhook-id=msg_1 signature ok {"eventType":"tailgating"}`) {
		t.Fatalf("signed: printed %q", got)
	}
	other := webhooks.Secret([]byte("key"), 2, []byte("salt"))
	if got := post(t, url, other, `{}`); got != http.StatusUnauthorized {
		t.Fatalf("signed with another secret: status %d, want 401", got)
	}
	if got := next(t, lines); !strings.Contains(got, "signature refused: "+webhooks.ErrBadSignature.Error()) {
		t.Fatalf("signed with another secret: printed %q", got)
	}
}

func TestRefusesAMalformedSecret(t *testing.T) {
	if code := run(context.Background(), []string{"-secret", "not-a-secret"}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
}
