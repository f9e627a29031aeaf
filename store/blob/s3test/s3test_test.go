package s3test

import (
	"os"
	"strings"
	"testing"
)

// The build script of the Makefile (make test-deps-versitygw) builds the
// version Binary looks for.
func TestBuildScriptBuildsThisVersion(t *testing.T) {
	raw, err := os.ReadFile("../../../.ci/versitygw")
	if err != nil {
		t.Fatal(err)
	}
	if want := "VERSION=${VERSITYGW_VERSION:-" + Version + "}"; !strings.Contains(string(raw), want) {
		t.Fatalf(".ci/versitygw does not build %s (want the line %s)", Version, want)
	}
}

// A missing binary named by FLEETCAM_VERSITYGW_BIN is an error that names it.
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
