package store

import (
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
)

// DiskUsage exports, at every scrape, the size of the store's bbolt file and
// the space of the filesystem that holds it: fleetcam_store_file_bytes,
// fleetcam_store_disk_free_bytes and fleetcam_store_disk_size_bytes. A full
// disk fails every commit, so the free space is what an operator alerts on.
type DiskUsage struct {
	path string
	file *prometheus.Desc
	free *prometheus.Desc
	size *prometheus.Desc
}

// NewDiskUsage is the disk usage collector of db; register it on the
// process's registry.
func NewDiskUsage(db *DB) *DiskUsage {
	return &DiskUsage{
		path: db.Path(),
		file: prometheus.NewDesc("fleetcam_store_file_bytes", "Size of the store's bbolt file.", nil, nil),
		free: prometheus.NewDesc("fleetcam_store_disk_free_bytes",
			"Space available to fleetcam on the filesystem of the data directory.", nil, nil),
		size: prometheus.NewDesc("fleetcam_store_disk_size_bytes",
			"Size of the filesystem of the data directory.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (d *DiskUsage) Describe(ch chan<- *prometheus.Desc) {
	ch <- d.file
	ch <- d.free
	ch <- d.size
}

// Collect implements prometheus.Collector. A value that cannot be read is
// left out of the scrape (and its absence is visible) rather than reported
// as zero.
func (d *DiskUsage) Collect(ch chan<- prometheus.Metric) {
	if d.path == "" {
		return // an engine without a local file: the database server's own monitoring covers it
	}
	if st, err := os.Stat(d.path); err == nil {
		ch <- prometheus.MustNewConstMetric(d.file, prometheus.GaugeValue, float64(st.Size()))
	}
	if free, size, err := filesystemSpace(filepath.Dir(d.path)); err == nil {
		ch <- prometheus.MustNewConstMetric(d.free, prometheus.GaugeValue, float64(free))
		ch <- prometheus.MustNewConstMetric(d.size, prometheus.GaugeValue, float64(size))
	}
}
