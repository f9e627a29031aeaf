package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/configs"
)

// scrape GETs /metrics at addr and returns the status and body.
func scrape(t *testing.T, addr string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestMetricsListener(t *testing.T) {
	t.Parallel()
	shared := startApp(t, testEnv(t.TempDir()))
	status, body := scrape(t, shared.httpAddr.String())
	if status != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("metrics on the API listener without metrics.addr: %d", status)
	}
	// A fleetcam alone labels no series with a node: the dashboards and
	// alerts of configs/monitoring match its series as they are.
	if strings.Contains(body, `node="`) {
		t.Fatal("a fleetcam alone labels its metrics with a node")
	}

	e := testEnv(t.TempDir())
	e["FLEETCAM_METRICS_ADDR"] = "127.0.0.1:0"
	own := startApp(t, e)
	if own.metricsAddr == "" || own.metricsAddr == own.httpAddr.String() {
		t.Fatalf("metrics address %q", own.metricsAddr)
	}
	if status, _ := scrape(t, own.httpAddr.String()); status != http.StatusNotFound {
		t.Fatalf("API listener still serves metrics: %d", status)
	}
	status, body = scrape(t, own.metricsAddr)
	if status != http.StatusOK || !strings.Contains(body, "go_goroutines") || !strings.Contains(body, `fleetcam_http_requests_total{method="GET",route="unmatched",status="404"} 1`) {
		t.Fatalf("metrics listener: %d %.300s", status, body)
	}
}

func TestHTTPServerTimeouts(t *testing.T) {
	t.Parallel()
	a := startApp(t, testEnv(t.TempDir()))
	want := configs.Default().HTTP
	got := a.http
	if got.ReadHeaderTimeout != want.ReadHeaderTimeout || got.ReadTimeout != want.ReadTimeout || got.WriteTimeout != want.WriteTimeout ||
		got.IdleTimeout != want.IdleTimeout || got.MaxHeaderBytes != want.MaxHeaderBytes || got.ReadTimeout <= 0 {
		t.Fatalf("http.Server timeouts %v %v %v %v %d, want those of http.* %+v",
			got.ReadHeaderTimeout, got.ReadTimeout, got.WriteTimeout, got.IdleTimeout, got.MaxHeaderBytes, want)
	}
}
