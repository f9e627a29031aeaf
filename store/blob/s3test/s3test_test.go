package s3test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The build script of the Makefile (make test-deps-versitygw) builds
// tools/s3gateway under the name Binary looks for: the same digest of the
// same files.
func TestBuildScriptNamesTheBuildAsBinaryDoes(t *testing.T) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Fatal(err)
	}
	src, err := findGateway()
	if err != nil {
		t.Fatal(err)
	}
	key, err := gatewayKey(src)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	bin := filepath.Join(cache, "fleetcam", "s3gateway-"+key, "s3gateway")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	// A binary already there is what the script prints, without building.
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("../../../.ci/versitygw")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "GO=/nonexistent/go")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf(".ci/versitygw: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != bin {
		t.Fatalf(".ci/versitygw printed %s, want %s", got, bin)
	}
	t.Setenv(binEnv, "")
	t.Setenv("XDG_CACHE_HOME", cache)
	if got, err := Binary(); err != nil || got != bin {
		t.Fatalf("Binary() = %s, %v; want %s", got, err, bin)
	}
}

// The gateway's module pins the versitygw the tests run.
func TestGatewayPinsVersitygw(t *testing.T) {
	raw, err := os.ReadFile("../../../tools/s3gateway/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^require github\.com/versity/versitygw v\d+\.\d+\.\d+$`).Match(raw) {
		t.Fatalf("tools/s3gateway/go.mod does not require one release of versitygw:\n%s", raw)
	}
}

// A change to any file of the gateway's module names another build.
func TestKeyFollowsEveryFile(t *testing.T) {
	src := t.TempDir()
	for _, name := range []string{"go.mod", "go.sum", "main.go"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base, err := gatewayKey(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go.mod", "go.sum", "main.go"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(name+" changed"), 0o644); err != nil {
			t.Fatal(err)
		}
		if k, err := gatewayKey(src); err != nil || k == base {
			t.Fatalf("after %s changed the key is %s (%v), as before", name, k, err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A missing binary, named by FLEETCAM_VERSITYGW_BIN or not built yet, is an
// error that says what is missing and how to build it.
func TestBinaryNamesWhatIsMissing(t *testing.T) {
	t.Setenv(binEnv, "/nonexistent/versitygw")
	if _, err := Binary(); err == nil || !strings.Contains(err.Error(), binEnv+"=/nonexistent/versitygw") {
		t.Fatalf("got %v", err)
	}
	t.Setenv(binEnv, "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if _, err := Binary(); err == nil || !strings.Contains(err.Error(), "make test-deps-versitygw") {
		t.Fatalf("got %v", err)
	}
	t.Chdir(t.TempDir())
	if _, err := Binary(); err == nil || !strings.Contains(err.Error(), "no tools/s3gateway") {
		t.Fatalf("outside the repository: got %v", err)
	}
}

// The server's ports are free, distinct and below the ephemeral range, so
// that no connection opened while the gateway starts can take one of them.
func TestFreePortsBelowEphemeralRange(t *testing.T) {
	ports, err := freePorts(10)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < 10000 || p >= ephemeralFloor() || seen[p] {
			t.Fatalf("ports %v: %d is below 10000, in the ephemeral range from %d or twice", ports, p, ephemeralFloor())
		}
		seen[p] = true
	}
	if len(ports) != 10 {
		t.Fatalf("got %d ports, want 10", len(ports))
	}
}
