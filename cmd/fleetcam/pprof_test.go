package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestPprofListenerIsOptIn(t *testing.T) {
	t.Parallel()
	off := startApp(t, testEnv(t.TempDir()))
	if off.pprof != nil || off.pprofAddr != "" {
		t.Fatalf("pprof listener without debug.pprofAddr: %q", off.pprofAddr)
	}
	resp, err := http.Get("http://" + off.httpAddr.String() + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("API listener serves profiles: %d", resp.StatusCode)
	}

	e := testEnv(t.TempDir())
	e["FLEETCAM_PPROF_ADDR"] = "127.0.0.1:0"
	on := startApp(t, e)
	if on.pprofAddr == "" || on.pprofAddr == on.httpAddr.String() {
		t.Fatalf("pprof address %q", on.pprofAddr)
	}
	resp, err = http.Get("http://" + on.pprofAddr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Fatalf("goroutine profile: %d %.200s", resp.StatusCode, body)
	}
}
