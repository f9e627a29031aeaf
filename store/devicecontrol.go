package store

import (
	"maps"
	"time"
)

// Device control settings: how a device itself runs (operating mode, USB
// OTG, tailgating alert mute, ADAS calibration, PIN codes, camera names),
// kept with its settings so that they are versioned and pushed with the
// desired configuration, and reach an offline device when it connects.
// An organization keeps defaults of some of them (auto-calibration, PIN
// codes) for the devices that have none of their own.

// Operating modes of DeviceControl.Mode.
const (
	ModeNormal     = "normal"
	ModeDemo       = "demo"
	ModeSemiOnline = "semiOnline"
)

// Calibration types of CalibrationState.Type, as the API names them.
const (
	CalibrationAuto            = "auto"
	CalibrationAutoRecalibrate = "auto_recalibration"
	CalibrationManual          = "manual"
)

// Calibration states of CalibrationState.State.
const (
	CalibrationPending   = "pending"
	CalibrationCompleted = "completed"
	CalibrationFailed    = "failed"
)

// DeviceControl is a device's control settings, or an organization's
// defaults of them. A member at its zero value is not set: the device
// takes its organization's, else the built-in default.
type DeviceControl struct {
	// Mode is normal, demo or semiOnline; empty is normal.
	Mode string `json:"mode,omitempty"`
	// OTGEnabled switches the USB port; nil is off.
	OTGEnabled *bool `json:"otgEnabled,omitempty"`
	// TailgatingCoolOffMinutes mutes tailgating alerts for that long after one.
	TailgatingCoolOffMinutes int `json:"tailgatingCoolOffMinutes,omitempty"`
	// AutoCalibration lets the device calibrate ADAS by itself; nil is off.
	AutoCalibration *bool `json:"autoCalibration,omitempty"`
	// ADAS are the measurements of the latest ADAS calibration set by hand.
	ADAS *ADASMeasurements `json:"adas,omitempty"`
	// PinCodes are the salted hashes of the device's PINs; never the PINs.
	PinCodes *PinCodes `json:"pinCodes,omitempty"`
	// CameraNames names auxiliary cameras by camera id.
	CameraNames map[int]string `json:"cameraNames,omitempty"`
	// Calibration is the latest ADAS calibration requested and how it went.
	// It is the device's report, not delivered to it.
	Calibration *CalibrationState `json:"calibration,omitempty"`
}

// ADASMeasurements are the installation measurements of ADAS calibration
// (centimetres), with the lane points picked on an image for older firmware.
type ADASMeasurements struct {
	CameraHeight int         `json:"cameraHeight"`
	CameraOffset int         `json:"cameraOffset"`
	VehicleWidth float64     `json:"vehicleWidth"`
	Points       *ADASPoints `json:"points,omitempty"`
}

// ADASPoints are the lane points picked on a 1280×720 calibration image.
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

// PinCodes keeps a device's (or an organization's default) admin and
// driver PINs as salted hashes, which the device verifies typed PINs
// against (docs/device-protocol.md); the PINs themselves are never stored.
type PinCodes struct {
	Salt          string    `json:"salt"`
	AdminPinHash  string    `json:"adminPinHash"`
	DriverPinHash string    `json:"driverPinHash"`
	SetAt         time.Time `json:"setAt"`
}

// CalibrationState is the latest ADAS calibration of a device.
type CalibrationState struct {
	// Type is auto, auto_recalibration or manual.
	Type string `json:"type"`
	// State is pending, completed or failed. A manual calibration is
	// pending until the device acknowledges Version.
	State       string    `json:"state"`
	Version     int64     `json:"version,omitempty"`
	RequestedAt time.Time `json:"requestedAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// EffectiveControl resolves control settings member by member: the
// device's own, else the organization's, else the built-in default.
func EffectiveControl(own, org *DeviceControl) DeviceControl {
	var out DeviceControl
	for _, c := range []*DeviceControl{org, own} { // own last: it wins
		if c == nil {
			continue
		}
		if c.Mode != "" {
			out.Mode = c.Mode
		}
		if c.OTGEnabled != nil {
			out.OTGEnabled = ptr(*c.OTGEnabled)
		}
		if c.TailgatingCoolOffMinutes != 0 {
			out.TailgatingCoolOffMinutes = c.TailgatingCoolOffMinutes
		}
		if c.AutoCalibration != nil {
			out.AutoCalibration = ptr(*c.AutoCalibration)
		}
		if c.ADAS != nil {
			a := *c.ADAS
			if a.Points != nil {
				a.Points = ptr(*a.Points)
			}
			out.ADAS = &a
		}
		if c.PinCodes != nil {
			out.PinCodes = ptr(*c.PinCodes)
		}
		if c.CameraNames != nil {
			out.CameraNames = maps.Clone(c.CameraNames)
		}
		if c.Calibration != nil {
			out.Calibration = ptr(*c.Calibration)
		}
	}
	if out.Mode == "" {
		out.Mode = ModeNormal
	}
	return out
}

// Enabled reports the value of an optional switch; nil is off.
func Enabled(b *bool) bool { return b != nil && *b }

func ptr[T any](v T) *T { return &v }
