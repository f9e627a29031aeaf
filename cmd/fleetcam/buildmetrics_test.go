package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// /metrics names the build and the disk the store and the media use.
func TestBuildAndDiskMetrics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "media", "ab"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "media", "ab", "clip"), make([]byte, 1234), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, testEnv(dir))
	res, err := http.Get("http://" + a.httpAddr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	metrics := string(raw)

	info := regexp.MustCompile(`(?m)^fleetcam_build_info\{goversion="([^"]+)",revision="([^"]+)",version="([^"]+)"\} 1$`).FindStringSubmatch(metrics)
	if info == nil || info[1] != runtime.Version() {
		t.Fatalf("fleetcam_build_info missing or wrong:\n%s", metrics)
	}
	st, err := os.Stat(filepath.Join(dir, storeFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := gauge(t, metrics, "fleetcam_store_file_bytes"); got != float64(st.Size()) || got == 0 {
		t.Errorf("fleetcam_store_file_bytes %v, want the file's %d", got, st.Size())
	}
	if got := gauge(t, metrics, "fleetcam_media_dir_bytes"); got != 1234 {
		t.Errorf("fleetcam_media_dir_bytes %v, want 1234", got)
	}
}

// gauge returns the value of the unlabelled metric name.
func gauge(t *testing.T, metrics, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("no %s in\n%s", name, metrics)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The media directory is walked again only once the interval has passed.
func TestMediaDirSizeIsCached(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Unix(1_700_000_000, 0)
	d := &dirSize{dir: dir, every: time.Minute, now: func() time.Time { return now }}
	os.WriteFile(filepath.Join(dir, "a"), make([]byte, 10), 0o600)
	if got := d.bytes(); got != 10 {
		t.Fatalf("first walk %v, want 10", got)
	}
	os.WriteFile(filepath.Join(dir, "b"), make([]byte, 5), 0o600)
	now = now.Add(59 * time.Second)
	if got := d.bytes(); got != 10 {
		t.Fatalf("within the interval %v, want the cached 10", got)
	}
	now = now.Add(time.Second)
	if got := d.bytes(); got != 15 {
		t.Fatalf("after the interval %v, want 15", got)
	}
}
