package pgserver

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

// show reads one server setting.
func show(t *testing.T, s *Server, name string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A durable server flushes its commits and takes the extra settings; a
// kept one leaves its directory and log after Stop.
func TestDurableServerKeepsCrashSafety(t *testing.T) {
	parent := t.TempDir()
	// The server's user (postgres, when the tests run as root) must reach it.
	for _, d := range []string{filepath.Dir(parent), parent} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Start(context.Background(), Options{Parent: parent, Durable: true, Keep: true,
		Settings: map[string]string{"work_mem": "8MB"}})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(s.Dir())
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
