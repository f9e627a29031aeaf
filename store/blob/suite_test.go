package blob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store/blob"
	"github.com/fleetcam/fleetcam/store/blob/s3test"
)

// One S3-compatible server (versitygw) serves the package's tests; each
// test gets a bucket of its own.
func TestMain(m *testing.M) { s3test.Main(m) }

// store is what the suite needs of an implementation: the Store, and List
// for `fleetcam store copy -media`.
type store interface {
	blob.Store
	List(ctx context.Context, fn func(key string, size int64) error) error
}

// implementations are the stores the suite runs on; each makes an empty
// store for t. Multipart uploads take parts of 5 MiB on S3.
var implementations = []struct {
	name string
	open func(t *testing.T) store
}{
	{"dir", func(t *testing.T) store {
		d, err := blob.NewDir(filepath.Join(t.TempDir(), "media"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}},
	{"s3", func(t *testing.T) store {
		o := s3test.Bucket(t)
		o.PartSize = 5 << 20
		s, err := blob.NewS3(o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"s3-prefix", func(t *testing.T) store {
		o := s3test.Bucket(t)
		o.Prefix, o.PartSize = "/fleetcam/media/", 5<<20
		s, err := blob.NewS3(o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// TestStoreSuite runs the contract of blob.Store on every implementation:
// a backend is done when this suite passes on it. The implementations run
// side by side, each in stores of its own: most of an S3 test is waiting
// for the server.
func TestStoreSuite(t *testing.T) {
	for _, impl := range implementations {
		t.Run(impl.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range suite {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, impl.open(t)) })
			}
		})
	}
}

var suite = []struct {
	name string
	run  func(t *testing.T, s store)
}{
	{"PutGetReplaceDelete", testPutGetReplaceDelete},
	{"MissingIsNotFound", testMissingIsNotFound},
	{"RefusesUnsafeKeys", testRefusesUnsafeKeys},
	{"RangeRequests", testRangeRequests},
	{"LargeBlobStreamsInParts", testLargeBlob},
	{"FailedPutLeavesNothing", testFailedPutLeavesNothing},
	{"CancelledPutLeavesNothing", testCancelledPut},
	{"ListNamesEveryBlob", testList},
	{"ConcurrentPuts", testConcurrentPuts},
}

const key = "357660101000198/video/1/abc/0123456789abcdef"

func testPutGetReplaceDelete(t *testing.T, s store) {
	ctx := t.Context()
	if n, err := s.Put(ctx, key, strings.NewReader("first")); err != nil || n != 5 {
		t.Fatalf("put: %d %v", n, err)
	}
	if n, err := s.Put(ctx, key, strings.NewReader("second!")); err != nil || n != 7 {
		t.Fatalf("replace: %d %v", n, err)
	}
	if got := read(t, s, key); got != "second!" {
		t.Fatalf("got %q after replace", got)
	}
	if n, err := s.Put(ctx, "empty", strings.NewReader("")); err != nil || n != 0 {
		t.Fatalf("put empty: %d %v", n, err)
	}
	if got := read(t, s, "empty"); got != "" {
		t.Fatalf("empty blob reads %q", got)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func testMissingIsNotFound(t *testing.T, s store) {
	if _, err := s.Get(t.Context(), "never/put"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("get of a missing blob: %v", err)
	}
	if err := s.Delete(t.Context(), "never/put"); err != nil {
		t.Fatalf("delete of a missing blob: %v", err)
	}
}

func testRefusesUnsafeKeys(t *testing.T, s store) {
	for _, k := range []string{"", "../x", "a/../../x", "a//b", "/abs", "a/b c", "a\\b", "a/./b"} {
		if _, err := s.Put(t.Context(), k, strings.NewReader("x")); err == nil {
			t.Errorf("put of key %q accepted", k)
		}
		if _, err := s.Get(t.Context(), k); err == nil || errors.Is(err, blob.ErrNotFound) {
			t.Errorf("get of key %q: %v", k, err)
		}
		if err := s.Delete(t.Context(), k); err == nil {
			t.Errorf("delete of key %q accepted", k)
		}
	}
}

// testRangeRequests serves a blob with http.ServeContent, as the media
// download does, and asks for ranges of it.
func testRangeRequests(t *testing.T, s store) {
	data := pseudoRandom(300 << 10)
	if _, err := s.Put(t.Context(), key, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, err := s.Get(r.Context(), key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer o.Close()
		if o.Size() != int64(len(data)) {
			http.Error(w, fmt.Sprintf("size %d", o.Size()), http.StatusInternalServerError)
			return
		}
		http.ServeContent(w, r, "clip.mp4", time.Unix(0, 0), o)
	}))
	defer srv.Close()
	tests := []struct {
		name, rng  string
		from, to   int // the bytes expected, [from, to)
		wantStatus int
	}{
		{"whole", "", 0, len(data), http.StatusOK},
		{"first bytes", "bytes=0-99", 0, 100, http.StatusPartialContent},
		{"middle", "bytes=100000-200000", 100000, 200001, http.StatusPartialContent},
		{"open end", "bytes=250000-", 250000, len(data), http.StatusPartialContent},
		{"suffix", "bytes=-1000", len(data) - 1000, len(data), http.StatusPartialContent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL, nil)
			if tc.rng != "" {
				req.Header.Set("Range", tc.rng)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus || !bytes.Equal(got, data[tc.from:tc.to]) {
				t.Fatalf("status %d (want %d), %d bytes (want %d, equal %v)", resp.StatusCode, tc.wantStatus,
					len(got), tc.to-tc.from, bytes.Equal(got, data[tc.from:tc.to]))
			}
		})
	}
}

// testLargeBlob stores a blob of more than two parts from a reader that
// gives no size, and reads it back whole and from its last part.
func testLargeBlob(t *testing.T, s store) {
	data := pseudoRandom(12<<20 + 12345)
	n, err := s.Put(t.Context(), key, onlyReader{bytes.NewReader(data)})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("put: %d %v", n, err)
	}
	o, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	h := sha256.New()
	if _, err := io.Copy(h, o); err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) || o.Size() != int64(len(data)) {
		t.Fatalf("the blob read back differs (size %d)", o.Size())
	}
	if _, err := o.Seek(11<<20, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	tail, err := io.ReadAll(o)
	if err != nil || !bytes.Equal(tail, data[11<<20:]) {
		t.Fatalf("read from 11 MiB: %d bytes, %v", len(tail), err)
	}
}

// testFailedPutLeavesNothing: a reader that fails, before the first part
// is full and after it, leaves no blob and keeps the one stored before.
func testFailedPutLeavesNothing(t *testing.T, s store) {
	for _, size := range []int{1000, 6 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			k := fmt.Sprintf("failed/%d", size)
			if _, err := s.Put(t.Context(), k, io.MultiReader(bytes.NewReader(pseudoRandom(size)), failing{})); err == nil {
				t.Fatal("a put whose reader failed succeeded")
			}
			if _, err := s.Get(t.Context(), k); !errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("after a failed put: %v", err)
			}
		})
	}
	if _, err := s.Put(t.Context(), key, strings.NewReader("kept")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(t.Context(), key, io.MultiReader(strings.NewReader("half"), failing{})); err == nil {
		t.Fatal("a failed replace succeeded")
	}
	if got := read(t, s, key); got != "kept" {
		t.Fatalf("a failed replace left %q", got)
	}
	if keys := list(t, s); !slices.Equal(keys, []string{key}) {
		t.Fatalf("after failed puts the store lists %v", keys)
	}
}

func testCancelledPut(t *testing.T, s store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Put(ctx, "k/v", strings.NewReader("data")); err == nil {
		t.Fatal("put with a cancelled context succeeded")
	}
	if _, err := s.Get(t.Context(), "k/v"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("after a cancelled put: %v", err)
	}
}

func testList(t *testing.T, s store) {
	want := []string{"a/b/c", "a/b/d", "a.b", "z"}
	for i, k := range want {
		if _, err := s.Put(t.Context(), k, strings.NewReader(strings.Repeat("x", i))); err != nil {
			t.Fatal(err)
		}
	}
	sizes := map[string]int64{}
	err := s.List(t.Context(), func(k string, size int64) error { sizes[k] = size; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != len(want) {
		t.Fatalf("listed %v, want %v", sizes, want)
	}
	for i, k := range want {
		if got, ok := sizes[k]; !ok || got != int64(i) {
			t.Errorf("%s: listed %v with size %d, want %d", k, ok, got, i)
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := s.List(t.Context(), func(string, int64) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("an error of fn: %v after %d calls", err, calls)
	}
}

func testConcurrentPuts(t *testing.T, s store) {
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := s.Put(t.Context(), fmt.Sprintf("dev/%02d", i), bytes.NewReader(pseudoRandom(64<<10+i)))
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if got := read(t, s, fmt.Sprintf("dev/%02d", i)); got != string(pseudoRandom(64<<10+i)) {
			t.Fatalf("blob %d differs", i)
		}
	}
}

func read(t *testing.T, s blob.Store, k string) string {
	t.Helper()
	o, err := s.Get(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	raw, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(raw)) != o.Size() {
		t.Fatalf("%s: read %d bytes of a blob of size %d", k, len(raw), o.Size())
	}
	return string(raw)
}

func list(t *testing.T, s store) []string {
	t.Helper()
	var keys []string
	if err := s.List(t.Context(), func(k string, _ int64) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// pseudoRandom is n bytes that are the same for the same n. ChaCha8 fills
// them in bulk: a loop that makes one byte at a time takes most of a second
// for the large blobs under the race detector.
func pseudoRandom(n int) []byte {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(n))
	b := make([]byte, n)
	rand.NewChaCha8(seed).Read(b)
	return b
}

// onlyReader hides every method of a reader but Read, so that a store
// cannot learn its size.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// failing is a reader whose every read fails.
type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errors.New("the device's connection broke") }
