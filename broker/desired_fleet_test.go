package broker

import (
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

func TestDesiredCarriesDriversAndRetention(t *testing.T) {
	tests := []struct {
		name    string
		minutes int
		days    int
	}{
		{"no retention", 0, 0},
		{"four minutes round up to a day", 4, 1},
		{"two days", 2880, 2},
		{"two days and a minute", 2881, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &store.Effective{Version: 3, RetentionMinutes: tt.minutes,
				Drivers: []store.DriverCredential{{DriverID: 7, PinCode: "12345", QRCode: "FCDRV1-X"}}}
			d := DesiredFromSettings(e)
			if d.RetentionMinutes != tt.minutes || d.RetentionDays != tt.days {
				t.Fatalf("retention %d min / %d days, want %d / %d", d.RetentionMinutes, d.RetentionDays, tt.minutes, tt.days)
			}
			if len(d.Drivers) != 1 || d.Drivers[0] != (protocol.DriverCredential{DriverID: 7, PinCode: "12345", QRCode: "FCDRV1-X"}) {
				t.Fatalf("drivers %+v", d.Drivers)
			}
			e.Drivers[0].PinCode = "99999"
			if d.Drivers[0].PinCode != "12345" {
				t.Fatal("the desired configuration shares the settings' driver slice")
			}
		})
	}
}

func TestDesiredCarriesCameraRetention(t *testing.T) {
	e := &store.Effective{Version: 3, RetentionMinutes: 600,
		CameraRetention: []store.CameraRetention{{CameraID: 1, RetentionMinutes: 120}, {CameraID: 50, RetentionMinutes: 15}}}
	d := DesiredFromSettings(e)
	if d.RetentionMinutes != 600 || len(d.CameraRetentionMinutes) != 2 || d.CameraRetentionMinutes["1"] != 120 || d.CameraRetentionMinutes["50"] != 15 {
		t.Fatalf("retention %d, per camera %v", d.RetentionMinutes, d.CameraRetentionMinutes)
	}
	if d := DesiredFromSettings(&store.Effective{Version: 1}); d.CameraRetentionMinutes != nil {
		t.Fatalf("per camera retention without any: %v", d.CameraRetentionMinutes)
	}
}
