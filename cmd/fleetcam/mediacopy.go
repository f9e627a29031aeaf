package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store/blob"
)

// mediaCopyUsage is the one line of `fleetcam store copy -media`'s usage.
const mediaCopyUsage = "usage: fleetcam store copy -media -from DIR|s3://BUCKET[/PREFIX] -to DIR|s3://BUCKET[/PREFIX] [-config FILE]"

// mediaCopyWorkers is how many files are copied at once.
const mediaCopyWorkers = 4

// mediaStore is a media store named on the command line: a directory or
// a bucket.
type mediaStore interface {
	blob.Store
	List(ctx context.Context, fn func(key string, size int64) error) error
	String() string
}

// mediaCommand runs `fleetcam store copy -media`: it copies every media
// file of one store that another lacks (by name and size), so that a copy
// that stopped goes on where it stopped when run again, then compares the
// files of both sides.
func mediaCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fleetcam store copy -media", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Bool("media", true, "copy media files, not records")
	from := fs.String("from", "", "the media to copy: a directory or s3://BUCKET[/PREFIX]")
	to := fs.String("to", "", "where to copy it: a directory or s3://BUCKET[/PREFIX]")
	configPath := fs.String("config", "", "YAML configuration whose media.s3 settings (endpoint, region, keys) reach the bucket")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("store copy -media: %w (%s)", err, mediaCopyUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("store copy -media: unexpected %q (%s)", fs.Arg(0), mediaCopyUsage)
	}
	var cfg *configs.Config
	loadConfig := func() (configs.Config, error) {
		if cfg == nil {
			c, err := configs.Load(*configPath, getenv)
			if err != nil {
				return c, err
			}
			cfg = &c
		}
		return *cfg, nil
	}
	src, err := openMediaLocation(ctx, "-from", *from, loadConfig)
	if err != nil {
		return err
	}
	dst, err := openMediaLocation(ctx, "-to", *to, loadConfig)
	if err != nil {
		return err
	}
	if src.String() == dst.String() {
		return fmt.Errorf("-from and -to name the same media store (%s)", src)
	}
	return copyMedia(ctx, src, dst, stdout)
}

// openMediaLocation opens the value v of flag name: s3://BUCKET[/PREFIX],
// reached with the media.s3 settings of the configuration (file and
// FLEETCAM_MEDIA_S3_*), or else a directory, which must exist.
func openMediaLocation(ctx context.Context, name, v string, load func() (configs.Config, error)) (mediaStore, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("%s is required: a media directory (such as data/media) or s3://BUCKET[/PREFIX] (%s)", name, mediaCopyUsage)
	}
	if !strings.HasPrefix(v, "s3://") {
		if strings.Contains(v, "://") {
			return nil, fmt.Errorf("%s must be a media directory or an s3:// URL (%s)", name, mediaCopyUsage)
		}
		abs, err := filepath.Abs(v)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", name, v, err)
		}
		if st, err := os.Stat(abs); name == "-from" && (err != nil || !st.IsDir()) {
			return nil, fmt.Errorf("-from %s must be an existing media directory (such as data/media)", v)
		}
		d, err := blob.NewDir(abs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return d, nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s %s must be s3://BUCKET or s3://BUCKET/PREFIX", name, v)
	}
	cfg, err := load()
	if err != nil {
		return nil, err
	}
	if cfg.Media.S3.Endpoint == "" {
		return nil, fmt.Errorf("%s %s needs the store's endpoint: media.s3.endpoint in -config FILE or FLEETCAM_MEDIA_S3_ENDPOINT, "+
			"with its keys (media.s3.accessKey and secretKey, or FLEETCAM_MEDIA_S3_ACCESS_KEY and FLEETCAM_MEDIA_S3_SECRET_KEY)", name, v)
	}
	o := s3Options(cfg.Media.S3)
	o.Bucket, o.Prefix = u.Host, strings.Trim(u.Path, "/")
	s3, err := blob.NewS3(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, mediaCheckTimeout)
	defer cancel()
	if err := s3.Check(cctx); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s3, nil
}

// mediaCount is the files and bytes of one side of a media copy.
type mediaCount struct {
	files, bytes int64
}

// copyMedia copies the files of src that dst lacks, or holds with another
// size, and compares both sides afterwards: every file of src must be in
// dst with its size; dst may hold more.
func copyMedia(ctx context.Context, src, dst mediaStore, stdout io.Writer) error {
	fmt.Fprintf(stdout, "copying the media files of %s into %s\n", src, dst)
	have := map[string]int64{}
	if err := dst.List(ctx, func(k string, size int64) error { have[k] = size; return nil }); err != nil {
		return err
	}
	type file struct {
		key  string
		size int64
	}
	var todo []file
	var source mediaCount
	if err := src.List(ctx, func(k string, size int64) error {
		source.files++
		source.bytes += size
		if got, ok := have[k]; !ok || got != size {
			todo = append(todo, file{k, size})
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  %d files (%d bytes) in the source, %d already in the destination, %d to copy\n",
		source.files, source.bytes, source.files-int64(len(todo)), len(todo))
	var copied atomic.Int64
	var mu sync.Mutex
	var errs []error
	work := make(chan file)
	var wg sync.WaitGroup
	for range mediaCopyWorkers {
		wg.Go(func() {
			for f := range work {
				if err := copyOne(ctx, src, dst, f.key, f.size); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				if n := copied.Add(1); n%1000 == 0 {
					fmt.Fprintf(stdout, "  %d of %d copied\n", n, len(todo))
				}
			}
		})
	}
	for _, f := range todo {
		if ctx.Err() != nil {
			break
		}
		work <- f
	}
	close(work)
	wg.Wait()
	fmt.Fprintf(stdout, "  %d copied\n", copied.Load())
	if len(errs) > 0 {
		return fmt.Errorf("%d files could not be copied (run the same command again to copy the rest), the first: %w", len(errs), errs[0])
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The comparison reads the destination again: what it holds now, not
	// what the copy believes it wrote.
	have = map[string]int64{}
	if err := dst.List(ctx, func(k string, size int64) error { have[k] = size; return nil }); err != nil {
		return err
	}
	var dest mediaCount
	var missing []string
	if err := src.List(ctx, func(k string, size int64) error {
		if got, ok := have[k]; ok && got == size {
			dest.files++
			dest.bytes += size
		} else if len(missing) < 5 {
			missing = append(missing, k)
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-24s %12s %12s\n", "media", "source", "destination")
	fmt.Fprintf(stdout, "%-24s %12d %12d%s\n", "files", source.files, dest.files, differs(source.files, dest.files))
	fmt.Fprintf(stdout, "%-24s %12d %12d%s\n", "bytes", source.bytes, dest.bytes, differs(source.bytes, dest.bytes))
	if dest.files != source.files || len(missing) > 0 {
		return fmt.Errorf("the destination lacks files of the source (such as %s), or they changed meanwhile: run the same command again",
			strings.Join(missing, ", "))
	}
	fmt.Fprintf(stdout, "%s now holds every media file of %s.\n", dst, src)
	return nil
}

func differs(a, b int64) string {
	if a != b {
		return "  differs"
	}
	return ""
}

// copyOne copies the file key of size bytes from src to dst. A file
// deleted from src meanwhile (the media trash of a running fleetcam) is
// not an error.
func copyOne(ctx context.Context, src, dst blob.Store, key string, size int64) error {
	o, err := src.Get(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer o.Close()
	n, err := dst.Put(ctx, key, o)
	if err != nil {
		return err
	}
	if n != size && n != o.Size() {
		return fmt.Errorf("%s: copied %d bytes of %d", key, n, size)
	}
	return nil
}
