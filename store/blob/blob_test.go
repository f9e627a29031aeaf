package blob

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDirPutGetDelete(t *testing.T) {
	ctx := context.Background()
	d, err := NewDir(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := d.Put(ctx, "357660101000198/video/1/abc", strings.NewReader("first"))
	if err != nil || n != 5 {
		t.Fatalf("put: %d %v", n, err)
	}
	if _, err := d.Put(ctx, "357660101000198/video/1/abc", strings.NewReader("second!")); err != nil {
		t.Fatal(err)
	}
	o, err := d.Get(ctx, "357660101000198/video/1/abc")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(o)
	o.Close()
	if string(raw) != "second!" || o.Size() != 7 {
		t.Fatalf("got %q size %d", raw, o.Size())
	}
	if err := d.Delete(ctx, "357660101000198/video/1/abc"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, "357660101000198/video/1/abc"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := d.Delete(ctx, "357660101000198/video/1/abc"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func TestDirRefusesUnsafeKeys(t *testing.T) {
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "../x", "a/../../x", "a//b", "/abs", "a/b c", "a\\b"} {
		if _, err := d.Put(context.Background(), key, strings.NewReader("x")); err == nil {
			t.Errorf("key %q accepted", key)
		}
	}
}

func TestDirFailedPutLeavesNothing(t *testing.T) {
	root := t.TempDir()
	d, _ := NewDir(root)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Put(ctx, "k/v", strings.NewReader("data")); err == nil {
		t.Fatal("put with a cancelled context succeeded")
	}
	entries, _ := os.ReadDir(filepath.Join(root, "k"))
	if len(entries) != 0 {
		t.Fatalf("left %d files behind", len(entries))
	}
}
