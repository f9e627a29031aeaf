package blob

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDirFailedPutLeavesNothing: besides the suite's rule (no blob), a
// failed put leaves no temporary file behind.
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
