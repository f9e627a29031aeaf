package store_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
)

func TestDiskUsageMetrics(t *testing.T) {
	t.Parallel()
	storetest.Use(t, "bbolt") // the store's file
	path := filepath.Join(t.TempDir(), "fleetcam.db")
	db := storetest.Open(t, storetest.WithPath(path))
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewDiskUsage(db))
	gauges := func() map[string]float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			got[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
		}
		return got
	}

	got := gauges()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got["fleetcam_store_file_bytes"] != float64(st.Size()) || st.Size() == 0 {
		t.Errorf("fleetcam_store_file_bytes %v, the file has %d bytes", got["fleetcam_store_file_bytes"], st.Size())
	}
	free, size := got["fleetcam_store_disk_free_bytes"], got["fleetcam_store_disk_size_bytes"]
	if free <= 0 || size <= 0 || free > size {
		t.Errorf("disk free %v of %v bytes", free, size)
	}

	// A file that cannot be read is left out, not reported as empty.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if v, ok := gauges()["fleetcam_store_file_bytes"]; ok {
		t.Errorf("fleetcam_store_file_bytes %v for a missing file", v)
	}
}
