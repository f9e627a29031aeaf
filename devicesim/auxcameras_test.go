package devicesim

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// statusWith waits for a status from imei that match accepts.
func statusWith(t *testing.T, c *fakeCloud, imei string, match func(protocol.Status) bool) protocol.Status {
	t.Helper()
	m := c.msg(t, imei, protocol.TopicStatus, func(m cloudMsg) bool {
		var s protocol.Status
		return json.Unmarshal(m.Payload, &s) == nil && match(s)
	})
	var s protocol.Status
	_ = json.Unmarshal(m.Payload, &s)
	return s
}

// camera returns the camera with id in s, if listed.
func camera(s protocol.Status, id int) (protocol.Camera, bool) {
	i := slices.IndexFunc(s.Cameras, func(c protocol.Camera) bool { return c.ID == id })
	if i < 0 {
		return protocol.Camera{}, false
	}
	return s.Cameras[i], true
}

func TestAuxCameraCommands(t *testing.T) {
	cloud := newFakeCloud(t)
	imei := mustIMEI(t, 12)
	o := testOptions(cloud, imei)
	o.StateDir = t.TempDir()
	d := startDevice(t, o)
	cloud.msg(t, imei, protocol.TopicStatus, nil)
	cmd := func(name string, args any) protocol.Reply {
		r, _ := cloud.command(t, imei, true, name, args)
		return r
	}
	nearby := d.NearbyAuxCameras()
	if len(nearby) != nearbyAuxCameras || nearby[0].Kind != "wired" || nearby[1].Kind != "wifi" {
		t.Fatalf("nearby cameras %+v", nearby)
	}

	found := result[protocol.AuxCamerasResult](t, cmd(protocol.CmdAuxSearch, protocol.AuxSearchArgs{Limit: 2}))
	if len(found.Cameras) != 2 || found.Cameras[0].SSID != nearby[0].SSID || found.Cameras[0].CameraID != 0 {
		t.Fatalf("search found %+v", found.Cameras)
	}

	paired := result[protocol.AuxCamerasResult](t, cmd(protocol.CmdAuxPair, protocol.AuxPairArgs{SSIDs: []string{nearby[1].SSID, nearby[0].SSID}}))
	want := []protocol.AuxCameraInfo{
		{CameraID: 50, SSID: nearby[1].SSID, SerialNumber: nearby[1].SerialNumber, Kind: "wifi"},
		{CameraID: 51, SSID: nearby[0].SSID, SerialNumber: nearby[0].SerialNumber, Kind: "wired"},
	}
	if !slices.Equal(paired.Cameras, want) {
		t.Fatalf("paired %+v, want %+v", paired.Cameras, want)
	}
	statusWith(t, cloud, imei, func(s protocol.Status) bool {
		c50, ok50 := camera(s, 50)
		c51, ok51 := camera(s, 51)
		return ok50 && ok51 && c50.Connected && c50.Kind == "wifi" && c50.SerialNumber == nearby[1].SerialNumber && c51.Kind == "wired"
	})
	// Paired cameras are no longer found; pairing again keeps the id.
	found = result[protocol.AuxCamerasResult](t, cmd(protocol.CmdAuxSearch, protocol.AuxSearchArgs{Limit: 8}))
	if len(found.Cameras) != 2 || found.Cameras[0].SSID != nearby[2].SSID {
		t.Fatalf("search after pairing found %+v", found.Cameras)
	}
	again := result[protocol.AuxCamerasResult](t, cmd(protocol.CmdAuxPair, protocol.AuxPairArgs{SSIDs: []string{nearby[0].SSID}}))
	if len(again.Cameras) != 1 || again.Cameras[0].CameraID != 51 {
		t.Fatalf("pairing again %+v", again.Cameras)
	}

	// Unplugging and plugging in is published.
	if err := d.SetAuxCameraConnected(t.Context(), 51, false); err != nil {
		t.Fatal(err)
	}
	statusWith(t, cloud, imei, func(s protocol.Status) bool { c, ok := camera(s, 51); return ok && !c.Connected })
	if err := d.Play(t.Context(), Step{Action: ActionAuxConnect, CameraID: 51}); err != nil {
		t.Fatal(err)
	}
	if c, _ := camera(d.Status(), 51); !c.Connected {
		t.Fatal("auxConnect left camera 51 disconnected")
	}
	if err := d.SetAuxCameraConnected(t.Context(), 57, true); !errors.Is(err, ErrUnknownCamera) {
		t.Fatalf("unpaired camera: %v", err)
	}

	if r := cmd(protocol.CmdAuxUnpair, protocol.AuxUnpairArgs{CameraIDs: []int{50, 56}}); !r.OK {
		t.Fatalf("unpair %+v", r)
	}
	statusWith(t, cloud, imei, func(s protocol.Status) bool {
		_, has50 := camera(s, 50)
		_, has51 := camera(s, 51)
		return !has50 && has51
	})

	for _, tc := range []struct {
		name string
		cmd  string
		args any
		want string
	}{
		{"search limit", protocol.CmdAuxSearch, protocol.AuxSearchArgs{Limit: 9}, "limit 9 must be from 1 to 8"},
		{"search without args", protocol.CmdAuxSearch, nil, "args are required"},
		{"pair nothing", protocol.CmdAuxPair, protocol.AuxPairArgs{}, "ssids are required"},
		{"pair out of range", protocol.CmdAuxPair, protocol.AuxPairArgs{SSIDs: []string{nearby[2].SSID, "elsewhere"}}, `ssids[1] "elsewhere"`},
		{"unpair built-in", protocol.CmdAuxUnpair, protocol.AuxUnpairArgs{CameraIDs: []int{2}}, "cameraIds[0] 2 must be 50 or above"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := cmd(tc.cmd, tc.args); r.OK || !strings.Contains(r.Error, tc.want) {
				t.Fatalf("reply %+v, want an error mentioning %q", r, tc.want)
			}
		})
	}
	// A failed pairing pairs nothing.
	if got := d.AuxCameras(); len(got) != 1 || got[0].ID != 51 {
		t.Fatalf("paired after errors %+v", got)
	}

	// The pairing survives a power cycle (the state file).
	d2, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := d2.AuxCameras(); len(got) != 1 || got[0].ID != 51 || got[0].SerialNumber != nearby[0].SerialNumber {
		t.Fatalf("after restart %+v", got)
	}
}
