package protocol

import (
	"strings"
	"testing"
)

func TestControlConfigValidate(t *testing.T) {
	points := ADASPoints{LowestUsableRow: 600, CalpickTopLeftCol: 600, CalpickTopLeftRow: 400, CalpickBottomLeftCol: 300,
		CalpickBottomLeftRow: 650, CalpickTopRightCol: 680, CalpickTopRightRow: 400, CalpickBottomRightCol: 1000, CalpickBottomRightRow: 650}
	adas := func(edit func(a *ADASMeasurements)) *ADASMeasurements {
		p := points
		a := &ADASMeasurements{CameraHeight: 150, CameraOffset: -10, VehicleWidth: 180, Points: &p}
		edit(a)
		return a
	}
	tests := []struct {
		name string
		c    ControlConfig
		want string // fragment of the error; empty: valid
	}{
		{"normal", ControlConfig{Mode: ModeNormal}, ""},
		{"everything set", ControlConfig{Mode: ModeDemo, OTGEnabled: true, TailgatingCoolOffMinutes: 480,
			ADAS: adas(func(*ADASMeasurements) {}), PinCodes: &PinCodeHashes{Salt: "s", AdminPinHash: PinHash("s", "1234")},
			CameraNames: map[int]string{50: "Trailer"}}, ""},
		{"no control from an older cloud", ControlConfig{}, ""},
		{"unknown mode", ControlConfig{Mode: "sleep"}, "control.mode"},
		{"short mute", ControlConfig{Mode: ModeNormal, TailgatingCoolOffMinutes: 9}, "tailgatingCoolOffMinutes"},
		{"long mute", ControlConfig{Mode: ModeNormal, TailgatingCoolOffMinutes: 481}, "tailgatingCoolOffMinutes"},
		{"low camera", ControlConfig{Mode: ModeNormal, ADAS: adas(func(a *ADASMeasurements) { a.CameraHeight = 99 })}, "control.adas.cameraHeight"},
		{"far offset", ControlConfig{Mode: ModeNormal, ADAS: adas(func(a *ADASMeasurements) { a.CameraOffset = 201 })}, "cameraOffset"},
		{"wide vehicle", ControlConfig{Mode: ModeNormal, ADAS: adas(func(a *ADASMeasurements) { a.VehicleWidth = 400.5 })}, "vehicleWidth"},
		{"point outside", ControlConfig{Mode: ModeNormal, ADAS: adas(func(a *ADASMeasurements) { a.Points.CalpickBottomRightCol = 1280 })}, "calpickBottomRightCol"},
		{"crossed lane", ControlConfig{Mode: ModeNormal, ADAS: adas(func(a *ADASMeasurements) { a.Points.CalpickTopLeftCol = 200 })}, "calpickTopLeftCol must be at least"},
		{"pins without salt", ControlConfig{Mode: ModeNormal, PinCodes: &PinCodeHashes{AdminPinHash: "x"}}, "salt"},
		{"name of a built-in camera", ControlConfig{Mode: ModeNormal, CameraNames: map[int]string{2: "Cabin"}}, "auxiliary"},
		{"empty name", ControlConfig{Mode: ModeNormal, CameraNames: map[int]string{50: ""}}, "cameraNames[50]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("valid config refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func TestPinHashes(t *testing.T) {
	p := &PinCodeHashes{Salt: "c2FsdA", AdminPinHash: PinHash("c2FsdA", "904512"), DriverPinHash: PinHash("c2FsdA", "118830")}
	if !p.Matches(true, "904512") || !p.Matches(false, "118830") {
		t.Fatal("the right PINs do not match")
	}
	if p.Matches(false, "904512") || p.Matches(true, "118830") || p.Matches(true, "") {
		t.Fatal("a PIN matches the other PIN's hash")
	}
	if PinHash("other", "904512") == p.AdminPinHash {
		t.Fatal("the salt does not change the hash")
	}
	if strings.Contains(p.AdminPinHash, "904512") || len(p.AdminPinHash) != 64 {
		t.Fatalf("hash %q", p.AdminPinHash)
	}
	var none *PinCodeHashes
	if none.Matches(true, "1234") || (&PinCodeHashes{Salt: "s"}).Matches(false, "") {
		t.Fatal("an unset PIN matches")
	}
}

// TestPinHashVector pins the derivation down for device firmware: PBKDF2-HMAC-SHA256
// of "1234" with the salt "fleetcam" over 20000 iterations.
func TestPinHashVector(t *testing.T) {
	const want = "667247981f0d6c90a9f0b2390c3ad3f60cb00788cc2f46b286e29e6974013677" // Python: hashlib.pbkdf2_hmac
	if got := PinHash("fleetcam", "1234"); got != want {
		t.Fatalf("PinHash = %s", got)
	}
}
