package pgtest_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestDatabasesAreSeparate starts the shared server, writes in one
// database and finds nothing of it in another.
func TestDatabasesAreSeparate(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.Database(t, ""), pgtest.Database(t, "")
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE marks (n int); INSERT INTO marks VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var exists bool
	if err := cb.QueryRow(ctx, "SELECT to_regclass('marks') IS NOT NULL").Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatal("a table made in one test database is in another")
	}
	var n int
	if err := ca.QueryRow(ctx, "SELECT n FROM marks").Scan(&n); err != nil || n != 7 {
		t.Fatalf("read back %d, %v; want 7", n, err)
	}
}

// TestTemplateCopies prepares a template once and finds what it made in
// each database copied from it.
func TestTemplateCopies(t *testing.T) {
	ctx := context.Background()
	runs := 0
	prepare := func(url string) error {
		runs++
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "CREATE TABLE seeded (n int); INSERT INTO seeded VALUES (42)")
		return err
	}
	for i := 0; i < 2; i++ {
		pgtest.Template(t, "seeded_template", prepare)
		conn, err := pgx.Connect(ctx, pgtest.Database(t, "seeded_template"))
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = conn.QueryRow(ctx, "SELECT n FROM seeded").Scan(&n)
		conn.Close(ctx)
		if err != nil || n != 42 {
			t.Fatalf("copy %d read %d, %v; want 42", i, n, err)
		}
	}
	if runs != 1 {
		t.Fatalf("prepare ran %d times; want once", runs)
	}
}

// TestDatabaseIsDroppedAfterItsTest: a test's database goes once the test
// has ended, in the background.
func TestDatabaseIsDroppedAfterItsTest(t *testing.T) {
	ctx := context.Background()
	var name string
	t.Run("user", func(t *testing.T) {
		u, err := url.Parse(pgtest.Database(t, ""))
		if err != nil {
			t.Fatal(err)
		}
		name = strings.TrimPrefix(u.Path, "/")
	})
	conn, err := pgx.Connect(ctx, pgtest.Shared(t).URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if !exists {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("database %s still exists a minute after its test ended", name)
		}
	}
}

// TestStopEndsTheServer stops a server of its own and finds its port closed.
func TestStopEndsTheServer(t *testing.T) {
	ctx := context.Background()
	s, err := pgtest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		s.Stop()
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if conn, err := pgx.Connect(ctx, s.URL("postgres")); err == nil {
		conn.Close(ctx)
		t.Fatal("the server still accepts connections after Stop")
	}
}
