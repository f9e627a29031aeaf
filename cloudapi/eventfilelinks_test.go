package cloudapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

func TestEventFileLinks(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	id := e.report(e.dev, protocol.Event{ID: "acc", Type: "accident", Time: evTime(0), Files: twoCameraFiles("1706745600")})
	byFile := devPath(e.dev.IMEI, "/event-file-links?fileId=1706745600&fileType=video&cameraIds=1,2")
	byEvent := devPath(e.dev.IMEI, fmt.Sprintf("/event-file-links?eventId=%d", id))
	// Before the upload no camera has a link: the answer is the reason.
	e.do("GET", byFile, e.partnerToken, nil).wantError(404, nameNotFound, "not in the cloud yet")
	e.sweep()

	r := e.do("GET", byFile, e.partnerToken, nil).want(200)
	if len(r.list("data.urls")) != 2 || r.num("data.urls.1.cameraId") != 2 || r.str("data.urls.1.error") != "" {
		t.Fatalf("links by file: %s", r.raw)
	}
	// The link is the one event-file-link gives: the camera's bytes.
	status, body, _ := e.fetch(r.str("data.urls.1.url"))
	if status != 200 || string(body) != string(mediaBytes(e.dev.IMEI, 2, "video", "1706745600", 0)) {
		t.Fatalf("download of camera 2: %d %q", status, body)
	}
	r = e.do("GET", byEvent, e.orgUser(e.org.ID, "viewer@fleet.example", store.AccessViewer), nil).want(200)
	if len(r.list("data.urls")) != 2 || !strings.Contains(r.str("data.urls.0.url"), "/video/1/1706745600") {
		t.Fatalf("links by event: %s", r.raw)
	}
	r = e.do("GET", byEvent+"&fileType=snapshot&cameraIds=2", e.partnerToken, nil).want(200)
	if len(r.list("data.urls")) != 1 || !strings.Contains(r.str("data.urls.0.url"), "/snapshot/2/1706745600") {
		t.Fatalf("snapshot of camera 2 by event: %s", r.raw)
	}
	// A camera without the file says why beside the others' links.
	r = e.do("GET", devPath(e.dev.IMEI, "/event-file-links?fileId=1706745600&fileType=video&cameraIds=1,50"), e.partnerToken, nil).want(200)
	if r.str("data.urls.0.url") == "" || r.num("data.urls.1.cameraId") != 50 || r.str("data.urls.1.url") != "" ||
		!strings.Contains(r.str("data.urls.1.error"), "camera 50") {
		t.Fatalf("links with a missing camera: %s", r.raw)
	}

	e.do("GET", devPath(e.dev.IMEI, "/event-file-links?fileType=video&cameraIds=1"), e.partnerToken, nil).wantError(400, nameBadRequest, "fileId")
	e.do("GET", devPath(e.dev.IMEI, "/event-file-links?fileId=1706745600&cameraIds=1"), e.partnerToken, nil).wantError(400, nameBadRequest, "fileType")
	e.do("GET", devPath(e.dev.IMEI, "/event-file-links?fileId=1706745600&fileType=video"), e.partnerToken, nil).wantError(400, nameBadRequest, "cameraIds")
	e.do("GET", devPath(e.dev.IMEI, "/event-file-links?fileId=1706745600&fileType=video&cameraIds=1,7"), e.partnerToken, nil).
		wantError(400, nameBadRequest, "cameraIds")
	e.do("GET", byEvent+"&conceal=true", e.partnerToken, nil).wantError(400, nameBadRequest, "conceal")
	e.do("GET", devPath(e.dev.IMEI, "/event-file-links?eventId=x"), e.partnerToken, nil).wantError(400, nameBadRequest, "eventId")
	e.do("GET", devPath(e.dev2.IMEI, fmt.Sprintf("/event-file-links?eventId=%d", id)), e.partnerToken, nil).wantError(404, nameNotFound, "event")
	e.do("GET", byFile, e.foreignToken, nil).wantError(404, nameNotFound)
	e.do("GET", byEvent, e.otherToken, nil).wantError(404, nameNotFound)
}
