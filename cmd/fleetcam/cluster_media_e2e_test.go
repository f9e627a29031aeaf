package main

import (
	"net/url"
	"testing"

	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/devicesim/mp4"
)

// TestClusterSharedMedia: the video of an event of a device on node A,
// uploaded to node A, is downloaded through node B: the nodes keep their
// media in the one directory they share (media.dir).
func TestClusterSharedMedia(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 2, nil)
	imei := e.addDevice("35693810002300", "Truck 23")
	dev, _ := e.simulate(0, imei, stateDir(t))
	eventually(t, "the device connected to node-a", func() bool { return dev.Connected() && e.holder(imei) == "node-a" })
	ev, err := dev.Emit(t.Context(), devicesim.EventSpec{Type: "deceleration"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Files) == 0 {
		t.Fatal("the simulated event carries no files")
	}
	f := ev.Files[0]
	b := e.nodes[1].c
	b.t = t
	link := fileLink(t, b, e.tok, imei, f.FileID, "video", f.CameraID)
	if u, err := url.Parse(link); err != nil || "http://"+u.Host != b.base {
		t.Fatalf("the link %s does not lead to node-b (%s)", link, b.base)
	}
	video := mediaFile(t, b, e.tok, imei, f.FileID, "video", f.CameraID)
	if info, err := mp4.Probe(video); err != nil || info.Frames == 0 {
		t.Fatalf("the video downloaded through node-b: %+v %v", info, err)
	}
}
