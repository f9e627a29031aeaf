package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/cluster/natstest"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// firstStart runs fleetcam with the environment e (and args) until it has
// started, and returns the generated first-partner password, read from its
// file in the data dir, after checking the file's and the directory's modes
// and that the log shows the password once, and the partner's sign-in.
// fleetcam stops when the test ends.
func firstStart(t *testing.T, e env, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := newLogSink()
	var code int
	exit := make(chan struct{})
	go func() { code = run(ctx, args, e.get, io.Discard, logs); close(exit) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exit:
		case <-time.After(patience):
			t.Error("fleetcam did not stop")
		}
	})
	var addr string
	select {
	case addr = <-logs.addr:
	case <-exit:
		t.Fatalf("run exited with %d: %s", code, logs)
	case <-time.After(patience):
		t.Fatalf("fleetcam did not start: %s", logs)
	}
	dir := e["FLEETCAM_DATA_DIR"]
	for f, mode := range map[string]os.FileMode{dir: os.ModeDir | 0o700, filepath.Join(dir, initialPasswordFile): 0o600} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode()&(os.ModeDir|os.ModePerm) != mode {
			t.Fatalf("%s has mode %v, want %v", f, st.Mode(), mode)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, initialPasswordFile))
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(raw))
	if len(password) < 16 || strings.Count(logs.String(), password) != 1 {
		t.Fatalf("generated password %q is not logged exactly once: %s", password, logs)
	}
	client{t: t, base: "http://" + addr}.login("admin@fleetcam.local", password)
	return password
}

// firstNodeEnv is the environment of docs/cluster.md's deployment: a
// PostgreSQL database, a NATS server, shared media and a signing key, and
// no data dir of its own yet (dataDir does not exist), over a new database.
// The file at config sets the pools' size the tests use.
func firstNodeEnv(t *testing.T, dataDir string) (env, []string) {
	config := filepath.Join(t.TempDir(), "fleetcam.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, "store:\n  maxConns: %d\n", testMaxConns), 0o600); err != nil {
		t.Fatal(err)
	}
	e := testEnv(dataDir)
	e["FLEETCAM_POSTGRES_URL"] = pgtest.Database(t, "")
	e["FLEETCAM_NATS_URL"] = natstest.Start(t).URL()
	e["FLEETCAM_NODE_ID"] = "node-a"
	e["FLEETCAM_MEDIA_DIR"] = t.TempDir()
	e["FLEETCAM_SIGNING_KEY"] = clusterSigningKey
	return e, []string{"-config", config}
}

// The first node of a cluster creates its data dir, which neither the
// store nor a generated signing key creates there, before it writes the
// first partner's password into it.
func TestFirstNodeStartWritesGeneratedPassword(t *testing.T) {
	t.Parallel()
	e, args := firstNodeEnv(t, filepath.Join(t.TempDir(), "data"))
	firstStart(t, e, args...)
}

// A first start that cannot keep the generated password commits no
// partner: the next start, once the cause is gone, creates the partner and
// hands out its password.
func TestFirstStartWithoutPasswordFileCreatesNoPartner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// setup returns the environment of the failing start, the error it
		// must name and what removes the cause.
		setup func(t *testing.T) (e env, args []string, msg string, fix func(env))
	}{
		{"bbolt, the password file of an earlier store", func(t *testing.T) (env, []string, string, func(env)) {
			dir := filepath.Join(t.TempDir(), "data")
			stale := filepath.Join(dir, initialPasswordFile)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(stale, []byte("Earlier1store\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return testEnv(dir), nil, stale + " exists", func(env) {
				if err := os.Remove(stale); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"PostgreSQL, a data dir that cannot be created", func(t *testing.T) (env, []string, string, func(env)) {
			file := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			e, args := firstNodeEnv(t, filepath.Join(file, "data"))
			return e, args, "not a directory", func(e env) { e["FLEETCAM_DATA_DIR"] = filepath.Join(t.TempDir(), "data") }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, args, msg, fix := tc.setup(t)
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			var stderr strings.Builder
			if code := run(ctx, args, e.get, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), msg) {
				t.Fatalf("exit %d, want 1 naming %q: %s", code, msg, stderr.String())
			}
			fix(e)
			firstStart(t, e, args...)
		})
	}
}
