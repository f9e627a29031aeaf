package protocol

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Operating modes of ControlConfig.Mode.
const (
	ModeNormal     = "normal"     // records, reports events and streams as configured
	ModeDemo       = "demo"       // shows its features without recording or reporting
	ModeSemiOnline = "semiOnline" // keeps its connection for commands, reports no events
)

// Calibration types of AdasCalibrateArgs.Type.
const (
	CalibrationAuto          = "auto"          // calibrate from the calibration images
	CalibrationRecalibration = "recalibration" // calibrate again, replacing the result
)

// Calibration states of AdasCalibrationResult.State.
const (
	CalibrationPending   = "pending"   // under way (about ten minutes)
	CalibrationCompleted = "completed" // done; the ADAS features use it
	CalibrationFailed    = "failed"    // given up (no usable images, vehicle not moving)
)

// Bounds of the control members, checked by Validate.
const (
	MinTailgatingCoolOff, MaxTailgatingCoolOff = 10, 480 // minutes
	MinCameraHeight, MaxCameraHeight           = 100, 400
	MinCameraOffset, MaxCameraOffset           = -200, 200
	MinVehicleWidth, MaxVehicleWidth           = 100, 400
	ImageColumns, ImageRows                    = 1280, 720
	MaxCameraName                              = 191
)

// ControlConfig is the part of the desired configuration that controls the
// device itself rather than what it records: operating mode, USB OTG,
// tailgating alert mute, ADAS calibration, PIN codes and camera names.
type ControlConfig struct {
	// Mode is normal, demo or semiOnline; absent (a cloud that sends no
	// control) is normal.
	Mode string `json:"mode"`
	// OTGEnabled switches the device's USB port (USB on-the-go).
	OTGEnabled bool `json:"otgEnabled"`
	// TailgatingCoolOffMinutes mutes tailgating alerts for that long after
	// one; 0 mutes none.
	TailgatingCoolOffMinutes int `json:"tailgatingCoolOffMinutes,omitempty"`
	// AutoCalibration lets the device calibrate ADAS by itself from its images.
	AutoCalibration bool `json:"autoCalibration"`
	// ADAS holds the measurements set for ADAS calibration, when set.
	ADAS *ADASMeasurements `json:"adas,omitempty"`
	// PinCodes holds salted hashes of the admin and driver PINs, when set.
	PinCodes *PinCodeHashes `json:"pinCodes,omitempty"`
	// CameraNames names auxiliary cameras (ids 50 and above).
	CameraNames map[int]string `json:"cameraNames,omitempty"`
}

// ADASMeasurements are the installation measurements of ADAS calibration,
// in centimetres, and for older firmware the picked points of a
// calibration image (pixels of its 1280×720 frame).
type ADASMeasurements struct {
	CameraHeight int         `json:"cameraHeight"`
	CameraOffset int         `json:"cameraOffset"`
	VehicleWidth float64     `json:"vehicleWidth"`
	Points       *ADASPoints `json:"points,omitempty"`
}

// ADASPoints are the lane points picked on a calibration image.
type ADASPoints struct {
	LowestUsableRow       int `json:"lowestUsableRow"`
	CalpickTopLeftCol     int `json:"calpickTopLeftCol"`
	CalpickTopLeftRow     int `json:"calpickTopLeftRow"`
	CalpickBottomLeftCol  int `json:"calpickBottomLeftCol"`
	CalpickBottomLeftRow  int `json:"calpickBottomLeftRow"`
	CalpickTopRightCol    int `json:"calpickTopRightCol"`
	CalpickTopRightRow    int `json:"calpickTopRightRow"`
	CalpickBottomRightCol int `json:"calpickBottomRightCol"`
	CalpickBottomRightRow int `json:"calpickBottomRightRow"`
}

// PinCodeHashes lets the device check a typed PIN without knowing it:
// a PIN is right when PinHash(Salt, pin) equals the stored hash. An empty
// hash means that PIN is not set.
type PinCodeHashes struct {
	Salt          string `json:"salt"`
	AdminPinHash  string `json:"adminPinHash,omitempty"`
	DriverPinHash string `json:"driverPinHash,omitempty"`
}

// PinHashIterations is the PBKDF2 iteration count of PinHash: a PIN has
// few digits, so each guess is made costly.
const PinHashIterations = 20000

// PinHash is the hash of pin under salt that the cloud sends and the
// device compares: hex PBKDF2-HMAC-SHA256 of the PIN with the salt's
// bytes, PinHashIterations iterations, 32 bytes.
func PinHash(salt, pin string) string {
	key, err := pbkdf2.Key(sha256.New, pin, []byte(salt), PinHashIterations, sha256.Size)
	if err != nil {
		panic("protocol: PBKDF2 refused its fixed parameters: " + err.Error())
	}
	return hex.EncodeToString(key)
}

// Matches reports whether pin is the admin (admin true) or driver PIN.
func (p *PinCodeHashes) Matches(admin bool, pin string) bool {
	if p == nil {
		return false
	}
	want := p.DriverPinHash
	if admin {
		want = p.AdminPinHash
	}
	return want != "" && hmac.Equal([]byte(want), []byte(PinHash(p.Salt, pin)))
}

// Validate checks the members against the rules of the protocol; the first
// broken rule is returned, naming its member.
func (c *ControlConfig) Validate() error {
	switch c.Mode {
	case "", ModeNormal, ModeDemo, ModeSemiOnline:
	default:
		return fmt.Errorf("control.mode %q must be normal, demo or semiOnline", c.Mode)
	}
	if m := c.TailgatingCoolOffMinutes; m != 0 && (m < MinTailgatingCoolOff || m > MaxTailgatingCoolOff) {
		return fmt.Errorf("control.tailgatingCoolOffMinutes %d must be 0 or from %d to %d", m, MinTailgatingCoolOff, MaxTailgatingCoolOff)
	}
	if a := c.ADAS; a != nil {
		if err := a.Validate(); err != nil {
			return fmt.Errorf("control.adas.%w", err)
		}
	}
	if p := c.PinCodes; p != nil && p.Salt == "" {
		return fmt.Errorf("control.pinCodes.salt is required with pin codes")
	}
	for id, name := range c.CameraNames {
		if id < 50 {
			return fmt.Errorf("control.cameraNames names camera %d: only auxiliary cameras (50 and above) have names", id)
		}
		if name == "" || len([]rune(name)) > MaxCameraName {
			return fmt.Errorf("control.cameraNames[%d] must have 1 to %d characters", id, MaxCameraName)
		}
	}
	return nil
}

// Validate checks the measurements' ranges and the points' geometry; the
// error names the member (without the "adas." prefix).
func (a *ADASMeasurements) Validate() error {
	if a.CameraHeight < MinCameraHeight || a.CameraHeight > MaxCameraHeight {
		return fmt.Errorf("cameraHeight must be an integer from %d to %d", MinCameraHeight, MaxCameraHeight)
	}
	if a.CameraOffset < MinCameraOffset || a.CameraOffset > MaxCameraOffset {
		return fmt.Errorf("cameraOffset must be an integer from %d to %d", MinCameraOffset, MaxCameraOffset)
	}
	if a.VehicleWidth < MinVehicleWidth || a.VehicleWidth > MaxVehicleWidth {
		return fmt.Errorf("vehicleWidth must be a number from %d to %d", MinVehicleWidth, MaxVehicleWidth)
	}
	if p := a.Points; p != nil {
		return p.Validate()
	}
	return nil
}

// Validate checks that every point lies in the 1280×720 frame and that the
// picked points outline the lane: top left right of bottom left, top right
// left of bottom right, top rows above bottom rows.
func (p *ADASPoints) Validate() error {
	cols := []struct {
		name string
		v    int
	}{{"calpickTopLeftCol", p.CalpickTopLeftCol}, {"calpickBottomLeftCol", p.CalpickBottomLeftCol},
		{"calpickTopRightCol", p.CalpickTopRightCol}, {"calpickBottomRightCol", p.CalpickBottomRightCol}}
	for _, c := range cols {
		if c.v < 0 || c.v >= ImageColumns {
			return fmt.Errorf("%s must be an integer from 0 to %d", c.name, ImageColumns-1)
		}
	}
	rows := []struct {
		name string
		v    int
	}{{"lowestUsableRow", p.LowestUsableRow}, {"calpickTopLeftRow", p.CalpickTopLeftRow},
		{"calpickBottomLeftRow", p.CalpickBottomLeftRow}, {"calpickTopRightRow", p.CalpickTopRightRow},
		{"calpickBottomRightRow", p.CalpickBottomRightRow}}
	for _, r := range rows {
		if r.v < 0 || r.v >= ImageRows {
			return fmt.Errorf("%s must be an integer from 0 to %d", r.name, ImageRows-1)
		}
	}
	switch {
	case p.CalpickTopLeftCol < p.CalpickBottomLeftCol:
		return fmt.Errorf("calpickTopLeftCol must be at least calpickBottomLeftCol (%d)", p.CalpickBottomLeftCol)
	case p.CalpickTopLeftRow > p.CalpickBottomLeftRow:
		return fmt.Errorf("calpickTopLeftRow must be at most calpickBottomLeftRow (%d)", p.CalpickBottomLeftRow)
	case p.CalpickTopRightCol > p.CalpickBottomRightCol:
		return fmt.Errorf("calpickTopRightCol must be at most calpickBottomRightCol (%d)", p.CalpickBottomRightCol)
	case p.CalpickTopRightRow > p.CalpickBottomRightRow:
		return fmt.Errorf("calpickTopRightRow must be at most calpickBottomRightRow (%d)", p.CalpickBottomRightRow)
	}
	return nil
}

// AdasCalibrateArgs asks the device to calibrate ADAS now.
type AdasCalibrateArgs struct {
	Type string `json:"type"` // auto or recalibration
}

// AdasCalibrationResult is the state of the device's latest ADAS calibration.
type AdasCalibrationResult struct {
	State string `json:"state"` // pending, completed or failed
}
