package cloudapi

import (
	"context"
	"fmt"
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// TestPurgedMediaExplainsItself: once the road-facing camera's purge days
// have passed, its files' links answer 404 naming the purge days, the old
// download link is dead, the event and the in-cabin camera's file stay,
// and the media service does not ask the device for the file again.
func TestPurgedMediaExplainsItself(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	id := e.report(e.dev, protocol.Event{ID: "acc", Type: "accident", Time: evTime(0), Files: twoCameraFiles("1706745600")})
	e.sweep()
	link := e.do("GET", fileLinkPath(e.dev.IMEI, "1706745600", "video", 1), e.partnerToken, nil).want(200).str("data.url")

	// The event is four weeks old: past a week for camera 1, within the general 31 days.
	e.do("PATCH", orgPath(e.org.ID, ""), e.partnerToken, map[string]any{"purgeDaysFrontCamera": 7}).want(200)
	res, err := e.db.Purge(context.Background(), e.clock.Now(), store.PurgeSettings{})
	if err != nil || res.Deleted["media"] != 2 || res.Deleted["events"] != 0 {
		t.Fatalf("purge %v %v, want camera 1's video and snapshot", res.Deleted, err)
	}
	for _, typ := range []string{"video", "snapshot"} {
		e.do("GET", fileLinkPath(e.dev.IMEI, "1706745600", typ, 1), e.partnerToken, nil).
			wantError(404, nameNotFound, "deleted from the cloud", "purge days")
	}
	if status, _, _ := e.fetch(link); status != 404 {
		t.Fatalf("download of a purged file: %d", status)
	}
	e.do("GET", fileLinkPath(e.dev.IMEI, "1706745600", "video", 2), e.partnerToken, nil).want(200)
	ev := e.do("GET", devPath(e.dev.IMEI, fmt.Sprintf("/events/%d", id)), e.partnerToken, nil).want(200)
	for _, f := range ev.list("data.files") {
		file := f.(map[string]any)
		if want := file["cameraId"] == float64(2); file["mediaAvailable"] != want {
			t.Fatalf("event files after the purge: %s", ev.raw)
		}
	}
	before := len(e.cmd.commands(protocol.CmdUploadMedia))
	e.sweep()
	if n := len(e.cmd.commands(protocol.CmdUploadMedia)); n != before {
		t.Fatalf("the media service asked again for %d purged files", n-before)
	}
}
