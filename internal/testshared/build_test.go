package testshared

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Build makes the program as go build does, without the race detector
// even in a race-detected test binary, once; Stop removes it.
func TestBuildWithoutRaceDetector(t *testing.T) {
	built := Build("github.com/fleetcam/fleetcam/internal/testshared/testdata/race")
	b := built.Get(t)
	if again := built.Get(t); again != b {
		t.Errorf("a second Get built the program again: %s, then %s", b.Path, again.Path)
	}
	out, err := exec.Command(b.Path).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", b.Path, err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "race detector: false" {
		t.Errorf("the built program says %q, want it built without the race detector", got)
	}
	if err := built.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.Path); !os.IsNotExist(err) {
		t.Errorf("%s after Stop: %v, want it removed", b.Path, err)
	}
}

// A package that does not build is an error that says what go build said.
func TestBuildFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Build("github.com/fleetcam/fleetcam/internal/testshared/testdata/nosuchcommand").Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "go build") || !strings.Contains(err.Error(), "nosuchcommand") {
		t.Fatalf("Start = %v, want go build's error naming the package", err)
	}
}
