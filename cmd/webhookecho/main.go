// Command webhookecho is a webhook receiver for trying fleetcam out: it
// prints every request it receives, one line each, and answers 204. Given
// the organization's webhookSecret it checks each signature as a real
// receiver must, and answers 401 to a request whose signature is wrong.
//
//	go run ./cmd/webhookecho -addr 127.0.0.1:9000 [-secret whsec_…]
//
// fleetcam delivers to such a loopback address only when its operator
// allows private targets (FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS=true) and
// the organization allows plain http URLs (allowInsecureWebhookUrls).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
)

// maxBody bounds a request body; fleetcam's deliveries are far smaller.
const maxBody = 1 << 20

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run serves until ctx ends and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("webhookecho", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9000", "address to listen on (port 0: any free port, printed at start)")
	secret := fs.String("secret", "", "the organization's webhookSecret (whsec_…); when given, requests with a wrong signature get 401")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *secret != "" {
		if _, err := webhooks.Sign(*secret, "check", time.Now(), nil); err != nil {
			fmt.Fprintf(stderr, "webhookecho: -secret: %v\n", err)
			return 2
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "webhookecho: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: &echo{out: stdout, secret: *secret}, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "webhookecho: listening on http://%s/\n", ln.Addr())
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "webhookecho: %v\n", err)
		return 1
	}
	return 0
}

// echo prints each request: time, method, path, webhook-id, the signature
// check when it has a secret, and the body on one line.
type echo struct {
	mu     sync.Mutex
	out    io.Writer
	secret string
}

func (e *echo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	status, check := http.StatusNoContent, ""
	if e.secret != "" {
		check = " signature ok"
		if err := webhooks.Verify(e.secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			status, check = http.StatusUnauthorized, " signature refused: "+err.Error()
		}
	}
	e.mu.Lock()
	fmt.Fprintf(e.out, "%s %s %s webhook-id=%s%s %s\n", time.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path,
		r.Header.Get(webhooks.HeaderID), check, strings.TrimSpace(string(body)))
	e.mu.Unlock()
	w.WriteHeader(status)
}
