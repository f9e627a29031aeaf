package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// makeDryRun returns the commands make would run for target.
func makeDryRun(t *testing.T, target string, vars ...string) []string {
	t.Helper()
	out, err := exec.Command("make", append([]string{"-n", "-C", "../..", "--no-print-directory", target}, vars...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", target, err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// make run and make sim start built binaries, not go run: go run ends with
// status 1 when Ctrl-C stops the program, and make reports "Error 1"
// although the program exited cleanly.
func TestMakeRunsBuiltPrograms(t *testing.T) {
	t.Parallel()
	for target, program := range map[string]string{"run": "bin/fleetcam", "sim": "bin/devicesim"} {
		lines := makeDryRun(t, target)
		last := lines[len(lines)-1]
		if !strings.Contains(last, program) {
			t.Errorf("make %s ends with %q, want it to start %s", target, last, program)
		}
		for _, l := range lines {
			if strings.Contains(l, "go run") {
				t.Errorf("make %s runs %q", target, l)
			}
		}
	}
}

// make run keeps fleetcam to this machine unless told otherwise.
func TestMakeRunListensOnLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vars []string
		want string
	}{
		{nil, "FLEETCAM_HTTP_ADDR=${FLEETCAM_HTTP_ADDR:-127.0.0.1:8080} FLEETCAM_MQTT_ADDR=${FLEETCAM_MQTT_ADDR:-127.0.0.1:1883} bin/fleetcam"},
		{[]string{"LISTEN="}, "FLEETCAM_HTTP_ADDR=${FLEETCAM_HTTP_ADDR:-:8080} FLEETCAM_MQTT_ADDR=${FLEETCAM_MQTT_ADDR:-:1883} bin/fleetcam"},
		{[]string{"CONFIG=configs/fleetcam.yaml"}, "bin/fleetcam -config configs/fleetcam.yaml"},
	} {
		lines := makeDryRun(t, "run", tc.vars...)
		if last := strings.TrimSpace(lines[len(lines)-1]); last != tc.want {
			t.Errorf("make run %v: %q, want %q", tc.vars, last, tc.want)
		}
	}
}

// The Makefile and the README give make bench the same duration.
func TestBenchDurationAgrees(t *testing.T) {
	t.Parallel()
	about := regexp.MustCompile(`about ([a-z ]+) minutes`)
	var found []string
	for _, name := range []string{"../../Makefile", "../../README.md"} {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(string(raw), "make bench")
		if name == "../../Makefile" {
			i = strings.Index(string(raw), "\nbench:")
			i = strings.LastIndex(string(raw[:i]), "\n\n")
		}
		m := about.FindSubmatch(raw[i:])
		if m == nil {
			t.Fatalf("%s gives make bench no duration", name)
		}
		found = append(found, string(m[1]))
	}
	if found[0] != found[1] {
		t.Fatalf("make bench takes about %s minutes in the Makefile, about %s in the README", found[0], found[1])
	}
}
