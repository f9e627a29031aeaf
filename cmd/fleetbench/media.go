package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/store/blob"
	"github.com/fleetcam/fleetcam/store/blob/s3test"
)

// The media part: devices upload clips through fleetcam's signed upload
// URL, then partners download them through signed file links, once with
// media in a directory (the default) and once in a bucket of an
// S3-compatible server (versitygw, started by store/blob/s3test), where a
// download is a redirect to a presigned link of the object. Every device
// uploads its clips one after the other, all devices at once; then every
// clip is downloaded, as many at once as there are devices.
type mediaScale struct {
	devices, clipsPerDevice, clipBytes int
}

var (
	mediaFull  = mediaScale{devices: 100, clipsPerDevice: 5, clipBytes: 1 << 20}
	mediaQuick = mediaScale{devices: 10, clipsPerDevice: 1, clipBytes: 64 << 10}
)

// mediaRun is what one store's run measured.
type mediaRun struct {
	store             string
	key               string        // of the figures: dir or s3
	up, down          time.Duration // wall time of all uploads, all downloads
	upLat, downLat    latency
	uploaded, fetched int64 // bytes
	redirected, clips int
}

func (b *bench) media(ctx context.Context) error {
	sc := mediaFull
	if b.o.quick {
		sc = mediaQuick
	}
	fl, err := b.seeded(ctx, "media", sc.devices)
	if err != nil {
		return err
	}
	defer b.dropStorage(ctx, fl.st)
	t := &table{title: fmt.Sprintf("8. Media: %d devices upload %d clips of %d KiB each through fleetcam, then every clip is downloaded by its link",
		sc.devices, sc.clipsPerDevice, sc.clipBytes>>10),
		cols: []string{"store", "uploads/s", "upload MB/s", "upload p50", "upload p99", "downloads/s", "download MB/s", "download p50", "download p99", "redirected"}}
	var runs []mediaRun
	dirRun, err := b.mediaOn(ctx, fl, sc, "directory", "dir", nil)
	if err != nil {
		return err
	}
	runs = append(runs, dirRun)
	gw, err := s3test.Start(ctx)
	if err != nil {
		t.note("S3: not measured: %v", err)
	} else {
		defer gw.Stop()
		o := gw.Options("fleetbench-media")
		s3, err := blob.NewS3(o)
		if err == nil {
			err = s3.CreateBucket(ctx)
		}
		if err != nil {
			return err
		}
		s3Run, err := b.mediaOn(ctx, fl, sc, "S3 (versitygw)", "s3", &o)
		if err != nil {
			return err
		}
		runs = append(runs, s3Run)
	}
	for _, r := range runs {
		upMB := float64(r.uploaded) / 1e6 / r.up.Seconds()
		downMB := float64(r.fetched) / 1e6 / r.down.Seconds()
		t.add(r.store, num(float64(r.clips)/r.up.Seconds()), num(upMB), msf(r.upLat.p50), msf(r.upLat.p99),
			num(float64(r.clips)/r.down.Seconds()), num(downMB), msf(r.downLat.p50), msf(r.downLat.p99), strconv.Itoa(r.redirected))
		b.rep.figure("media", r.key+"_clips", float64(r.clips), "clips")
		b.rep.figure("media", r.key+"_upload_mb_per_s", upMB, "MB/s")
		b.rep.figure("media", r.key+"_download_mb_per_s", downMB, "MB/s")
		b.rep.figure("media", r.key+"_upload_p99", ms(r.upLat.p99), "ms")
		b.rep.figure("media", r.key+"_download_p99", ms(r.downLat.p99), "ms")
		b.rep.figure("media", r.key+"_redirected", float64(r.redirected), "downloads")
	}
	t.note("an upload is one PUT of a clip to its signed upload URL until fleetcam answered (stored and recorded);")
	t.note("a download is one GET of the clip's signed link, following a redirect to the store when there is one, until the last byte")
	t.note("fleetcam, the S3 gateway and the clients share this machine's cores")
	b.rep.table(t)
	return nil
}

// mediaOn starts fleetcam on a copy of fl's store with media in a
// directory (s3 nil) or in the bucket of s3, and measures uploads and
// downloads.
func (b *bench) mediaOn(ctx context.Context, fl *fleet, sc mediaScale, name, key string, s3 *blob.S3Options) (mediaRun, error) {
	run := mediaRun{store: name, key: key}
	st, err := b.copyStorage(ctx, fl.st, "media-run")
	if err != nil {
		return run, err
	}
	defer b.dropStorage(ctx, st)
	srv, err := startServer(ctx, serverOptions{bin: b.o.fleetcam, dataDir: st.dataDir, postgresURL: st.pgURL, maxConns: b.sc.pgMaxConns,
		logPath: st.dataDir + ".log", commitDelay: b.o.commitDelay, mediaS3: s3})
	if err != nil {
		return run, err
	}
	defer srv.stop()
	signing, _ := hex.DecodeString(benchSigningKey)
	links := mediaLinks{key: mediaLinkKey(signing), base: "http://" + srv.http}
	clip := make([]byte, sc.clipBytes)
	copy(clip, "\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2")
	r := rand.New(rand.NewPCG(1, 2))
	for i := 28; i < len(clip); i++ {
		clip[i] = byte(r.Uint32())
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sc.devices}}
	var mu sync.Mutex
	var lat []time.Duration
	var errs []error
	record := func(d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			return
		}
		lat = append(lat, d)
	}
	fileID := func(d, c int) string { return fmt.Sprintf("bench-%03d-%02d", d, c) }

	began := time.Now()
	var wg sync.WaitGroup
	for d, imei := range fl.imeis {
		wg.Go(func() {
			for c := range sc.clipsPerDevice {
				t0 := time.Now()
				err := upload(ctx, client, links.sign("upload", imei, fileID(d, c)), clip)
				record(time.Since(t0), err)
			}
		})
	}
	wg.Wait()
	run.up, run.upLat = time.Since(began), percentiles(lat)
	run.clips, run.uploaded = len(lat), int64(len(lat)*len(clip))
	if len(errs) > 0 {
		return run, fmt.Errorf("%s: %d uploads failed, the first: %w", name, len(errs), errs[0])
	}

	lat = nil
	var redirected, fetched int64
	began = time.Now()
	for d, imei := range fl.imeis {
		wg.Go(func() {
			for c := range sc.clipsPerDevice {
				t0 := time.Now()
				n, hops, err := download(ctx, client, links.sign("files", imei, fileID(d, c)))
				if err == nil && n != int64(len(clip)) {
					err = fmt.Errorf("downloaded %d bytes of a clip of %d", n, len(clip))
				}
				record(time.Since(t0), err)
				mu.Lock()
				fetched += n
				redirected += int64(hops)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	run.down, run.downLat, run.fetched, run.redirected = time.Since(began), percentiles(lat), fetched, int(redirected)
	if len(errs) > 0 {
		return run, fmt.Errorf("%s: %d downloads failed, the first: %w", name, len(errs), errs[0])
	}
	fmt.Fprintf(b.log, "  %s: %d clips up in %s, down in %s\n", name, run.clips, run.up.Round(time.Millisecond), run.down.Round(time.Millisecond))
	return run, nil
}

// mediaLinks signs media URLs as fleetcam does (cloudapi/media.go), with
// the key the bench gives it, so that the bench can upload without a
// device asking for an upload and download without an event.
type mediaLinks struct {
	key  []byte
	base string
}

// mediaLinkKey derives fleetcam's media link key from its signing key.
func mediaLinkKey(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("fleetcam media links\x00"))
	return m.Sum(nil)
}

// sign returns the signed URL of a road-camera video of imei under kind
// (upload or files), valid ten minutes.
func (l mediaLinks) sign(kind, imei, fileID string) string {
	path := "/v2/media/" + kind + "/" + imei + "/video/1/" + fileID
	exp := strconv.FormatInt(time.Now().Add(10*time.Minute).Unix(), 10)
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte(path + "\n" + exp))
	q := url.Values{"exp": {exp}, "sig": {base64.RawURLEncoding.EncodeToString(m.Sum(nil))}}
	return l.base + path + "?" + q.Encode()
}

func upload(ctx context.Context, client *http.Client, u string, clip []byte) error {
	req, err := http.NewRequestWithContext(ctx, "PUT", u, bytes.NewReader(clip))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "video/mp4")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("upload: %d %s", res.StatusCode, body)
	}
	return nil
}

// download GETs u, following redirects, and returns the bytes read and
// how many redirects it followed.
func download(ctx context.Context, client *http.Client, u string) (int64, int, error) {
	hops := 0
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { hops++; return nil }
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return 0, 0, err
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, hops, err
	}
	defer res.Body.Close()
	n, err := io.Copy(io.Discard, res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = errors.New("download: " + res.Status)
	}
	return n, hops, err
}
