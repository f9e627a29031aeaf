// Package s3test runs a throwaway S3-compatible server for tests: the
// Versity S3 Gateway (versitygw, Apache-2.0) over a POSIX directory, as
// tools/s3gateway runs it, built once per content of that module by
// .ci/versitygw (make test-deps-versitygw) into a cache directory outside
// the repository, started on a free loopback port in a temporary
// directory with one identity whose keys sign every request. Nothing has
// to be running beforehand and nothing is left running: the server is
// stopped by Stop, and by the kernel if the test process dies. A test
// without the binary fails and says how to build it; it never skips.
package s3test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fleetcam/fleetcam/store/blob"
)

// binEnv names a binary to run instead of the one built into the cache
// directory: tools/s3gateway's, or a versitygw binary, which takes the
// same arguments.
const binEnv = "FLEETCAM_VERSITYGW_BIN"

// gatewayDir is the module of the gateway's program, from the repository's
// root.
const gatewayDir = "tools/s3gateway"

// The identity every request of the tests signs with: the gateway's root
// account.
const (
	AccessKey = "fleetcam-test"
	SecretKey = "fleetcam-test-secret-key-0123456789"
)

// Binary finds the gateway's binary: FLEETCAM_VERSITYGW_BIN when set, else
// the one .ci/versitygw built into the cache directory from the
// tools/s3gateway of the repository the tests run in (found from the
// working directory up), named by the digest of its go.mod, go.sum and
// main.go, so that a changed program is never run from an older build.
func Binary() (string, error) {
	if p := os.Getenv(binEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("s3test: %s=%s: %w", binEnv, p, err)
		}
		return p, nil
	}
	src, err := findGateway()
	if err != nil {
		return "", err
	}
	key, err := gatewayKey(src)
	if err != nil {
		return "", err
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("s3test: no cache directory for the S3 server's binary: %w", err)
		}
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "fleetcam", "s3gateway-"+key, "s3gateway")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("s3test: the S3 server of the tests is not built for this %s (%s): build it once with "+
			"`make test-deps-versitygw` (about a minute), or set %s to a versitygw binary", gatewayDir, p, binEnv)
	}
	return p, nil
}

// findGateway looks for tools/s3gateway in the working directory and each
// directory above it.
func findGateway() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("s3test: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		src := filepath.Join(dir, filepath.FromSlash(gatewayDir))
		if _, err := os.Stat(filepath.Join(src, "go.mod")); err == nil {
			return src, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("s3test: no %s in %s or above it; run the tests in the repository, "+
				"or set %s to a versitygw binary", gatewayDir, wd, binEnv)
		}
	}
}

// gatewayKey is what .ci/versitygw names a build of the gateway's module
// src by: the first 16 hex digits of the SHA-256 of its go.mod, go.sum and
// main.go, one after the other.
func gatewayKey(src string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum", "main.go"} {
		raw, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return "", fmt.Errorf("s3test: %w", err)
		}
		h.Write(raw)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Server is one running gateway.
type Server struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the gateway has exited
	exit error         // how it exited, once done is closed
}

// Endpoint is the URL of the gateway.
func (s *Server) Endpoint() string { return "http://127.0.0.1:" + strconv.Itoa(s.port) }

// Options are the settings of a store in bucket on the server, signed with
// the test identity, path-style.
func (s *Server) Options(bucket string) blob.S3Options {
	return blob.S3Options{Endpoint: s.Endpoint(), Bucket: bucket, Region: "us-east-1", AccessKey: AccessKey, SecretKey: SecretKey, PathStyle: true}
}

// Start starts a server in a new temporary directory and waits until it
// takes a write (a fraction of a second).
func Start(ctx context.Context) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, bin)
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			return s, err
		}
	}
}

// startAttempts bounds the starts of a server whose port was taken.
const startAttempts = 3

// errPortTaken: the gateway could not bind a port that was free when
// chosen; another process took it in between, and a start on another port
// may succeed.
var errPortTaken = errors.New("s3test: the server's port was taken before the gateway bound it")

// start starts a server in a new temporary directory.
func start(ctx context.Context, bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "s3test")
	if err != nil {
		return nil, fmt.Errorf("s3test: %w", err)
	}
	s := &Server{dir: dir}
	if err := s.run(ctx, bin); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) run(ctx context.Context, bin string) error {
	// The buckets are directories of data; each object's metadata (its
	// type, ETag, user metadata) is kept in a directory beside it rather
	// than in extended attributes, which not every file system of a test
	// machine keeps.
	data, meta := filepath.Join(s.dir, "data"), filepath.Join(s.dir, "meta")
	for _, d := range []string{data, meta} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("s3test: %w", err)
		}
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	s.port = ports[0]
	cmd := exec.Command(bin, "--port", "127.0.0.1:"+strconv.Itoa(s.port), "--access", AccessKey, "--secret", SecretKey,
		"--region", "us-east-1", "--quiet", "posix", "--sidecar", meta, data)
	log, err := os.Create(s.LogPath())
	if err != nil {
		return fmt.Errorf("s3test: %w", err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr, cmd.Dir = log, log, s.dir
	// The root account comes from the flags alone, never from the
	// environment of the test process.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "ROOT_") || strings.HasPrefix(kv, "VGW_")
	})
	// The kernel stops the server if the test process dies without
	// stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("s3test: start %s: %w", bin, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { s.exit = cmd.Wait(); close(s.done) }()
	// A probe in flight ends when the gateway exits, rather than wait out
	// its timeout.
	running, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-s.done:
		case <-running.Done():
		}
		stop()
	}()
	// Ready means a bucket is made and an object written in it. A probe
	// that fails is not retried by the client: the loop below tries again
	// sooner than the client's backoff would.
	o := s.Options("s3test-ready")
	o.MaxRetries = 1
	probe, err := blob.NewS3(o)
	if err != nil {
		s.kill()
		return err
	}
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		actx, cancel := context.WithTimeout(running, 10*time.Second)
		err = probe.CreateBucket(actx)
		if err == nil {
			err = probe.Check(actx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			out, _ := os.ReadFile(s.LogPath())
			s.cmd = nil
			if line := lineWith(string(out), "address already in use"); line != "" {
				return fmt.Errorf("%w: %s", errPortTaken, line)
			}
			return fmt.Errorf("s3test: the S3 server exited: %v\n%s", s.exit, lastLines(string(out), 15))
		case <-deadline.C:
			s.kill()
			out, _ := os.ReadFile(s.LogPath())
			return fmt.Errorf("s3test: the gateway did not take a write within 2m: %v\n%s", err, lastLines(string(out), 15))
		case <-ctx.Done():
			s.kill()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// LogPath is the server's log file.
func (s *Server) LogPath() string { return filepath.Join(s.dir, "s3gateway.log") }

// Stop stops the server and removes its directory. Its data is thrown
// away, so it is killed rather than shut down.
func (s *Server) Stop() error {
	s.kill()
	return os.RemoveAll(s.dir)
}

// kill ends the server at once.
func (s *Server) kill() {
	if s.cmd != nil {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		s.cmd = nil
	}
}

// freePorts returns n distinct loopback TCP ports nothing listens on,
// chosen at random below the kernel's range of ephemeral ports: between
// the choice and the gateway's bind, a port of that range can become the
// local end of a connection that any process on the machine opens.
func freePorts(n int) ([]int, error) {
	const lowest = 10000 // above the ports of well-known services
	floor := ephemeralFloor()
	if floor-lowest < 100*n {
		return nil, fmt.Errorf("s3test: the ephemeral ports start at %d, leaving too few ports from %d for the server", floor, lowest)
	}
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 100*n {
			return nil, fmt.Errorf("s3test: found %d free ports from %d to %d in %d tries, want %d", len(ports), lowest, floor, tries, n)
		}
		port := lowest + rand.IntN(floor-lowest)
		if slices.Contains(ports, port) {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		ports = append(ports, port)
	}
	return ports, nil
}

// ephemeralFloor is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralFloor() int {
	const linuxDefault = 32768
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	if fields := strings.Fields(string(raw)); len(fields) > 0 {
		if floor, err := strconv.Atoi(fields[0]); err == nil {
			return floor
		}
	}
	return linuxDefault
}

// lineWith is the first line of log that contains one of subs.
func lineWith(log string, subs ...string) string {
	for _, line := range strings.Split(log, "\n") {
		for _, sub := range subs {
			if strings.Contains(line, sub) {
				return line
			}
		}
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
