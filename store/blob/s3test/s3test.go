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
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
	done    chan error
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
// S3 gateway takes a write: about ten seconds, most of it the master
// deferring its first volume allocation and the filer joining the lock
// ring of a new cluster.
func Start(ctx context.Context) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
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
	ports, err := freePorts(8)
	if err != nil {
		return err
	}
	s.port = ports[0]
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	for i, kind := range map[int]string{2: "master", 4: "volume", 6: "filer", 7: "s3"} {
		s.sockets = append(s.sockets, "/tmp/seaweedfs-"+kind+"-grpc-"+p(i)+".sock")
	}
	args := []string{"server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + data,
		"-master.port=" + p(1), "-master.port.grpc=" + p(2), "-master.telemetry=false", "-master.volumeSizeLimitMB=1024",
		"-volume.port=" + p(3), "-volume.port.grpc=" + p(4), "-volume.max=100",
		"-filer.port=" + p(5), "-filer.port.grpc=" + p(6), "-filer.localSocket=" + filepath.Join(s.dir, "filer.sock"),
		"-s3", "-s3.port=" + p(0), "-s3.port.grpc=" + p(7), "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.iam=false",
		"-s3.autoCreateBucket=false", "-s3.config=" + config, "-s3.localSocket=" + filepath.Join(s.dir, "s3.sock"),
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
	s.cmd, s.done = cmd, make(chan error, 1)
	go func() { s.done <- cmd.Wait() }()
	// The gateway answers once the filer and a volume server are up;
	// writable means a volume could be grown: a probe object is written.
	probe, err := blob.NewS3(s.Options("s3test-ready"))
	if err != nil {
		s.kill()
		return err
	}
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = probe.CreateBucket(actx)
		if err == nil {
			err = probe.Check(actx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-s.done:
			out, _ := os.ReadFile(s.LogPath())
			s.cmd = nil
			return fmt.Errorf("s3test: weed exited: %v: %s", werr, lastLines(string(out), 15))
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

// freePorts returns n distinct loopback TCP ports nothing listens on.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("s3test: find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
