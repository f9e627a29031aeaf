// Package pgserver runs a PostgreSQL server of fleetcam's own: initdb and
// postgres from the Debian postgresql package, in a directory of its own, on
// a free loopback port, as an unprivileged user when the caller runs as
// root. Nothing has to be running beforehand, and nothing is left running:
// Stop ends the server, and the kernel does if the calling process dies.
// The tests' throwaway servers (store/pgtest) and the benchmark's server
// (cmd/fleetbench -postgres auto) are both started here.
package pgserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the role initdb creates; it authenticates without a
// password from this machine.
const Superuser = "fleetcam"

// Options choose what kind of server Start runs.
type Options struct {
	// Parent is the directory the server's own directory is made in (the
	// system's temporary directory when empty). When the caller runs as
	// root, the server's user must be able to reach it.
	Parent string
	// Durable keeps PostgreSQL's crash safety (fsync, full page writes), as
	// a production server has it. Off, commits are not flushed to the disk:
	// a test server's data is thrown away, and its tests run faster.
	Durable bool
	// Settings are further server settings (name → value), passed as -c
	// name=value after the ones Start chooses.
	Settings map[string]string
	// Keep leaves the server's directory (its data and postgres.log) in
	// place after Stop.
	Keep bool
}

// Server is one PostgreSQL server started by Start.
type Server struct {
	dir  string
	port int
	keep bool
	cmd  *exec.Cmd
	done chan error
	// What run needs to start the server again (Resume).
	bin, data string
	cred      *syscall.Credential
	settings  []string
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
	return "", errors.New("pgserver: PostgreSQL is not installed: install the Debian package postgresql (make test-deps-postgresql does so when run as root), or set FLEETCAM_PG_BIN to the directory of initdb and postgres")
}

// version is the major version in a /usr/lib/postgresql/<version>/bin path.
func version(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// Start initialises a cluster in a new directory and starts a server on it,
// listening on 127.0.0.1 only, with the superuser Superuser and trust
// authentication (nothing but this machine reaches it). A throwaway
// (not Durable) server's cluster is a copy of one initdb made earlier
// (see template).
func Start(ctx context.Context, o Options) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(o.Parent, "fleetcam-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	s := &Server{dir: dir, keep: o.Keep}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			s.remove()
			return nil, fmt.Errorf("pgserver: %w", err)
		}
		if err := reachable(filepath.Dir(dir), cred); err != nil {
			s.remove()
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	args := []string{"-U", Superuser, "--auth=trust", "-E", "UTF8", "--locale=C"}
	var tmpl string
	if !o.Durable {
		args = append(args, "--no-sync")
		tmpl = template(filepath.Join(bin, "initdb"), args, cred)
	}
	copied := tmpl != "" && copyTemplate(ctx, tmpl, data)
	if !copied {
		if err := initdb(ctx, bin, data, args, cred); err != nil {
			s.remove()
			return nil, err
		}
		if tmpl != "" {
			cache(ctx, data, tmpl)
		}
	}
	// The nodes of a cluster commit batches of many devices' writes in
	// SERIALIZABLE transactions at the same time: with the default 64
	// predicate locks per transaction those locks soon cover whole pages
	// and tables, and batches of different devices on different nodes
	// abort each other (docs/cluster.md).
	settings := []string{"max_connections=200", "max_pred_locks_per_transaction=1024"}
	if o.Durable {
		settings = append(settings, "shared_buffers=256MB")
	} else {
		settings = append(settings, "fsync=off", "synchronous_commit=off", "full_page_writes=off", "shared_buffers=64MB")
	}
	names := make([]string, 0, len(o.Settings))
	for k := range o.Settings {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		settings = append(settings, k+"="+o.Settings[k])
	}
	// A port is free when we look and may be taken when postgres binds it;
	// a few tries make that race harmless.
	for try := 0; ; try++ {
		if s.port, err = freePort(); err != nil {
			s.remove()
			return nil, err
		}
		if err = s.run(ctx, bin, data, cred, settings); err == nil {
			s.bin, s.data, s.cred, s.settings = bin, data, cred, settings
			return s, nil
		}
		if try == 4 || ctx.Err() != nil {
			s.remove()
			return nil, err
		}
		if copied {
			// The template may be what failed: this server gets a cluster
			// of initdb's making, which replaces the template.
			copied = false
			discard(tmpl)
			if err := os.RemoveAll(data); err != nil {
				s.remove()
				return nil, fmt.Errorf("pgserver: %w", err)
			}
			if err := initdb(ctx, bin, data, args, cred); err != nil {
				s.remove()
				return nil, err
			}
			cache(ctx, data, tmpl)
		}
	}
}

// initdbRuns counts the clusters initdb has made, which the tests tell
// from copies of the template by.
var initdbRuns atomic.Int64

// initdb makes a new cluster in data, as the server's user.
func initdb(ctx context.Context, bin, data string, args []string, cred *syscall.Credential) error {
	initdbRuns.Add(1)
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), append([]string{"-D", data}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgserver: initdb in %s: %w: %s", filepath.Dir(data), err, out)
	}
	return nil
}

// template is where the template of initdb (the program) with args, run
// by the user of cred, is cached; "" when there is no cache directory.
//
// A throwaway server's cluster is a copy of a template: a cluster initdb
// made once and nobody ever started, kept in the user's cache directory
// (on the disk: in /dev/shm it would hold memory for good). Copying its
// 40 MB costs a fraction of the CPU initdb does, and the tests start a
// server in every test binary and more. The template's directory is named
// by a digest of what initdb's output depends on (the program's path, size
// and modification time, its arguments, the owner of its files and the
// time zone it writes into postgresql.conf), so that a cluster of another
// PostgreSQL or other settings is never copied.
//
// The first throwaway Start runs initdb into its own server's directory
// (which the server's user can reach, unlike root's cache) and caches a
// copy of that: copied beside the template's path, flushed, and renamed to
// it, so that a Start finds a whole template or none, without locks.
// Starts that race to cache one each make their own; the first rename
// wins, and the others' fail and are removed. A template that does not
// copy, or whose copy does not start, is discarded, and that Start runs
// initdb and caches a new one.
func template(initdb string, args []string, cred *syscall.Credential) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	st, err := os.Stat(initdb)
	if err != nil {
		return ""
	}
	uid, gid := os.Geteuid(), os.Getegid()
	if cred != nil {
		uid, gid = int(cred.Uid), int(cred.Gid)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%q\x00%d:%d\x00%s", initdb, st.Size(), st.ModTime().UnixNano(), args, uid, gid, os.Getenv("TZ"))
	return filepath.Join(dir, "fleetcam", "pg-initdb-"+hex.EncodeToString(h.Sum(nil))[:16])
}

// copyTemplate copies the cluster of template tmpl to data. False when
// there is no template, or a damaged one, which it discards (unless ctx
// ended the copy).
func copyTemplate(ctx context.Context, tmpl, data string) bool {
	if _, err := os.Lstat(tmpl); err != nil {
		return false
	}
	if copyCluster(ctx, filepath.Join(tmpl, "data"), data) == nil {
		return true
	}
	if ctx.Err() == nil {
		discard(tmpl)
	}
	os.RemoveAll(data)
	return false
}

// cache makes the cluster in data the template tmpl, unless there is one
// already. The cluster must never have been started: a template holds no
// postmaster.pid. Failing leaves the server its cluster, and the next
// Start tries again, so it reports nothing.
func cache(ctx context.Context, data, tmpl string) {
	if err := os.MkdirAll(filepath.Dir(tmpl), 0o755); err != nil {
		return
	}
	tmp, err := os.MkdirTemp(filepath.Dir(tmpl), filepath.Base(tmpl)+".new-")
	if err != nil {
		return
	}
	defer os.RemoveAll(tmp) // gone already once renamed
	if copyCluster(ctx, data, filepath.Join(tmp, "data")) != nil || syncTree(tmp) != nil {
		return
	}
	// Fails when another Start's template got there first.
	os.Rename(tmp, tmpl)
}

// discard removes template tmpl. It is renamed away first: a Start copying
// it at that moment then fails on the next file it opens (and makes its
// own cluster) instead of copying a part of it.
func discard(tmpl string) {
	old, err := os.MkdirTemp(filepath.Dir(tmpl), filepath.Base(tmpl)+".old-")
	if err != nil {
		return
	}
	os.Rename(tmpl, filepath.Join(old, "template"))
	os.RemoveAll(old)
}

// copyCluster copies the cluster in src to dst, which must not exist, with
// its owner and modes. cp -a does it as whoever runs it: root (copying the
// postgres user's files) keeps their owner, any other user owns them
// already; a copy of Go's own would have to chown each file to the
// server's user. cp names each file by its path from src, so a src renamed
// away (discard) makes it fail rather than copy part of it.
func copyCluster(ctx context.Context, src, dst string) error {
	if _, err := os.Stat(filepath.Join(src, "PG_VERSION")); err != nil {
		return fmt.Errorf("pgserver: %s is no cluster: %w", src, err)
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", "--", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("pgserver: copy %s to %s: %w: %s", src, dst, err, out)
	}
	return nil
}

// syncTree flushes the files and directories under dir to the disk. A
// template outlives a crash of the machine, after which files initdb
// --no-sync wrote and nobody flushed could come back empty.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
}

// credential is the unprivileged user the server runs as when the caller
// runs as root (postgres refuses to run as root): the postgres user the
// Debian package creates, else nobody. Nil when the caller is not root.
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
	return nil, errors.New("pgserver: running as root and no unprivileged user (postgres or nobody) to run PostgreSQL as")
}

// reachable checks that the user of cred may enter dir and every directory
// above it, which the server's data directory needs.
func reachable(dir string, cred *syscall.Credential) error {
	for d := dir; ; d = filepath.Dir(d) {
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err != nil {
			return fmt.Errorf("pgserver: %s: %w", d, err)
		}
		bit := uint32(0o001)
		switch {
		case st.Uid == cred.Uid:
			bit = 0o100
		case st.Gid == cred.Gid:
			bit = 0o010
		}
		if st.Mode&bit == 0 {
			return fmt.Errorf("pgserver: the server runs as uid %d, which may not enter %s (mode %o): give it a parent directory it can reach (chmod o+x)",
				cred.Uid, d, st.Mode&0o777)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// freePort is a loopback TCP port nothing listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgserver: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// run starts postgres on s.port and waits until it accepts connections.
func (s *Server) run(ctx context.Context, bin, data string, cred *syscall.Credential, settings []string) error {
	args := []string{"-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-k", s.dir}
	for _, kv := range settings {
		args = append(args, "-c", kv)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	// Appended to: a resumed server's log follows its earlier one.
	log, err := os.OpenFile(s.LogPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	defer log.Close()
	if cred != nil {
		if err := log.Chown(int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("pgserver: %w", err)
		}
	}
	cmd.Stdout, cmd.Stderr = log, log
	// The kernel stops the server (immediate shutdown) if the calling
	// process dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgserver: start postgres: %w", err)
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
			out, _ := os.ReadFile(s.LogPath())
			s.cmd = nil
			return fmt.Errorf("pgserver: postgres exited: %v: %s", err, lastLines(string(out), 10))
		case <-deadline.C:
			s.kill()
			return fmt.Errorf("pgserver: postgres did not accept connections within 30s: %w", err)
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

// URL is the libpq URL of database db on the server, as Superuser.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, s.port, db)
}

// Port is the port the server listens on.
func (s *Server) Port() int { return s.port }

// Dir is the server's directory: its data (data/) and log.
func (s *Server) Dir() string { return s.dir }

// LogPath is the server's log file.
func (s *Server) LogPath() string { return filepath.Join(s.dir, "postgres.log") }

// Exec runs one statement on database db.
func (s *Server) Exec(ctx context.Context, db, stmt string) error {
	conn, err := pgx.Connect(ctx, s.URL(db))
	if err != nil {
		return fmt.Errorf("pgserver: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("pgserver: %s: %w", stmt, err)
	}
	return nil
}

// VersionNum is the server's version as PostgreSQL numbers it
// (server_version_num: 150004 for 15.4).
func (s *Server) VersionNum(ctx context.Context) (int, error) {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return 0, fmt.Errorf("pgserver: connect: %w", err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version_num").Scan(&v); err != nil {
		return 0, fmt.Errorf("pgserver: server version: %w", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("pgserver: server version %q: %w", v, err)
	}
	return n, nil
}

// PID is the process id of the running server's postmaster, whose
// children are its backends and background workers; 0 when it is not
// running.
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop shuts the server down (fast shutdown: open sessions are ended) and
// removes its directory unless Options.Keep said otherwise.
func (s *Server) Stop() error {
	var err error
	if s.cmd != nil {
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			s.kill()
			err = errors.New("pgserver: postgres did not stop within 30s; killed")
		}
		s.cmd = nil
	}
	if s.keep {
		return err
	}
	return errors.Join(err, s.remove())
}

// Pause shuts the server down as Stop does but keeps its directory, so
// that Resume starts it again with its data: an outage of the database,
// for tests of what its clients do meanwhile.
func (s *Server) Pause() error {
	if s.cmd == nil {
		return errors.New("pgserver: the server is not running")
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
		s.cmd = nil
		return nil
	case <-time.After(30 * time.Second):
		s.kill()
		return errors.New("pgserver: postgres did not stop within 30s; killed")
	}
}

// Resume starts a paused server again, on the same port and data, and
// waits until it accepts connections.
func (s *Server) Resume(ctx context.Context) error {
	if s.cmd != nil {
		return errors.New("pgserver: the server is running")
	}
	return s.run(ctx, s.bin, s.data, s.cred, s.settings)
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
