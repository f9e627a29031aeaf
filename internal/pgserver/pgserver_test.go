package pgserver

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// connect opens a connection to s's postgres database, closed when the
// test ends.
func connect(t *testing.T, s *Server) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// show reads one server setting.
func show(t *testing.T, s *Server, name string) string {
	t.Helper()
	var v string
	if err := connect(t, s).QueryRow(context.Background(), "SELECT current_setting($1)", name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A durable server flushes its commits and takes the extra settings; a
// kept one leaves its directory and log after Stop. Its cluster is
// initdb's own: it neither copies a template nor makes one.
func TestDurableServerKeepsCrashSafety(t *testing.T) {
	cache := emptyCache(t)
	parent := t.TempDir()
	// The server's user (postgres, when the tests run as root) must reach it.
	for _, d := range []string{filepath.Dir(parent), parent} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runs := initdbRuns.Load()
	s, err := Start(context.Background(), Options{Parent: parent, Durable: true, Keep: true,
		Settings: map[string]string{"work_mem": "8MB"}})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(s.Dir())
	if runs := initdbRuns.Load() - runs; runs != 1 {
		t.Errorf("initdb ran %d times for a durable server, want 1", runs)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("a durable server touched the template cache: %v", err)
	}
	for name, want := range map[string]string{"fsync": "on", "full_page_writes": "on", "synchronous_commit": "on", "work_mem": "8MB",
		"max_pred_locks_per_transaction": "1024"} {
		if got := show(t, s, name); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	if err := s.Exec(context.Background(), "postgres", "CREATE DATABASE kept"); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.LogPath()); err != nil {
		t.Errorf("the log of a kept server is gone after Stop: %v", err)
	}
	if conn, err := pgx.Connect(context.Background(), s.URL("postgres")); err == nil {
		conn.Close(context.Background())
		t.Fatal("the server still accepts connections after Stop")
	}
}

// A parent directory the server's user cannot enter is refused up front,
// naming the directory.
func TestUnreachableParentIsNamed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("not root: the server runs as this user, who reaches every directory it makes")
	}
	parent := t.TempDir() // 0700, owned by the user running the tests
	s, err := Start(context.Background(), Options{Parent: parent})
	if os.Geteuid() != 0 {
		if err != nil {
			t.Fatal(err)
		}
		s.Stop()
		return
	}
	if err == nil {
		s.Stop()
		t.Fatal("a server started under a directory its user cannot enter")
	}
	if !strings.Contains(err.Error(), filepath.Dir(parent)) || !strings.Contains(err.Error(), "chmod") {
		t.Errorf("error %q does not name the directory and the fix", err)
	}
}

// A test server trades crash safety for speed and leaves nothing behind.
func TestThrowawayServerIsRemoved(t *testing.T) {
	s, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := show(t, s, "fsync"); got != "off" {
		t.Errorf("fsync = %s on a throwaway server, want off", got)
	}
	if v, err := s.VersionNum(context.Background()); err != nil || strconv.Itoa(v) != show(t, s, "server_version_num") {
		t.Errorf("VersionNum = %d, %v; want the server's server_version_num %s", v, err, show(t, s, "server_version_num"))
	}
	if err := s.Exec(context.Background(), "postgres", "SELECT nonsense FROM nowhere"); err == nil {
		t.Error("a failing statement returned no error")
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Errorf("the server's directory is still there after Stop: %v", err)
	}
}

// A paused server refuses connections; resumed, it has its data back on
// the same port.
func TestPauseAndResumeKeepData(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.Exec(ctx, "postgres", "CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "postgres", "SELECT 1"); err == nil {
		t.Fatal("a paused server answered")
	}
	if err := s.Pause(); err == nil {
		t.Error("pausing a paused server is no error")
	}
	if err := s.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if got := show(t, s, "fsync"); got != "off" {
		t.Errorf("fsync = %s after Resume, want the settings of Start (off)", got)
	}
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT n FROM kept").Scan(&n); err != nil || n != 42 {
		t.Fatalf("the row written before the pause: %d, %v", n, err)
	}
	if err := s.Resume(ctx); err == nil {
		t.Error("resuming a running server is no error")
	}
}

// MemoryDir names a memory file system only when it has room to spare, and
// a server starts under whatever it names, leaving nothing behind there.
func TestServerInMemoryDir(t *testing.T) {
	parent := MemoryDir()
	if parent != "" {
		var fs syscall.Statfs_t
		if err := syscall.Statfs(parent, &fs); err != nil {
			t.Fatal(err)
		}
		if int64(fs.Type) != tmpfsMagic || uint64(fs.Bavail)*uint64(fs.Bsize) < memoryDirRoom {
			t.Fatalf("MemoryDir chose %s: type %#x, %d bytes free", parent, fs.Type, uint64(fs.Bavail)*uint64(fs.Bsize))
		}
	}
	s, err := Start(context.Background(), Options{Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.Dir()
	if parent != "" && filepath.Dir(dir) != parent {
		t.Errorf("the server's directory %s is not in %s", dir, parent)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is left after Stop: %v", dir, err)
	}
}

// emptyCache points the user's cache directory at a new empty one and
// returns the directory templates are cached in there.
func emptyCache(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	return filepath.Join(dir, "fleetcam")
}

// cachedTemplate is the one template in dir (emptyCache), failing the test
// when there is another entry beside it: a second template, or one being
// made or discarded.
func cachedTemplate(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || !strings.HasPrefix(names[0], "pg-initdb-") || strings.Contains(names[0], ".") {
		t.Fatalf("the template cache holds %q, want one pg-initdb-<key>", names)
	}
	return filepath.Join(dir, names[0])
}

// inode identifies a file, so that a test can tell it was not remade.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// startThrowaway starts a throwaway server, stopped when the test ends.
func startThrowaway(t *testing.T) *Server {
	t.Helper()
	s, err := Start(context.Background(), Options{Parent: MemoryDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// createTable creates table name on s and returns its file, relative to
// the data directory.
func createTable(t *testing.T, s *Server, name string) string {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, s)
	if _, err := conn.Exec(ctx, "CREATE TABLE "+name+" (n int); INSERT INTO "+name+" VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	var n int
	var file string
	if err := conn.QueryRow(ctx, "SELECT n, pg_relation_filepath($1) FROM "+name, name).Scan(&n, &file); err != nil || n != 7 {
		t.Fatalf("the row just written: %d, %v", n, err)
	}
	return file
}

// The first throwaway server caches its cluster as the template; the next
// copies it instead of running initdb, and the copy is the server's own.
func TestThrowawayServersCopyTheTemplate(t *testing.T) {
	dir := emptyCache(t)
	runs := initdbRuns.Load()
	first := startThrowaway(t)
	if runs := initdbRuns.Load() - runs; runs != 1 {
		t.Fatalf("initdb ran %d times for the first server, want 1", runs)
	}
	tmpl := cachedTemplate(t, dir)
	ino := inode(t, filepath.Join(tmpl, "data", "PG_VERSION"))

	runs = initdbRuns.Load()
	second := startThrowaway(t)
	if runs := initdbRuns.Load() - runs; runs != 0 {
		t.Errorf("initdb ran %d times with a template cached, want 0", runs)
	}
	if cachedTemplate(t, dir) != tmpl || inode(t, filepath.Join(tmpl, "data", "PG_VERSION")) != ino {
		t.Error("the template was made again")
	}
	for _, data := range []string{filepath.Join(first.Dir(), "data"), filepath.Join(second.Dir(), "data")} {
		if inode(t, filepath.Join(data, "PG_VERSION")) == ino {
			t.Errorf("%s shares its files with the template", data)
		}
	}

	// A table of the second server is in its directory alone.
	file := createTable(t, second, "copied")
	if _, err := os.Stat(filepath.Join(second.Dir(), "data", file)); err != nil {
		t.Errorf("the table's file is not in the server's directory: %v", err)
	}
	for _, data := range []string{filepath.Join(first.Dir(), "data"), filepath.Join(tmpl, "data")} {
		if _, err := os.Stat(filepath.Join(data, file)); !os.IsNotExist(err) {
			t.Errorf("the second server's table is in %s: %v", data, err)
		}
	}
	if err := first.Exec(context.Background(), "postgres", "SELECT * FROM copied"); err == nil {
		t.Error("the first server has the second's table")
	}
}

// A damaged template neither fails Start nor stays: the server gets a
// cluster of initdb's making, which becomes the new template. Without
// PG_VERSION the template is refused before the copy; without pg_control
// its copy does not start.
func TestDamagedTemplateIsReplaced(t *testing.T) {
	dir := emptyCache(t)
	startThrowaway(t)
	for _, file := range []string{"PG_VERSION", "global/pg_control"} {
		if err := os.Remove(filepath.Join(cachedTemplate(t, dir), "data", file)); err != nil {
			t.Fatal(err)
		}
		runs := initdbRuns.Load()
		createTable(t, startThrowaway(t), "repaired")
		if runs := initdbRuns.Load() - runs; runs != 1 {
			t.Errorf("without %s: initdb ran %d times, want 1", file, runs)
		}
		if _, err := os.Stat(filepath.Join(cachedTemplate(t, dir), "data", file)); err != nil {
			t.Errorf("the template is not replaced: %v", err)
		}
	}
	runs := initdbRuns.Load()
	createTable(t, startThrowaway(t), "copied")
	if runs := initdbRuns.Load() - runs; runs != 0 {
		t.Errorf("initdb ran %d times with the new template, want 0", runs)
	}
}

// Servers started at once with no template yet all start, and leave one
// template and nothing else in the cache.
func TestConcurrentFirstStartsCacheOneTemplate(t *testing.T) {
	dir := emptyCache(t)
	var wg sync.WaitGroup
	servers := make([]*Server, 3)
	errs := make([]error, len(servers))
	for i := range servers {
		wg.Go(func() { servers[i], errs[i] = Start(context.Background(), Options{Parent: MemoryDir()}) })
	}
	wg.Wait()
	for i, s := range servers {
		if errs[i] != nil {
			t.Error(errs[i])
			continue
		}
		defer s.Stop()
		if err := s.Exec(context.Background(), "postgres", "SELECT 1"); err != nil {
			t.Error(err)
		}
	}
	cachedTemplate(t, dir)
}

// cpuTime is the CPU the process and its waited-for children (initdb, the
// postmaster and, through it, its backends) have used so far.
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	var total time.Duration
	for _, tv := range []syscall.Timeval{self.Utime, self.Stime, children.Utime, children.Stime} {
		total += time.Duration(tv.Nano())
	}
	return total
}

// BenchmarkStartStop is what a throwaway server costs a test binary: start,
// one connection, stop. cpu-ms/op counts initdb and postgres too.
func BenchmarkStartStop(b *testing.B) {
	ctx := context.Background()
	before := cpuTime()
	for b.Loop() {
		s, err := Start(ctx, Options{Parent: MemoryDir()})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Exec(ctx, "postgres", "SELECT 1"); err != nil {
			b.Fatal(err)
		}
		if err := s.Stop(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-before).Milliseconds())/float64(b.N), "cpu-ms/op")
}
