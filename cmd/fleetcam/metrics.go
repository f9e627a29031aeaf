package main

import (
	"io/fs"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// mediaScanEvery bounds how often a scrape walks the media directory: a
// large media store has many files, and the figure changes slowly.
const mediaScanEvery = time.Minute

// registerProcessMetrics registers what the process is and the disk it
// uses beside the store (store.DiskUsage): fleetcam_build_info and the
// media directory's total file size, when media is in a directory (mediaDir
// not empty).
func registerProcessMetrics(reg prometheus.Registerer, mediaDir string) error {
	version, revision := buildVersion()
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "fleetcam", Name: "build_info",
		Help:        "Always 1; the labels name the running build: module version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()},
	})
	info.Set(1)
	if err := reg.Register(info); err != nil || mediaDir == "" {
		return err
	}
	media := &dirSize{dir: mediaDir, every: mediaScanEvery, now: time.Now}
	mediaBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "fleetcam", Subsystem: "media", Name: "dir_bytes",
		Help: "Total size in bytes of the files in the media directory, measured at most once a minute.",
	}, media.bytes)
	return reg.Register(mediaBytes)
}

// buildVersion returns the module version and VCS revision the binary was
// built from; "unknown" for what the build did not record.
func buildVersion() (version, revision string) {
	version, revision = "unknown", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version, revision
	}
	if bi.Main.Version != "" {
		version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			revision = s.Value
		}
	}
	return version, revision
}

// dirSize is the total size of the files under dir, walked again only
// when the last walk is older than every.
type dirSize struct {
	dir   string
	every time.Duration
	now   func() time.Time

	mu     sync.Mutex
	walked time.Time
	total  int64
}

func (d *dirSize) bytes() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now := d.now(); d.walked.IsZero() || now.Sub(d.walked) >= d.every {
		var total int64
		_ = filepath.WalkDir(d.dir, func(_ string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil // a file removed meanwhile, or an unreadable corner: count the rest
			}
			if info, err := e.Info(); err == nil {
				total += info.Size()
			}
			return nil
		})
		d.total, d.walked = total, now
	}
	return float64(d.total)
}
