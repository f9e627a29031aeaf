package cloudapi

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

func TestOrganizationAlbum(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	base := "/v2/organization-album/" + itoa(e.org.ID) + "/album"
	viewer := e.orgUser(e.org.ID, "viewer@fleet.example", store.AccessViewer)
	if r := e.do("GET", base+"/config", viewer, nil).want(http.StatusOK); r.str("albumStatus") != "disabled" {
		t.Fatalf("config before enabling: %s", r.raw)
	}
	e.do("GET", base, e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound, "disabled")

	at := func(d time.Duration) int64 { return e.clock.Now().Add(d).UnixMilli() }
	e.report(e.dev, protocol.Event{ID: "before", Type: "cellPhoneUse", Time: at(-time.Hour),
		Files: []protocol.File{{CameraID: 2, FileID: "old", FileType: "snapshot"}}})
	e.do("POST", base+"/config", e.partnerToken, map[string]any{"albumStatus": "enabled"}).want(http.StatusOK)
	if r := e.do("GET", base+"/config", viewer, nil).want(http.StatusOK); r.str("albumStatus") != "enabled" || r.str("enabledAt") != isoTime(e.clock.Now()) {
		t.Fatalf("config after enabling: %s", r.raw)
	}
	e.report(e.dev, protocol.Event{ID: "a", Type: "cellPhoneUse", Time: at(time.Minute), Files: twoCameraFiles("200")})
	e.report(e.dev2, protocol.Event{ID: "b", Type: "button", Time: at(2 * time.Minute),
		Files: []protocol.File{{CameraID: 2, FileID: "snap9", FileType: "snapshot"}, {CameraID: 1, FileID: "snap9", FileType: "snapshot"}}})
	e.report(e.foreign, protocol.Event{ID: "f", Type: "button", Time: at(3 * time.Minute),
		Files: []protocol.File{{CameraID: 2, FileID: "f1", FileType: "snapshot"}}})
	e.sweep()
	e.clock.Advance(10 * time.Minute)
	imgA, imgB := store.AlbumImageID(e.dev.IMEI, "200"), store.AlbumImageID(e.dev2.IMEI, "snap9")

	ids := func(r *response) []string {
		var out []string
		for i := range r.list("data") {
			out = append(out, r.str("data."+itoa(int64(i))+".id"))
		}
		return out
	}
	r := e.do("GET", base, e.partnerToken, nil).want(http.StatusOK)
	if got := ids(r); !slices.Equal(got, []string{imgB, imgA}) || r.num("metadata.pagination.count") != 2 ||
		r.num("metadata.imageStatusCount.pendingReview") != 2 || r.str("data.1.status") != store.AlbumPendingReview {
		t.Fatalf("album of the host partner: %s", r.raw)
	}
	// The link is the in-cabin snapshot: the middle frame of the video.
	if status, body, hdr := e.fetch(r.str("data.1.url")); status != 200 || len(body) == 0 || hdr.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("image download: %d %v", status, hdr)
	}
	// An organization user sees every partner's devices; the guest partner its own.
	if got := ids(e.do("GET", base, viewer, nil).want(http.StatusOK)); len(got) != 3 {
		t.Fatalf("organization user sees %v", got)
	}
	if got := ids(e.do("GET", base, e.foreignToken, nil).want(http.StatusOK)); !slices.Equal(got, []string{store.AlbumImageID(e.foreign.IMEI, "f1")}) {
		t.Fatalf("guest partner sees %v", got)
	}

	e.do("POST", base+"/status", e.partnerToken, map[string]any{"imageId": imgA, "status": "familiar"}).want(http.StatusOK)
	r = e.do("GET", base+"?status=familiar", e.partnerToken, nil).want(http.StatusOK)
	if got := ids(r); !slices.Equal(got, []string{imgA}) || r.num("metadata.imageStatusCount.familiar") != 1 ||
		r.num("metadata.imageStatusCount.pendingReview") != 1 || r.num("metadata.pagination.count") != 1 {
		t.Fatalf("familiar images: %s", r.raw)
	}
	if got := ids(e.do("GET", base+"?imei="+e.dev2.IMEI, e.partnerToken, nil).want(http.StatusOK)); !slices.Equal(got, []string{imgB}) {
		t.Fatalf("images of device 2: %v", got)
	}
	if got := ids(e.do("GET", base+"?limit=1&offset=1", e.partnerToken, nil).want(http.StatusOK)); !slices.Equal(got, []string{imgA}) {
		t.Fatalf("second page: %v", got)
	}
	window := "?startTime=" + isoTime(e.clock.Now().Add(-8*time.Minute-30*time.Second)) + "&endTime=" + isoTime(e.clock.Now())
	if got := ids(e.do("GET", base+window, e.partnerToken, nil).want(http.StatusOK)); !slices.Equal(got, []string{imgB}) {
		t.Fatalf("images of the window: %v", got)
	}

	for _, bad := range []struct {
		token string
		body  map[string]any
		code  int
		name  string
		frag  string
	}{
		{e.partnerToken, map[string]any{"imageId": imgA, "status": "pendingReview"}, 400, nameBadRequest, "status"},
		{e.partnerToken, map[string]any{"status": "familiar"}, 400, nameBadRequest, "imageId"},
		{e.partnerToken, map[string]any{"imageId": "nope", "status": "familiar"}, 404, nameNotFound, "nope"},
		{e.partnerToken, map[string]any{"imageId": store.AlbumImageID(e.dev.IMEI, "old"), "status": "familiar"}, 404, nameNotFound, "old"},
		{e.partnerToken, map[string]any{"imageId": store.AlbumImageID(e.foreign.IMEI, "f1"), "status": "familiar"}, 404, nameNotFound, "f1"},
		{e.foreignToken, map[string]any{"imageId": imgB, "status": "familiar"}, 403, nameForbidden, ""},
		{viewer, map[string]any{"imageId": imgB, "status": "familiar"}, 403, nameForbidden, ""},
		{e.otherToken, map[string]any{"imageId": imgB, "status": "familiar"}, 404, nameNotFound, ""},
	} {
		e.do("POST", base+"/status", bad.token, bad.body).wantError(bad.code, bad.name, bad.frag)
	}
	e.do("GET", base, e.otherToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("GET", base+"?limit=2001", e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "limit")
	e.do("GET", base+"?status=maybe", e.partnerToken, nil).wantError(http.StatusBadRequest, nameBadRequest, "status")
	e.do("GET", base+"?startTime="+isoTime(e.clock.Now())+"&endTime="+isoTime(e.clock.Now().Add(-time.Hour)), e.partnerToken, nil).
		wantError(http.StatusBadRequest, nameBadRequest, "endTime")
	e.do("GET", base+"?imei="+e.foreign.IMEI, e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound)
	e.do("POST", base+"/config", e.partnerToken, map[string]any{"albumStatus": "paused"}).wantError(http.StatusBadRequest, nameBadRequest, "albumStatus")
	e.do("POST", base+"/config", e.foreignToken, map[string]any{"albumStatus": "disabled"}).wantError(http.StatusForbidden, nameForbidden)
	e.do("POST", base+"/config", viewer, map[string]any{"albumStatus": "disabled"}).wantError(http.StatusForbidden, nameForbidden)
	e.do("GET", base+"/config", e.otherToken, nil).wantError(http.StatusNotFound, nameNotFound)

	// Disabling deletes the reviews: enabled again, every image is pending review.
	e.do("POST", base+"/config", e.partnerToken, map[string]any{"albumStatus": "disabled"}).want(http.StatusOK)
	e.do("GET", base, e.partnerToken, nil).wantError(http.StatusNotFound, nameNotFound, "disabled")
	e.do("POST", base+"/status", e.partnerToken, map[string]any{"imageId": imgA, "status": "familiar"}).wantError(http.StatusNotFound, nameNotFound, "disabled")
	entries, _, err := e.db.AuditLog(t.Context(), store.AuditFilter{Action: "organization.album"}, store.Page{})
	if err != nil || len(entries) != 2 {
		t.Fatalf("album switches audited: %d %v", len(entries), err)
	}
}
