package testshared

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"time"
)

// Built is a command of this module built for the tests of a test binary.
type Built struct {
	// Path is the executable.
	Path string
	dir  string
}

// Stop removes the executable.
func (b *Built) Stop() error { return os.RemoveAll(b.dir) }

// Build returns a Server whose Get builds the command of the package with
// import path pkg, once per test binary, with go build as a user would:
// without the race detector, whatever the test binary was built with. It is
// for tests that run the command as a child process, which they may kill
// with SIGKILL. The build takes seconds when Go's build cache holds the
// command's packages (make test's API tests on PostgreSQL build them too)
// and minutes on a fresh machine, so Timeout allows for a busy one.
func Build(pkg string) *Server[*Built] {
	return &Server[*Built]{
		Timeout: 20 * time.Minute,
		Start: func(ctx context.Context) (*Built, error) {
			dir, err := os.MkdirTemp("", "fleetcam-test-build-")
			if err != nil {
				return nil, err
			}
			b := &Built{Path: filepath.Join(dir, path.Base(pkg)), dir: dir}
			if out, err := exec.CommandContext(ctx, "go", "build", "-o", b.Path, pkg).CombinedOutput(); err != nil {
				b.Stop()
				return nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
			}
			return b, nil
		},
	}
}
