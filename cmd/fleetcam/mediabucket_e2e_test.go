package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/devicesim/mp4"
	"github.com/fleetcam/fleetcam/store/blob"
	"github.com/fleetcam/fleetcam/store/blob/s3test"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// Media in a bucket of an S3-compatible object store (media.s3): a real
// versitygw server of the test binary (store/blob/s3test), a new bucket
// for each test.

// withBucket keeps media in the bucket of o instead of a directory.
func withBucket(o blob.S3Options) func(*configs.Config) {
	return func(c *configs.Config) {
		c.Media.Dir = ""
		c.Media.S3 = configs.MediaS3{Endpoint: o.Endpoint, Bucket: o.Bucket, Region: o.Region, AccessKey: o.AccessKey,
			SecretKey: o.SecretKey, PathStyle: true, PartSizeMB: 5}
	}
}

// bucketFiles lists the objects of the bucket of o.
func bucketFiles(t *testing.T, o blob.S3Options) map[string]int64 {
	t.Helper()
	s, err := blob.NewS3(o)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]int64{}
	if err := s.List(t.Context(), func(k string, size int64) error { files[k] = size; return nil }); err != nil {
		t.Fatal(err)
	}
	return files
}

// redirects is an HTTP client that follows redirects and records where.
type redirects struct {
	http.Client
	hops []*http.Request
}

func newRedirects() *redirects {
	r := &redirects{}
	r.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		r.hops = append(r.hops, req)
		return nil
	}
	return r
}

// getRange GETs link with the Range header rng (none when empty),
// following redirects, and returns the status and body.
func (r *redirects) getRange(t *testing.T, link, rng string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", link, nil)
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	res, err := r.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, body
}

// TestClusterMediaInBucket: three nodes keep media in one bucket and no
// node has a media directory. A dashcam on node-a uploads an event's clip
// through node-a; a partner downloads it through node-b, whole and by a
// range request, following the redirect to a presigned link of the
// object; node-c's link leads to the same bytes; once the organization's
// purge days for the camera have passed, the retention purge removes the
// object from the bucket and the link answers 404.
func TestClusterMediaInBucket(t *testing.T) {
	t.Parallel()
	bucket := s3test.Bucket(t)
	e := startCluster(t, 3, func(c *configs.Config) {
		withBucket(bucket)(c)
		c.Retention.Interval = 200 * time.Millisecond
	})
	imei := e.addDevice("35693810002400", "Truck 24")
	dev, _ := e.simulate(0, imei, stateDir(t))
	eventually(t, "the device connected to node-a", func() bool { return dev.Connected() && e.holder(imei) == "node-a" })
	fileID := emitRoadVideo(t, dev)

	b := e.nodes[1].c
	b.t = t
	link, video := downloadFromBucket(t, b, e.tok, imei, fileID, bucket)
	c := e.nodes[2].c
	c.t = t
	if _, again := newRedirects().getRange(t, fileLink(t, c, e.tok, imei, fileID, "video", roadCamera), ""); !bytes.Equal(again, video) {
		t.Fatal("node-c's link leads to other bytes than node-b's")
	}
	for _, n := range e.nodes {
		if _, err := os.Stat(filepath.Join(n.cfg.DataDir, "media")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s has a media directory: %v", n.id, err)
		}
	}
	a := e.nodes[0].c
	a.t = t
	purgeFromBucket(t, e.pg, a, e.org, e.tok, imei, fileID, link, bucket)
}

// TestClusterProcessesMediaInBucket: TestClusterMediaInBucket on two
// fleetcam processes that are given the bucket in their environment, as a
// deployment gives it, and share no directory: a dashcam uploads an
// event's clip through node-a, a partner downloads it through node-b,
// whole and by a range request, following the redirect to a presigned
// link, and the retention purge removes the object, after which the link
// answers 404.
func TestClusterProcessesMediaInBucket(t *testing.T) {
	t.Parallel()
	bucket := s3test.Bucket(t)
	pc := startProcClusterWith(t, 2, procSetup{media: bucketEnv(bucket), config: "retention:\n  interval: 200ms\n"})
	imei := testIMEIs(t, "35693810002700", 1)[0]
	pc.addDevices([]string{imei})
	a, b := pc.nodes[0], pc.nodes[1]
	dev, _ := simulateAt(t, a.brokerURL(), imei, factoryMasterKey(t), stateDir(t), nil)
	eventually(t, "the device connected to node-a", dev.Connected)
	fileID := emitRoadVideo(t, dev)

	link, _ := downloadFromBucket(t, b.api, pc.tok, imei, fileID, bucket)
	for _, pn := range pc.nodes {
		if _, err := os.Stat(filepath.Join(pn.dir, "media")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s has a media directory: %v", pn.id, err)
		}
	}
	purgeFromBucket(t, pc.pg, a.api, pc.org, pc.tok, imei, fileID, link, bucket)
}

// roadCamera is the camera whose media the purge days of the cluster
// tests cover (purgeDaysFrontCamera).
const roadCamera = 1

// emitRoadVideo has dev report an event, whose files it uploads, and
// returns the id of its video of the road camera.
func emitRoadVideo(t *testing.T, dev *devicesim.Device) string {
	t.Helper()
	ev, err := dev.Emit(t.Context(), devicesim.EventSpec{Type: "deceleration"})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range ev.Files {
		if file.FileType == "video" && file.CameraID == roadCamera {
			return file.FileID
		}
	}
	t.Fatalf("the simulated event carries no video of the road-facing camera: %+v", ev.Files)
	return ""
}

// downloadFromBucket gets the link of the road video fileID through c and
// downloads it as a partner does, whole and by a range request, checking
// that each follows a redirect to a presigned link of the object in
// bucket; it returns the link and the video.
func downloadFromBucket(t *testing.T, c client, tok, imei, fileID string, bucket blob.S3Options) (string, []byte) {
	t.Helper()
	link := fileLink(t, c, tok, imei, fileID, "video", roadCamera)
	if u, err := url.Parse(link); err != nil || "http://"+u.Host != c.base {
		t.Fatalf("the link %s does not lead to the node asked (%s)", link, c.base)
	}
	partner := newRedirects()
	status, video := partner.getRange(t, link, "")
	if status != http.StatusOK {
		t.Fatalf("download through %s: %d %s", c.base, status, video)
	}
	if len(partner.hops) != 1 || !strings.HasPrefix(partner.hops[0].URL.String(), bucket.Endpoint+"/"+bucket.Bucket+"/") {
		t.Fatalf("the download was not redirected to the bucket at %s: %v", bucket.Endpoint, partner.hops)
	}
	if info, err := mp4.Probe(video); err != nil || info.Frames == 0 {
		t.Fatalf("the video downloaded through %s: %+v %v", c.base, info, err)
	}
	partner.hops = nil
	status, part := partner.getRange(t, link, "bytes=8-1031")
	if status != http.StatusPartialContent || !bytes.Equal(part, video[8:1032]) {
		t.Fatalf("range request through %s: %d, %d bytes (equal %v)", c.base, status, len(part), bytes.Equal(part, video[8:min(len(video), 1032)]))
	}
	if len(partner.hops) != 1 || partner.hops[0].Header.Get("Range") != "bytes=8-1031" {
		t.Fatalf("the range did not follow the redirect: %v", partner.hops)
	}
	if files := bucketFiles(t, bucket); len(files) == 0 {
		t.Fatal("the bucket holds no object")
	}
	return link, video
}

// purgeFromBucket lets three days pass for the road video fileID (its age
// in the store at pg is set back) while the organization at org keeps the
// road camera's media for one day (set through c), waits until the
// retention purge has deleted its object from bucket, and checks that the
// file's link and the partner's old link then answer 404.
func purgeFromBucket(t *testing.T, pg string, c client, org, tok, imei, fileID, link string, bucket blob.S3Options) {
	t.Helper()
	for _, table := range []string{"media_files", "media_ages"} {
		if err := pgExec(t, pg, "UPDATE "+table+" SET recorded_at = recorded_at - interval '3 days' WHERE imei = $1 AND file_id = $2",
			imei, fileID); err != nil {
			t.Fatal(err)
		}
	}
	if status, out := c.call("PATCH", org, tok, map[string]any{"purgeDaysFrontCamera": 1}); status != http.StatusOK {
		t.Fatalf("set the purge days: %d %v", status, out)
	}
	storetest.Eventually(t, "the video purged and its object deleted from the bucket", patience, 100*time.Millisecond, func() bool {
		for k := range bucketFiles(t, bucket) {
			if strings.Contains(k, "/video/"+strconv.Itoa(roadCamera)+"/"+fileID+"/") {
				return false
			}
		}
		return true
	})
	status, out := c.call("GET", "/v2/devices/"+imei+"/event-file-link?fileId="+fileID+"&fileType=video&cameraId="+strconv.Itoa(roadCamera), tok, nil)
	if msg, _ := dig(out, "message").(string); status != http.StatusNotFound || !strings.Contains(msg, "purge days") {
		t.Fatalf("the purged video's link: %d %v", status, out)
	}
	if status, _ := newRedirects().getRange(t, link, ""); status != http.StatusNotFound {
		t.Fatalf("the old link of the purged video: %d", status)
	}
}

// TestMediaBucketProxy: the event's media-available webhook comes once
// its files are objects in the bucket; with media.s3.proxy the download
// link answers with the bytes, ranges included, as with a media directory.
func TestMediaBucketProxy(t *testing.T) {
	t.Parallel()
	bucket := s3test.Bucket(t)
	e := startEnv(t, withDevice("35693810002500", "Truck 25"), withConfig(func(c *configs.Config) {
		withBucket(bucket)(c)
		c.Media.S3.Proxy = true
	}), withWebhooks(func(base string) map[string]any {
		return map[string]any{"eventWebhookUrl": []string{base + "/events"}}
	}))
	e.connect(nil)
	e.waitOnline()
	ev, err := e.dev.Emit(t.Context(), devicesim.EventSpec{Type: "deceleration"})
	if err != nil {
		t.Fatal(err)
	}
	e.webhook("the event's media-available webhook", "event", func(b map[string]any) bool { return b["mediaAvailable"] == true })
	objects := bucketFiles(t, bucket)
	for _, f := range ev.Files {
		found := false
		for k, size := range objects {
			found = found || strings.HasPrefix(k, e.imei+"/"+f.FileType+"/"+strconv.Itoa(f.CameraID)+"/"+f.FileID+"/") && size > 0
		}
		if !found {
			t.Fatalf("the webhook said the media is available, and the bucket lacks %s %s: %v", f.FileType, f.FileID, objects)
		}
	}
	f := ev.Files[0]
	link := fileLink(t, e.c, e.tok, e.imei, f.FileID, f.FileType, f.CameraID)
	partner := newRedirects()
	status, whole := partner.getRange(t, link, "")
	if status != http.StatusOK || len(partner.hops) != 0 {
		t.Fatalf("download: %d, redirects %v", status, partner.hops)
	}
	status, part := partner.getRange(t, link, "bytes=4-11")
	if status != http.StatusPartialContent || !bytes.Equal(part, whole[4:12]) || len(partner.hops) != 0 {
		t.Fatalf("range: %d %q, redirects %v", status, part, partner.hops)
	}
	if string(part[:4]) != "ftyp" {
		t.Fatalf("the video's bytes 4-7 are %q, not its ftyp box", part[:4])
	}
}

// TestMediaBucketPublicEndpoint: fleetcam reaches the store at
// 127.0.0.1 and partners at localhost (media.s3.publicEndpoint, the same
// server): the download's redirect leads to localhost, and following it
// returns the video, whole and by a range request.
func TestMediaBucketPublicEndpoint(t *testing.T) {
	t.Parallel()
	bucket := s3test.Bucket(t)
	public := strings.Replace(bucket.Endpoint, "http://127.0.0.1:", "http://localhost:", 1)
	if public == bucket.Endpoint {
		t.Fatalf("the endpoint %s is not on 127.0.0.1", bucket.Endpoint)
	}
	e := startEnv(t, withDevice("35693810002600", "Truck 26"), withConfig(func(c *configs.Config) {
		withBucket(bucket)(c)
		c.Media.S3.PublicEndpoint = public
	}))
	e.connect(nil)
	e.waitOnline()
	ev, err := e.dev.Emit(t.Context(), devicesim.EventSpec{Type: "deceleration"})
	if err != nil {
		t.Fatal(err)
	}
	f := ev.Files[0]
	link := fileLink(t, e.c, e.tok, e.imei, f.FileID, f.FileType, f.CameraID)
	partner := newRedirects()
	status, whole := partner.getRange(t, link, "")
	if status != http.StatusOK || len(whole) == 0 {
		t.Fatalf("download: %d, %d bytes", status, len(whole))
	}
	if len(partner.hops) != 1 || !strings.HasPrefix(partner.hops[0].URL.String(), public+"/"+bucket.Bucket+"/") {
		t.Fatalf("the download was not redirected to the public endpoint %s: %v", public, partner.hops)
	}
	partner.hops = nil
	status, part := partner.getRange(t, link, "bytes=4-11")
	if status != http.StatusPartialContent || !bytes.Equal(part, whole[4:12]) || len(partner.hops) != 1 {
		t.Fatalf("range: %d %q, redirects %v", status, part, partner.hops)
	}
}

// TestStartRefusesUnusableBucket: a bucket fleetcam cannot use stops
// start-up with the settings named, before the data directory is made.
func TestStartRefusesUnusableBucket(t *testing.T) {
	t.Parallel()
	good := s3test.Bucket(t)
	tests := []struct {
		name string
		edit func(o *blob.S3Options)
		want string
	}{
		{"missing bucket", func(o *blob.S3Options) { o.Bucket = "no-such-bucket" }, "does not exist; create it first"},
		{"wrong secret", func(o *blob.S3Options) { o.SecretKey = "not-the-secret-key-0123456789" }, "cannot be reached"},
		{"nothing at the endpoint", func(o *blob.S3Options) { o.Endpoint = "http://" + closedPort(t) }, "cannot be reached"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.edit(&o)
			dir := filepath.Join(t.TempDir(), "data")
			e := testEnv(dir)
			e["FLEETCAM_MEDIA_S3_ENDPOINT"], e["FLEETCAM_MEDIA_S3_BUCKET"] = o.Endpoint, o.Bucket
			e["FLEETCAM_MEDIA_S3_ACCESS_KEY"], e["FLEETCAM_MEDIA_S3_SECRET_KEY"] = o.AccessKey, o.SecretKey
			e["FLEETCAM_MEDIA_S3_REGION"], e["FLEETCAM_MEDIA_S3_PATH_STYLE"] = o.Region, "true"
			var stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			code := run(ctx, nil, e.get, io.Discard, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), "media.s3.endpoint "+o.Endpoint+", media.s3.bucket "+o.Bucket) ||
				!strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("the refused start created the data dir: %v", err)
			}
		})
	}
}

// pgExec runs one statement on the database at url.
func pgExec(t *testing.T, url, stmt string, args ...any) error {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		return err
	}
	defer conn.Close(t.Context())
	_, err = conn.Exec(t.Context(), stmt, args...)
	return err
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return l.Addr().String()
}
