package devicesim

import (
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// TestPrivacyRecordingAndGPS: privacy.cameras (event media) does not stop
// a camera recording, privacy.cameraRecording does; privacy mode stops a
// camera unless its modeConfig keeps the camera's lens on, and stops GPS
// unless it keeps gpsTracking on; privacy.gpsEnabled false stops GPS.
func TestPrivacyRecordingAndGPS(t *testing.T) {
	enabled := protocol.PrivacyConfig{RecordingEnabled: true, GPSEnabled: true}
	with := func(fn func(p *protocol.PrivacyConfig)) *protocol.DesiredConfig {
		p := enabled
		fn(&p)
		return &protocol.DesiredConfig{Privacy: p}
	}
	tests := []struct {
		name       string
		cfg        *protocol.DesiredConfig
		mode       string
		cam1, cam2 bool
		gps        bool
	}{
		{"no configuration", nil, "off", true, true, true},
		{"event media of camera 2 blocked", with(func(p *protocol.PrivacyConfig) { p.Cameras = map[int]bool{2: false} }), "off", true, true, true},
		{"camera 2 not recording", with(func(p *protocol.PrivacyConfig) { p.CameraRecording = map[int]bool{2: false} }), "off", true, false, true},
		{"recording off", with(func(p *protocol.PrivacyConfig) { p.RecordingEnabled = false }), "off", false, false, true},
		{"gps off", with(func(p *protocol.PrivacyConfig) { p.GPSEnabled = false }), "off", true, true, false},
		{"privacy mode without modeConfig", with(func(*protocol.PrivacyConfig) {}), "on", false, false, false},
		{"privacy mode keeping the cabin lens", with(func(p *protocol.PrivacyConfig) {
			p.ModeConfig = &protocol.PrivacyModeConfig{CabinLensVideo: true}
		}), "on", false, true, false},
		{"privacy mode keeping the road lens and GPS", with(func(p *protocol.PrivacyConfig) {
			p.ModeConfig = &protocol.PrivacyModeConfig{RoadAndAuxLensVideo: true, GPSTracking: true}
		}), "on", true, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &Device{privacyMode: tc.mode}
			d.st.Config = tc.cfg
			if got1, got2, gps := d.cameraRecords(1), d.cameraRecords(2), d.sendsGPS(); got1 != tc.cam1 || got2 != tc.cam2 || gps != tc.gps {
				t.Fatalf("camera 1 records %t, camera 2 %t, GPS %t; want %t, %t, %t", got1, got2, gps, tc.cam1, tc.cam2, tc.gps)
			}
		})
	}
}
