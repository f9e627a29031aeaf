// Package pgtest runs a throwaway PostgreSQL server for tests: initdb and
// postgres from the Debian postgresql package, in a temporary directory, on
// a free loopback port, as an unprivileged user when the tests run as root.
// Nothing has to be running beforehand, and nothing is left running: the
// server is stopped by Stop, and by the kernel if the test process dies.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is one PostgreSQL server started for tests.
type Server struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan error
}

// BinDir finds the directory of initdb and postgres: FLEETCAM_PG_BIN when
// set, else the newest /usr/lib/postgresql/<version>/bin, else the PATH.
func BinDir() (string, error) {
	if d := os.Getenv("FLEETCAM_PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pgtest: PostgreSQL is not installed: install the Debian package postgresql (make test does so when run as root), or set FLEETCAM_PG_BIN to the directory of initdb and postgres")
}

// version is the major version in a /usr/lib/postgresql/<version>/bin path.
func version(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// Start initialises a cluster in a new temporary directory and starts a
// server on it, listening on 127.0.0.1 only, with the superuser fleetcam
// and trust authentication (nothing but this machine reaches it). Durability
// is switched off: a test server's data is thrown away.
func Start(ctx context.Context) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fleetcam-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			s.remove()
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "fleetcam",
		"--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		s.remove()
		return nil, fmt.Errorf("pgtest: initdb: %w: %s", err, out)
	}
	// A port is free when we look and may be taken when postgres binds it;
	// a few tries make that race harmless.
	for try := 0; ; try++ {
		if s.port, err = freePort(); err != nil {
			s.remove()
			return nil, err
		}
		if err = s.run(ctx, bin, data, cred); err == nil {
			return s, nil
		}
		if try == 4 || ctx.Err() != nil {
			s.remove()
			return nil, err
		}
	}
}

// credential is the unprivileged user the server runs as when the tests run
// as root (postgres refuses to run as root): the postgres user the Debian
// package creates, else nobody. Nil when the tests do not run as root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("pgtest: running as root and no unprivileged user (postgres or nobody) to run PostgreSQL as")
}

// freePort is a loopback TCP port nothing listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// run starts postgres on s.port and waits until it accepts connections.
func (s *Server) run(ctx context.Context, bin, data string, cred *syscall.Credential) error {
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=64MB")
	log, err := os.Create(filepath.Join(s.dir, "postgres.log"))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	// The kernel stops the server (immediate shutdown) if the test process
	// dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.cmd, s.done = cmd, make(chan error, 1)
	go func() { s.done <- cmd.Wait() }()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case err := <-s.done:
			out, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
			s.cmd = nil
			return fmt.Errorf("pgtest: postgres exited: %v: %s", err, lastLines(string(out), 10))
		case <-deadline.C:
			s.kill()
			return fmt.Errorf("pgtest: postgres did not accept connections within 30s: %w", err)
		case <-ctx.Done():
			s.kill()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// URL is the libpq URL of database db on the server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://fleetcam@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// Port is the port the server listens on.
func (s *Server) Port() int { return s.port }

// Stop shuts the server down (fast shutdown: open sessions are ended) and
// removes its directory.
func (s *Server) Stop() error {
	var err error
	if s.cmd != nil {
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.kill()
			err = errors.New("pgtest: postgres did not stop within 10s; killed")
		}
		s.cmd = nil
	}
	return errors.Join(err, s.remove())
}

// kill ends the server at once.
func (s *Server) kill() {
	if s.cmd != nil {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		s.cmd = nil
	}
}

func (s *Server) remove() error { return os.RemoveAll(s.dir) }
