// Package s3test runs a throwaway S3-compatible server for tests: the
// SeaweedFS server (weed, Apache-2.0), built once per version by
// .ci/seaweedfs (make test-deps-seaweedfs) into a cache directory outside
// the repository, started on free loopback ports in a temporary directory
// with one identity whose keys sign every request. Nothing has to be
// running beforehand and nothing is left running: the server is stopped
// by Stop, and by the kernel if the test process dies. A test without the
// binary fails and says how to build it; it never skips.
package s3test

import (
	"context"
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

// Version is the SeaweedFS module version the tests run; .ci/seaweedfs
// builds the same one.
const Version = "v0.0.0-20261109003541-7506e5f91cd6"

// The identity every request of the tests signs with.
const (
	AccessKey = "fleetcam-test"
	SecretKey = "fleetcam-test-secret-key-0123456789"
)

// Binary finds the weed binary: FLEETCAM_SEAWEEDFS_BIN when set, else the
// one .ci/seaweedfs builds into the cache directory.
func Binary() (string, error) {
	if p := os.Getenv("FLEETCAM_SEAWEEDFS_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("s3test: FLEETCAM_SEAWEEDFS_BIN=%s: %w", p, err)
		}
		return p, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("s3test: no cache directory for the SeaweedFS binary: %w", err)
		}
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "fleetcam", "seaweedfs-"+Version, "weed")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("s3test: the SeaweedFS server for the S3 tests is missing (%s): build it once with "+
			"`make test-deps-seaweedfs` (several minutes), or set FLEETCAM_SEAWEEDFS_BIN to a weed binary", p)
	}
	return p, nil
}

// Server is one running SeaweedFS server with its S3 gateway.
type Server struct {
	dir  string
	port int // the S3 port
	// sockets are the Unix sockets weed makes in /tmp whatever TMPDIR
	// says, one per gRPC port; removed with the directory.
	sockets []string
	cmd     *exec.Cmd
	done    chan struct{} // closed when weed has exited
	exit    error         // how weed exited, once done is closed
}

// Endpoint is the URL of the S3 gateway.
func (s *Server) Endpoint() string { return "http://127.0.0.1:" + strconv.Itoa(s.port) }

// Options are the settings of a store in bucket on the server, signed with
// the test identity, path-style.
func (s *Server) Options(bucket string) blob.S3Options {
	return blob.S3Options{Endpoint: s.Endpoint(), Bucket: bucket, Region: "us-east-1", AccessKey: AccessKey, SecretKey: SecretKey, PathStyle: true}
}

// identities is the S3 configuration of the server: the test identity may
// do anything, anonymous requests nothing.
const identities = `{"identities": [{"name": "fleetcam", "credentials": [{"accessKey": "` + AccessKey + `", "secretKey": "` + SecretKey + `"}],
 "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}`

// Start starts a server in a new temporary directory and waits until its
// S3 gateway takes a write: about five seconds, most of it the filer's wait
// for the master's list of filers to settle (3 s, fixed in weed) and the
// lock ring's stabilization (1 s).
//
// The server is weed mini, not weed server: mini pins its own volume server
// as the cluster's only one, so the first write of a bucket grows volumes
// at once instead of after the hold that weed server keeps for volume
// servers of an earlier cluster (5 s), and its filer announces itself
// without waiting to confirm that no other filer exists (3 s). Its admin
// server and maintenance worker come with it; WebDAV and the admin UI are
// switched off.
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

// startAttempts bounds the starts of a server whose ports were taken.
const startAttempts = 3

// errPortTaken: weed could not bind a port that was free when chosen;
// another process took it in between, and a start on other ports may
// succeed.
var errPortTaken = errors.New("s3test: a port of the server was taken before weed bound it")

// start starts a server in a new temporary directory.
func start(ctx context.Context, bin string) (*Server, error) {
	// A short path: the server's Unix sockets live here too.
	dir, err := os.MkdirTemp("", "weed")
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
	config := filepath.Join(s.dir, "s3.json")
	if err := os.WriteFile(config, []byte(identities), 0o600); err != nil {
		return fmt.Errorf("s3test: %w", err)
	}
	data := filepath.Join(s.dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return fmt.Errorf("s3test: %w", err)
	}
	ports, err := freePorts(10)
	if err != nil {
		return err
	}
	s.port = ports[0]
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	for i, kind := range map[int]string{2: "master", 4: "volume", 6: "filer", 7: "s3", 9: "admin"} {
		s.sockets = append(s.sockets, "/tmp/seaweedfs-"+kind+"-grpc-"+p(i)+".sock")
	}
	// Every port is named: mini's defaults are fixed ports, and its admin
	// gRPC port would otherwise be the admin port plus 10000.
	args := []string{"mini", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + data,
		"-master.port=" + p(1), "-master.port.grpc=" + p(2), "-master.telemetry=false", "-master.volumeSizeLimitMB=1024",
		"-volume.port=" + p(3), "-volume.port.grpc=" + p(4), "-volume.max=100",
		"-filer.port=" + p(5), "-filer.port.grpc=" + p(6), "-filer.localSocket=" + filepath.Join(s.dir, "filer.sock"),
		"-s3.port=" + p(0), "-s3.port.grpc=" + p(7), "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.iam=false",
		"-s3.autoCreateBucket=false", "-s3.config=" + config, "-s3.localSocket=" + filepath.Join(s.dir, "s3.sock"),
		"-webdav=false", "-admin.ui=false", "-admin.port=" + p(8), "-admin.port.grpc=" + p(9), "-admin.port.legacy=0",
	}
	cmd := exec.Command(bin, args...)
	log, err := os.Create(s.LogPath())
	if err != nil {
		return fmt.Errorf("s3test: %w", err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr, cmd.Dir = log, log, s.dir
	// weed keeps its log files and Unix sockets in the temporary
	// directory: this server's own, removed with it.
	cmd.Env = append(os.Environ(), "TMPDIR="+s.dir)
	// The kernel stops the server if the test process dies without
	// stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("s3test: start %s: %w", bin, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { s.exit = cmd.Wait(); close(s.done) }()
	// A probe in flight ends when weed exits, rather than wait out its
	// timeout.
	running, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-s.done:
		case <-running.Done():
		}
		stop()
	}()
	// The gateway answers once the filer and a volume server are up;
	// writable means a volume could be grown: a probe object is written.
	// A probe that fails is not retried by the client: the loop below
	// tries again sooner than the client's backoff would.
	o := s.Options("s3test-ready")
	o.MaxRetries = 1
	probe, err := blob.NewS3(o)
	if err != nil {
		s.kill()
		return err
	}
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
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
			// weed mini checks its ports as it starts and binds them as each
			// service starts.
			if line := lineWith(string(out), "is not available on", "address already in use"); line != "" {
				return fmt.Errorf("%w: %s", errPortTaken, line)
			}
			return fmt.Errorf("s3test: weed exited: %v: %s\n%s", s.exit, fatalLine(string(out)), lastLines(string(out), 15))
		case <-deadline.C:
			s.kill()
			out, _ := os.ReadFile(s.LogPath())
			return fmt.Errorf("s3test: the S3 gateway did not take a write within 2m: %v\n%s", err, lastLines(string(out), 15))
		case <-ctx.Done():
			s.kill()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// LogPath is the server's log file.
func (s *Server) LogPath() string { return filepath.Join(s.dir, "weed.log") }

// Stop stops the server and removes its directory. Its data is thrown
// away, so it is killed rather than shut down (which takes seconds).
func (s *Server) Stop() error {
	s.kill()
	for _, sock := range s.sockets {
		os.Remove(sock)
	}
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
// chosen at random below the kernel's range of ephemeral ports: weed mini
// binds its services one after another over seconds, and meanwhile a port
// of that range can become the local end of a connection that weed, or
// any process on the machine, opens.
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

// fatalLine is the first line of weed's log that says why it stopped: a
// fatal log line (F and the date, as glog writes it) or a panic.
func fatalLine(log string) string {
	for _, line := range strings.Split(log, "\n") {
		if len(line) > 1 && line[0] == 'F' && line[1] >= '0' && line[1] <= '9' || strings.HasPrefix(line, "panic:") {
			return line
		}
	}
	return ""
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
