package cloudapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

func fileLinkPath(imei, fileID, fileType string, camera int) string {
	return devPath(imei, fmt.Sprintf("/event-file-link?fileId=%s&fileType=%s&cameraId=%d", fileID, fileType, camera))
}

func twoCameraFiles(id string) []protocol.File {
	return []protocol.File{{CameraID: 1, FileID: id, FileType: "video"}, {CameraID: 2, FileID: id, FileType: "video"}}
}

func TestEventMediaUploadedAndLinked(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	id := e.report(e.dev, protocol.Event{ID: "acc", Type: "accident", Time: evTime(0), Files: twoCameraFiles("1706745600")})
	// Before the media service ran, nothing is in the cloud yet.
	e.do("GET", fileLinkPath(e.dev.IMEI, "1706745600", "video", 1), e.partnerToken, nil).
		wantError(404, nameNotFound, "not in the cloud yet", "try again")
	e.sweep()
	asked := e.cmd.commands(protocol.CmdUploadMedia)
	if len(asked) != 4 {
		t.Fatalf("%d upload requests, want video and snapshot of two cameras", len(asked))
	}
	var a protocol.UploadArgs
	json.Unmarshal(asked[0].args, &a)
	if a.FileID != "1706745600" || a.URL == "" || a.Expires != e.clock.Now().Add(e.cfg.Media.UploadTTL).Unix() {
		t.Fatalf("upload args %+v", a)
	}
	// Video link: served by fleetcam, the bytes the device uploaded.
	r := e.do("GET", fileLinkPath(e.dev.IMEI, "1706745600", "video", 2), e.partnerToken, nil).want(200)
	link := r.str("data.url")
	if !strings.HasPrefix(link, e.srv.URL+"/v2/media/files/") || r.str("data.expiresAt") != isoTime(e.clock.Now().Add(e.cfg.Media.LinkTTL)) {
		t.Fatalf("link %s", r.raw)
	}
	status, body, hdr := e.fetch(link)
	if status != 200 || string(body) != string(mediaBytes(e.dev.IMEI, 2, "video", "1706745600", 0)) || hdr.Get("Content-Type") != "video/mp4" {
		t.Fatalf("download: %d %q %v", status, body, hdr)
	}
	// Snapshot of the video event: the JPEG of its middle frame.
	snap := e.do("GET", fileLinkPath(e.dev.IMEI, "1706745600", "snapshot", 1), e.partnerToken, nil).want(200)
	status, body, hdr = e.fetch(snap.str("data.url"))
	if _, err := jpeg.Decode(bytes.NewReader(body)); status != 200 || err != nil || hdr.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("snapshot: %d %v %v", status, err, hdr)
	}
	// The event shows its media available, and mediaAvailable went out once.
	ev := e.do("GET", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", id)), e.partnerToken, nil).want(200)
	for _, f := range ev.list("data.files") {
		if !f.(map[string]any)["mediaAvailable"].(bool) {
			t.Fatalf("file not available: %s", ev.raw)
		}
	}
	msgs := e.messages(store.MessageMediaUploaded)
	if len(msgs) != 1 || msgs[0].Event == nil || msgs[0].Event.ID != id {
		t.Fatalf("mediaAvailable messages %v", msgs)
	}
	// Range requests work for players.
	req, _ := http.NewRequest("GET", link, nil)
	req.Header.Set("Range", "bytes=0-5")
	res, err := e.srv.Client().Do(req)
	if err != nil || res.StatusCode != http.StatusPartialContent {
		t.Fatalf("range: %v %v", res, err)
	}
	res.Body.Close()
	// A second sweep asks for nothing more.
	e.sweep()
	if n := len(e.cmd.commands(protocol.CmdUploadMedia)); n != 4 {
		t.Fatalf("%d upload requests after a second sweep", n)
	}
}

func TestMediaLinkExpiresAndCannotBeForged(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	e.report(e.dev, protocol.Event{ID: "b", Type: "button", Time: evTime(0),
		Files: []protocol.File{{CameraID: 1, FileID: "snap1", FileType: "snapshot"}}})
	e.sweep()
	link := e.do("GET", fileLinkPath(e.dev.IMEI, "snap1", "snapshot", 1), e.partnerToken, nil).want(200).str("data.url")
	if status, _, _ := e.fetch(link); status != 200 {
		t.Fatalf("fresh link: %d", status)
	}
	for _, forged := range []string{
		strings.Replace(link, "sig=", "sig=x", 1),
		strings.Replace(link, "/1/snap1", "/2/snap1", 1),
		strings.Replace(link, "exp=", "exp=9", 1),
	} {
		if status, body, _ := e.fetch(forged); status != 403 || !strings.Contains(string(body), "signature") {
			t.Fatalf("forged link %s: %d %s", forged, status, body)
		}
	}
	e.clock.Advance(e.cfg.Media.LinkTTL - time.Second)
	if status, _, _ := e.fetch(link); status != 200 {
		t.Fatalf("link before expiry: %d", status)
	}
	e.clock.Advance(2 * time.Second)
	if status, body, _ := e.fetch(link); status != 403 || !strings.Contains(string(body), "expired") {
		t.Fatalf("expired link: %d %s", status, body)
	}
	// Upload URLs are signed the same way.
	req, _ := http.NewRequest("PUT", e.srv.URL+"/v2/media/upload/"+e.dev.IMEI+"/snapshot/1/snap1?exp=9999999999&sig=abc", strings.NewReader("x"))
	res, err := e.srv.Client().Do(req)
	if err != nil || res.StatusCode != 403 {
		t.Fatalf("unsigned upload: %v %v", res, err)
	}
	res.Body.Close()
}

func TestMediaNeverUploadedPointsToRecordingByTimestamp(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	e.cmd.set(e.dev.IMEI, func(d *fakeDevice) { d.online = false })
	e.report(e.dev, protocol.Event{ID: "x", Type: "jolt", Time: evTime(0), Files: twoCameraFiles("44")})
	for i := 0; i < store.MaxMediaAttempts; i++ {
		e.sweep()
	}
	e.do("GET", fileLinkPath(e.dev.IMEI, "44", "video", 1), e.partnerToken, nil).
		wantError(404, nameNotFound, "never uploaded", "no connection", "/v2/devices/"+e.dev.IMEI+"/virtual-event")
	// The device coming back later does not bring an abandoned file back.
	e.cmd.set(e.dev.IMEI, func(d *fakeDevice) { d.online = true })
	e.sweep()
	if n := len(e.cmd.commands(protocol.CmdUploadMedia)); n != 0 {
		t.Fatalf("%d upload requests after the attempts ran out", n)
	}
	// A device that cannot provide a file says so.
	e.cmd.set(e.dev2.IMEI, func(d *fakeDevice) { d.refuseUploads = true })
	e.report(e.dev2, protocol.Event{ID: "y", Type: "jolt", Time: evTime(0), Files: twoCameraFiles("45")})
	e.sweep()
	e.do("GET", fileLinkPath(e.dev2.IMEI, "45", "video", 2), e.partnerToken, nil).
		wantError(404, nameNotFound, "could not upload", "no longer on the SD card", "virtual-event")
	// Unknown files and bad parameters.
	e.do("GET", fileLinkPath(e.dev.IMEI, "nope", "video", 1), e.partnerToken, nil).wantError(404, nameNotFound, "nope")
	e.do("GET", fileLinkPath(e.dev.IMEI, "44", "audio", 1), e.partnerToken, nil).wantError(400, nameBadRequest, "fileType")
	e.do("GET", fileLinkPath(e.dev.IMEI, "44", "video", 3), e.partnerToken, nil).wantError(400, nameBadRequest, "cameraId")
	e.do("GET", devPath(e.dev.IMEI, "/event-file-link?fileType=video&cameraId=1"), e.partnerToken, nil).wantError(400, nameBadRequest, "fileId")
}

func TestUploadOvertakingItsRequestAndRetries(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	e.cmd.set(e.dev.IMEI, func(d *fakeDevice) { d.holdUploads = true })
	e.report(e.dev, protocol.Event{ID: "h", Type: "button", Time: evTime(0),
		Files: []protocol.File{{CameraID: 1, FileID: "77", FileType: "snapshot"}}})
	e.sweep()
	if n := len(e.cmd.commands(protocol.CmdUploadMedia)); n != 1 {
		t.Fatalf("%d requests", n)
	}
	// The URL is still valid: no new request.
	e.clock.Advance(e.cfg.Media.UploadTTL / 2)
	e.sweep()
	if n := len(e.cmd.commands(protocol.CmdUploadMedia)); n != 1 {
		t.Fatalf("%d requests while the first URL is valid", n)
	}
	// Past the URL's expiry the device is asked again, then the file fails.
	for i := 0; i < store.MaxMediaAttempts; i++ {
		e.clock.Advance(e.cfg.Media.UploadTTL + time.Second)
		e.sweep()
	}
	if n := len(e.cmd.commands(protocol.CmdUploadMedia)); n != store.MaxMediaAttempts {
		t.Fatalf("%d requests, want %d", n, store.MaxMediaAttempts)
	}
	e.do("GET", fileLinkPath(e.dev.IMEI, "77", "snapshot", 1), e.partnerToken, nil).wantError(404, nameNotFound, "did not upload")
}

func TestDeletingAnEventDeletesItsBlobs(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	id := e.report(e.dev, protocol.Event{ID: "d", Type: "button", Time: evTime(0), Files: twoCameraFiles("9")})
	e.sweep()
	if n := len(blobFiles(t, e.cfg.DataDir)); n != 4 {
		t.Fatalf("%d blobs, want 4", n)
	}
	e.do("DELETE", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", id)), e.partnerToken, nil).want(200)
	e.sweep()
	if n := len(blobFiles(t, e.cfg.DataDir)); n != 0 {
		t.Fatalf("%d blobs left after deleting the event", n)
	}
}

func TestEditorWithoutMediaAccess(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	e.report(e.dev, protocol.Event{ID: "1", Type: "button", Time: evTime(0), Files: twoCameraFiles("5")})
	e.sweep()
	tok := e.orgUser(e.org.ID, "nomedia@example.com", store.AccessEditorWithoutMediaAccess)
	for _, req := range []struct{ method, path string }{
		{"GET", fileLinkPath(e.dev.IMEI, "5", "video", 1)},
		{"GET", devPath(e.dev.IMEI, "/recording-ranges")},
		{"POST", devPath(e.dev.IMEI, "/connect-media")},
		{"GET", devPath(e.dev.IMEI, "/adas-calibration-images")},
		{"DELETE", devPath(e.dev.IMEI, "/adas-delete-calibration-images")},
	} {
		e.do(req.method, req.path, tok, nil).wantError(403, nameForbidden, "editorWithoutMediaAccess")
	}
	e.do("POST", devPath(e.dev.IMEI, "/virtual-event"), tok, map[string]any{"time": isoTime(evT0)}).
		wantError(403, nameForbidden, "mediaType none")
	e.do("POST", devPath(e.dev.IMEI, "/virtual-event"), tok, map[string]any{"time": isoTime(evT0), "mediaType": "none"}).want(200)
	// Events themselves stay readable.
	e.do("GET", devPath(e.dev.IMEI, "/events")+window(evT0, evT0.Add(time.Hour)), tok, nil).want(200)
	// An editor with media access gets the link.
	ed := e.orgUser(e.org.ID, "editor@example.com", store.AccessEditor)
	e.do("GET", fileLinkPath(e.dev.IMEI, "5", "video", 1), ed, nil).want(200)
}

// put uploads body to an upload URL and returns the answer.
func (m *mediaEnv) put(url string, body []byte) *response {
	m.t.Helper()
	r, err := m.tryPut(url, body)
	if err != nil {
		m.t.Fatal(err)
	}
	return r
}

// tryPut is put for other goroutines than the test's.
func (m *mediaEnv) tryPut(url string, body []byte) (*response, error) {
	req, err := http.NewRequest("PUT", url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "image/jpeg")
	return m.trySend(req)
}

func TestMediaFileIsWrittenOnce(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	e.report(e.dev, protocol.Event{ID: "btn", Type: "button", Time: evTime(0),
		Files: []protocol.File{{CameraID: 1, FileID: "1706745600", FileType: "snapshot"}}})
	e.sweep() // the device uploads the snapshot
	asked := e.cmd.commands(protocol.CmdUploadMedia)
	if len(asked) != 1 {
		t.Fatalf("%d upload requests", len(asked))
	}
	var a protocol.UploadArgs
	json.Unmarshal(asked[0].args, &a)
	e.put(a.URL, []byte("other bytes")).wantError(http.StatusConflict, nameConflict, "1706745600", "written once")
	link := e.do("GET", fileLinkPath(e.dev.IMEI, "1706745600", "snapshot", 1), e.partnerToken, nil).want(200).str("data.url")
	if status, body, _ := e.fetch(link); status != 200 || !bytes.Equal(body, mediaBytes(e.dev.IMEI, 1, "snapshot", "1706745600", 0)) {
		t.Fatalf("download after a second upload: %d %q", status, body)
	}
}

func TestMediaUploadsAtOnceKeepOne(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	ref := store.MediaRef{IMEI: e.dev.IMEI, CameraID: 1, FileType: store.FileSnapshot, FileID: "1706745601"}
	upload, _ := e.api.uploadURL(ref)
	const n = 8
	type result struct {
		r   *response
		err error
	}
	results := make(chan result, n)
	for i := range n {
		go func() {
			r, err := e.tryPut(upload, testJPEG(fmt.Sprintf("upload %d", i)))
			results <- result{r, err}
		}()
	}
	var won []string
	for range n {
		res := <-results
		if res.err != nil {
			t.Fatal(res.err)
		}
		r := res.r
		switch r.status {
		case http.StatusOK:
			won = append(won, string(r.raw))
		case http.StatusConflict:
		default:
			t.Fatalf("upload answered %d %s", r.status, r.raw)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d uploads stored, want 1", len(won))
	}
	var m *store.MediaFile
	e.db.View(t.Context(), func(tx *store.Tx) error { var err error; m, err = tx.MediaFile(ref); return err })
	download, _ := e.api.signedURL(mediaPath("files", ref), time.Minute)
	status, body, _ := e.fetch(download)
	if status != 200 || m == nil || int64(len(body)) != m.Size || !bytes.Contains(body, []byte("\nupload ")) {
		t.Fatalf("download %d %q, file %+v", status, body, m)
	}
}

func TestUploadMustBeMP4VideoOrJPEGAndServesRanges(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	e.cmd.set(e.dev.IMEI, func(d *fakeDevice) { d.holdUploads = true })
	e.report(e.dev, protocol.Event{ID: "f", Type: "button", Time: evTime(0),
		Files: []protocol.File{{CameraID: 1, FileID: "88", FileType: "video"}}})
	e.sweep()
	urls := map[string]string{}
	for _, c := range e.cmd.commands(protocol.CmdUploadMedia) {
		var a protocol.UploadArgs
		json.Unmarshal(c.args, &a)
		urls[a.FileType] = a.URL
	}
	put := func(url, ctype string, body []byte) (int, string) {
		req, _ := http.NewRequest("PUT", url, bytes.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		r := e.send(req)
		return r.status, string(r.raw)
	}
	mjpeg := append(testJPEG("frame 1"), testJPEG("frame 2")...)
	video := testMP4("clip")
	for _, c := range []struct {
		fileType, ctype string
		body            []byte
		want            string
	}{
		{"video", "video/x-motion-jpeg", mjpeg, "Content-Type must be video/mp4"},
		{"video", "", mjpeg, "MP4"},
		{"video", "video/mp4", []byte("ftyp"), "MP4"},
		{"snapshot", "image/png", testJPEG("s"), "Content-Type must be image/jpeg"},
		{"snapshot", "", video, "JPEG"},
	} {
		if status, body := put(urls[c.fileType], c.ctype, c.body); status != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s upload as %q: %d %s, want 400 naming %q", c.fileType, c.ctype, status, body, c.want)
		}
	}
	e.do("GET", fileLinkPath(e.dev.IMEI, "88", "video", 1), e.partnerToken, nil).wantError(404, nameNotFound, "not in the cloud yet")
	// A device that does not name the type is taken at its bytes' word.
	if status, body := put(urls["video"], "application/octet-stream", video); status != 200 {
		t.Fatalf("video upload: %d %s", status, body)
	}
	link := e.do("GET", fileLinkPath(e.dev.IMEI, "88", "video", 1), e.partnerToken, nil).want(200).str("data.url")
	req, _ := http.NewRequest("GET", link, nil)
	req.Header.Set("Range", "bytes=4-7")
	part := e.send(req)
	if part.status != http.StatusPartialContent || string(part.raw) != "ftyp" || part.header.Get("Content-Type") != "video/mp4" ||
		part.header.Get("Content-Range") != fmt.Sprintf("bytes 4-7/%d", len(video)) || part.header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("range: %d %q %v", part.status, part.raw, part.header)
	}
}
