package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// -help prints the flags, examples and the scenario format on stdout and
// exits 0; a bad flag prints the usage on stderr and exits 2.
func TestHelpShowsExamplesAndScenarioFormat(t *testing.T) {
	for _, arg := range []string{"-help", "-h", "--help"} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{arg}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Fatalf("%s: exit %d, stderr %q", arg, code, stderr.String())
		}
		for _, want := range []string{"-broker string", "Examples:", "devicesim -load -devices", "Scenario files (-scenario)",
			"action: NAME", "offline (with duration", "devicesim/testdata/scenario.yaml", "Exit status"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%s lacks %q:\n%s", arg, want, stdout.String())
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-bogus"}, &stdout, &stderr); code != 2 || stdout.Len() != 0 ||
		!strings.Contains(stderr.String(), "usage: devicesim") {
		t.Fatalf("bad flag: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// The scenario file -help names exists and loads.
func TestHelpScenarioExampleLoads(t *testing.T) {
	f, err := parseFlags([]string{"-scenario", "../../devicesim/testdata/scenario.yaml", "-state-dir", ""}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.options(nil, nil); err != nil {
		t.Fatal(err)
	}
}

// The state the simulator keeps by default stays out of git.
func TestDefaultStateDirIsIgnored(t *testing.T) {
	f, err := parseFlags(nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(raw), "\n/"+f.stateDir+"/\n") {
		t.Fatalf(".gitignore does not ignore the default -state-dir %s:\n%s", f.stateDir, raw)
	}
}
