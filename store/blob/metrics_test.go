package blob_test

import (
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetcam/fleetcam/store/blob"
)

// TestObservedCountsByResult: operations are counted by kind and result,
// and a put whose upload broke off is the source's failure, not the
// store's.
func TestObservedCountsByResult(t *testing.T) {
	dir, err := blob.NewDir(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	// A bucket at a port nothing listens on: every operation fails.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	l.Close()
	gone, err := blob.NewS3(blob.S3Options{Endpoint: "http://" + l.Addr().String(), Bucket: "media", Region: "us-east-1", PathStyle: true,
		MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d, err := blob.Observe(dir, "dir", reg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := blob.Observe(gone, "s3", reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	d.Put(ctx, "a", strings.NewReader("clip"))
	d.Put(ctx, "b", io.MultiReader(strings.NewReader("half a clip"), failing{}))
	d.Get(ctx, "a")
	d.Get(ctx, "b")
	d.Delete(ctx, "a")
	s.Put(ctx, "a", strings.NewReader("clip"))
	s.Get(ctx, "a")
	want := map[[3]string]float64{
		{"dir", "put", "ok"}: 1, {"dir", "put", "source_error"}: 1, {"dir", "put", "error"}: 0,
		{"dir", "get", "ok"}: 1, {"dir", "get", "not_found"}: 1, {"dir", "delete", "ok"}: 1,
		{"s3", "put", "error"}: 1, {"s3", "put", "ok"}: 0, {"s3", "get", "error"}: 1,
	}
	for k, n := range want {
		c, err := counter(reg, k)
		if err != nil {
			t.Fatal(err)
		}
		if c != n {
			t.Errorf("store %s, %s %s: %v, want %v", k[0], k[1], k[2], c, n)
		}
	}
	if n := testutil.CollectAndCount(reg, "fleetcam_media_store_operation_duration_seconds"); n != 6 {
		t.Errorf("%d latency series, want one per store and operation", n)
	}
}

// counter reads fleetcam_media_store_operations_total of store, operation
// and result.
func counter(reg *prometheus.Registry, k [3]string) (float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != "fleetcam_media_store_operations_total" {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			want := map[string]string{"store": k[0], "operation": k[1], "result": k[2]}
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue(), nil
		}
	}
	return -1, nil
}
