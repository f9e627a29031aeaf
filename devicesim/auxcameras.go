package devicesim

import (
	"context"
	"fmt"
	"slices"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// Auxiliary cameras: every simulated dashcam has the same few cameras in
// range, derived from its IMEI, wired and Wi-Fi ones, each with an SSID and
// a serial number. auxSearch lists those not yet paired, auxPair pairs them
// by SSID and gives each the lowest free camera id from 50, auxUnpair
// forgets them. Paired cameras are listed in the status (Status.Cameras)
// and kept in the state file; their connection is switched with
// SetAuxCameraConnected or the auxConnect and auxDisconnect scenario
// actions, and each change is published in a status.

// Auxiliary camera limits.
const (
	// nearbyAuxCameras is how many auxiliary cameras are in range of a device.
	nearbyAuxCameras = 4
	// maxAuxSearch bounds the limit of one auxSearch.
	maxAuxSearch = 8
	// minAuxCameraID is the first auxiliary camera id.
	minAuxCameraID = 50
)

// auxPairing is an auxiliary camera paired with the device.
type auxPairing struct {
	CameraID     int    `json:"cameraId"`
	SSID         string `json:"ssid"`
	SerialNumber string `json:"serialNumber"`
	Kind         string `json:"kind"`
	Connected    bool   `json:"connected"`
}

// NearbyAuxCameras returns the auxiliary cameras in range of the device,
// paired or not, with their SSIDs, serial numbers and kinds.
func (d *Device) NearbyAuxCameras() []protocol.AuxCameraInfo {
	kinds := [nearbyAuxCameras]string{"wired", "wifi", "wifi", "wired"}
	tail := d.o.IMEI[len(d.o.IMEI)-6:]
	out := make([]protocol.AuxCameraInfo, 0, nearbyAuxCameras)
	for i, kind := range kinds {
		out = append(out, protocol.AuxCameraInfo{
			SSID:         fmt.Sprintf("FLEETCAM-AUX-%s-%d", tail, i+1),
			SerialNumber: fmt.Sprintf("AX%s%02d", tail, i+1),
			Kind:         kind,
		})
	}
	return out
}

// AuxCameras returns the paired auxiliary cameras as the status reports them, by camera id.
func (d *Device) AuxCameras() []protocol.Camera {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.auxStatusLocked()
}

// auxStatusLocked lists the paired cameras; the caller holds d.mu.
func (d *Device) auxStatusLocked() []protocol.Camera {
	out := make([]protocol.Camera, 0, len(d.st.AuxCameras))
	for _, p := range d.st.AuxCameras {
		out = append(out, protocol.Camera{ID: p.CameraID, Connected: p.Connected, Kind: p.Kind, SerialNumber: p.SerialNumber})
	}
	return out
}

// SetAuxCameraConnected plugs a paired auxiliary camera in or out and
// publishes the status when the device is connected.
func (d *Device) SetAuxCameraConnected(ctx context.Context, cameraID int, connected bool) error {
	d.mu.Lock()
	i := slices.IndexFunc(d.st.AuxCameras, func(p auxPairing) bool { return p.CameraID == cameraID })
	if i < 0 {
		d.mu.Unlock()
		return fmt.Errorf("devicesim: camera %d is not a paired auxiliary camera: %w", cameraID, ErrUnknownCamera)
	}
	changed := d.st.AuxCameras[i].Connected != connected
	d.st.AuxCameras[i].Connected = connected
	if changed {
		d.persistLocked()
	}
	d.mu.Unlock()
	return d.statusIfConnected(ctx)
}

// auxSearch lists up to a.Limit cameras in range that are not paired.
func (d *Device) auxSearch(a protocol.AuxSearchArgs) (protocol.AuxCamerasResult, error) {
	if a.Limit < 1 || a.Limit > maxAuxSearch {
		return protocol.AuxCamerasResult{}, fmt.Errorf("auxSearch: limit %d must be from 1 to %d", a.Limit, maxAuxSearch)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := protocol.AuxCamerasResult{Cameras: []protocol.AuxCameraInfo{}}
	for _, c := range d.NearbyAuxCameras() {
		if len(out.Cameras) == a.Limit {
			break
		}
		if !slices.ContainsFunc(d.st.AuxCameras, func(p auxPairing) bool { return p.SSID == c.SSID }) {
			out.Cameras = append(out.Cameras, protocol.AuxCameraInfo{SSID: c.SSID, Kind: c.Kind})
		}
	}
	return out, nil
}

// auxPair pairs the cameras with the given SSIDs, all or none. A camera
// already paired keeps its id, so a repeated command has the same result;
// a new one gets the lowest free id from 50 and starts connected.
func (d *Device) auxPair(a protocol.AuxPairArgs) (protocol.AuxCamerasResult, error) {
	if len(a.SSIDs) == 0 {
		return protocol.AuxCamerasResult{}, fmt.Errorf("auxPair: ssids are required")
	}
	nearby := d.NearbyAuxCameras()
	var want []protocol.AuxCameraInfo
	for i, ssid := range a.SSIDs {
		j := slices.IndexFunc(nearby, func(c protocol.AuxCameraInfo) bool { return c.SSID == ssid })
		if j < 0 {
			return protocol.AuxCamerasResult{}, fmt.Errorf("auxPair: ssids[%d] %q: no auxiliary camera with that ssid is in range", i, ssid)
		}
		want = append(want, nearby[j])
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := protocol.AuxCamerasResult{Cameras: []protocol.AuxCameraInfo{}}
	for _, c := range want {
		i := slices.IndexFunc(d.st.AuxCameras, func(p auxPairing) bool { return p.SSID == c.SSID })
		if i < 0 {
			id := minAuxCameraID
			for slices.ContainsFunc(d.st.AuxCameras, func(p auxPairing) bool { return p.CameraID == id }) {
				id++
			}
			d.st.AuxCameras = append(d.st.AuxCameras, auxPairing{CameraID: id, SSID: c.SSID,
				SerialNumber: c.SerialNumber, Kind: c.Kind, Connected: true})
			slices.SortFunc(d.st.AuxCameras, func(x, y auxPairing) int { return x.CameraID - y.CameraID })
			i = slices.IndexFunc(d.st.AuxCameras, func(p auxPairing) bool { return p.SSID == c.SSID })
		}
		p := d.st.AuxCameras[i]
		out.Cameras = append(out.Cameras, protocol.AuxCameraInfo{CameraID: p.CameraID, SSID: p.SSID,
			SerialNumber: p.SerialNumber, Kind: p.Kind})
	}
	d.persistLocked()
	return out, nil
}

// auxUnpair forgets the paired cameras with the given ids; an id not
// paired (already unpaired) is no error.
func (d *Device) auxUnpair(a protocol.AuxUnpairArgs) error {
	if len(a.CameraIDs) == 0 {
		return fmt.Errorf("auxUnpair: cameraIds are required")
	}
	for i, id := range a.CameraIDs {
		if id < minAuxCameraID {
			return fmt.Errorf("auxUnpair: cameraIds[%d] %d must be %d or above", i, id, minAuxCameraID)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.AuxCameras = slices.DeleteFunc(d.st.AuxCameras, func(p auxPairing) bool { return slices.Contains(a.CameraIDs, p.CameraID) })
	d.persistLocked()
	return nil
}
