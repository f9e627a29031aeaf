package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Every way of asking for help prints the commands, the server flags and
// examples on stdout and exits 0.
func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-help"}, {"-h"}, {"--help"}, {"help"}, {"serve", "-h"}, {"-config", "x.yaml", "-help"},
		{"partner", "add", "-h"}, {"device", "refurbish", "-help"}, {"store", "copy", "-h"}, {"cluster", "status", "-h"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, env{}.get, &stdout, &stderr)
			if code != 0 || stderr.Len() != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr.String())
			}
			for _, want := range []string{"serve ", "partner add ", "user add ", "device refurbish ", "openapi ", "store copy ", "cluster status ", "help ", "-config FILE", "--create", "Examples:"} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("usage lacks %q:\n%s", want, stdout.String())
				}
			}
		})
	}
}

// An unknown command is a usage error: the usage goes to stderr, exit 2.
func TestUnknownCommandIsAUsageError(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"partners", "add"}, env{}.get, &stdout, &stderr)
	if code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), `unknown command "partners"`) ||
		!strings.Contains(stderr.String(), "partner add") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
