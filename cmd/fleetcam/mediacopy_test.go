package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/store/blob"
	"github.com/fleetcam/fleetcam/store/blob/s3test"
)

// runMediaCopy runs fleetcam store copy -media with args, the bucket of o
// reached through FLEETCAM_MEDIA_S3_*, and returns its exit code, stdout
// and stderr.
func runMediaCopy(t *testing.T, o blob.S3Options, args ...string) (int, string, string) {
	t.Helper()
	e := env{"FLEETCAM_MEDIA_S3_ENDPOINT": o.Endpoint, "FLEETCAM_MEDIA_S3_BUCKET": o.Bucket, "FLEETCAM_MEDIA_S3_REGION": o.Region,
		"FLEETCAM_MEDIA_S3_ACCESS_KEY": o.AccessKey, "FLEETCAM_MEDIA_S3_SECRET_KEY": o.SecretKey, "FLEETCAM_MEDIA_S3_PATH_STYLE": "true"}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"store", "copy", "-media"}, args...), e.get, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// fillMedia writes n media files of different sizes under dir, as the
// directory store lays them out, plus an upload in progress.
func fillMedia(t *testing.T, dir string, n int) map[string]string {
	t.Helper()
	d, err := blob.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for i := range n {
		key := fmt.Sprintf("3569381000%04d/video/1/%d/%016x", i%3, 1700000000000+i, i)
		body := strings.Repeat(fmt.Sprint(i), i+1)
		if _, err := d.Put(t.Context(), key, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		files[key] = body
	}
	if err := os.WriteFile(filepath.Join(dir, ".upload-123"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	return files
}

// checkFiles fails unless s holds exactly files.
func checkFiles(t *testing.T, s interface {
	blob.Store
	List(context.Context, func(string, int64) error) error
}, files map[string]string) {
	t.Helper()
	n := 0
	if err := s.List(t.Context(), func(string, int64) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != len(files) {
		t.Fatalf("%d files, want %d", n, len(files))
	}
	for key, body := range files {
		if got := readBlob(t, s, key); got != body {
			t.Fatalf("%s holds %q, want %q", key, got, body)
		}
	}
}

// TestStoreCopyMedia copies a media directory into a bucket, goes on
// after an interrupted copy without copying twice, and copies the bucket
// back into a new directory; each run compares both sides.
func TestStoreCopyMedia(t *testing.T) {
	t.Parallel()
	o := s3test.Bucket(t)
	src := filepath.Join(t.TempDir(), "media")
	files := fillMedia(t, src, 12)
	bucket, err := blob.NewS3(o)
	if err != nil {
		t.Fatal(err)
	}
	// An earlier copy stopped after a third of the files; one of them was
	// written with another size (it is copied again).
	n := 0
	for key, body := range files {
		if n++; n > 4 {
			break
		}
		if n == 1 {
			body = "other bytes"
		}
		if _, err := bucket.Put(t.Context(), key, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runMediaCopy(t, o, "-from", src, "-to", "s3://"+o.Bucket)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"12 files", "3 already in the destination, 9 to copy", "  9 copied"} {
		if !strings.Contains(out, want) {
			t.Errorf("the copy does not say %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^files\s+12\s+12$`).MatchString(out) {
		t.Errorf("the counts of both sides are not 12:\n%s", out)
	}
	checkFiles(t, bucket, files)

	code, out, errOut = runMediaCopy(t, o, "-from", src, "-to", "s3://"+o.Bucket)
	if code != 0 || !strings.Contains(out, "12 already in the destination, 0 to copy") {
		t.Fatalf("the second copy: exit %d: %s%s", code, out, errOut)
	}

	back := filepath.Join(t.TempDir(), "back")
	code, out, errOut = runMediaCopy(t, o, "-from", "s3://"+o.Bucket, "-to", back)
	if code != 0 {
		t.Fatalf("the copy back: exit %d: %s%s", code, out, errOut)
	}
	d, _ := blob.NewDir(back)
	checkFiles(t, d, files)

	prefixed := "s3://" + o.Bucket + "/fleetcam/media"
	if code, out, errOut := runMediaCopy(t, o, "-from", back, "-to", prefixed); code != 0 || !strings.Contains(out, "12 to copy") {
		t.Fatalf("the copy under a prefix: exit %d: %s%s", code, out, errOut)
	}
	po := o
	po.Prefix = "fleetcam/media"
	under, _ := blob.NewS3(po)
	checkFiles(t, under, files)
}

func TestStoreCopyMediaRefusals(t *testing.T) {
	t.Parallel()
	o := s3test.Bucket(t)
	src := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		env  blob.S3Options
		want string
	}{
		{"no -from", []string{"-to", src}, o, "-from is required"},
		{"missing directory", []string{"-from", filepath.Join(src, "none"), "-to", "s3://" + o.Bucket}, o, "must be an existing media directory"},
		{"same directory", []string{"-from", src, "-to", src}, o, "-from and -to name the same media store"},
		{"another scheme", []string{"-from", src, "-to", "gs://media"}, o, "must be a media directory or an s3:// URL"},
		{"no endpoint", []string{"-from", src, "-to", "s3://" + o.Bucket}, blob.S3Options{}, "needs the store's endpoint: media.s3.endpoint"},
		{"missing bucket", []string{"-from", src, "-to", "s3://no-such-bucket"}, o, "does not exist; create it first"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runMediaCopy(t, c.env, c.args...)
			if code != 1 || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stderr %q (want %q), stdout %s", code, errOut, c.want, out)
			}
		})
	}
}

// readBlob reads the blob of key from s.
func readBlob(t *testing.T, s blob.Store, key string) string {
	t.Helper()
	o, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	raw, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
