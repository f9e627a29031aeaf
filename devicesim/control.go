package devicesim

import (
	"context"
	"fmt"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// Device control: the commands that act on the device itself (wakeup,
// ADAS and accelerometer calibration) and the control member of the
// desired configuration (operating mode, USB OTG, tailgating mute, ADAS
// measurements, PIN code hashes, camera names).

// controlState is what the control commands leave behind.
type controlState struct {
	// calibration is the state of the latest ADAS calibration, empty before one.
	calibration string
	// accelerometerCalibrations counts the accelerometer calibrations done.
	accelerometerCalibrations int
	// wakeups counts the wakeup commands answered.
	wakeups int
}

// onControlCommand answers the control commands; handled is false for any
// other command.
func (d *Device) onControlCommand(ctx context.Context, cmd protocol.Command, reply func(any, error)) (handled bool, err error) {
	switch cmd.Name {
	case protocol.CmdWakeup:
		d.mu.Lock()
		d.control.wakeups++
		d.mu.Unlock()
		reply(nil, nil)
		return true, d.publishStatus(ctx)
	case protocol.CmdAdasCalibrate:
		var a protocol.AdasCalibrateArgs
		if err := decodeArgs(cmd, &a); err != nil {
			reply(nil, err)
			return true, nil
		}
		reply(d.calibrateADAS(a))
	case protocol.CmdAdasCalibrationState:
		d.mu.Lock()
		state := d.control.calibration
		d.mu.Unlock()
		if state == "" {
			reply(nil, fmt.Errorf("adasCalibrationState: no ADAS calibration was requested"))
			return true, nil
		}
		reply(protocol.AdasCalibrationResult{State: state}, nil)
	case protocol.CmdCalibrateAccelerometer:
		d.mu.Lock()
		d.control.accelerometerCalibrations++
		d.mu.Unlock()
		reply(nil, nil)
	default:
		return false, nil
	}
	return true, nil
}

// calibrateADAS calibrates at once from a frame of the road-facing camera:
// completed, or failed when that camera does not record (privacy).
func (d *Device) calibrateADAS(a protocol.AdasCalibrateArgs) (protocol.AdasCalibrationResult, error) {
	switch a.Type {
	case protocol.CalibrationAuto, protocol.CalibrationRecalibration:
	default:
		return protocol.AdasCalibrationResult{}, fmt.Errorf("adasCalibrate: type %q must be auto or recalibration", a.Type)
	}
	state := protocol.CalibrationCompleted
	if !d.cameraRecords(1) {
		state = protocol.CalibrationFailed
	}
	d.mu.Lock()
	d.control.calibration = state
	if state == protocol.CalibrationCompleted {
		d.adasDone = true
	}
	d.mu.Unlock()
	return protocol.AdasCalibrationResult{State: state}, nil
}

// Control returns the control member of the applied configuration (mode
// normal before any).
func (d *Device) Control() protocol.ControlConfig {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.st.Config == nil {
		return protocol.ControlConfig{Mode: protocol.ModeNormal}
	}
	c := d.st.Config.Control
	if c.Mode == "" {
		c.Mode = protocol.ModeNormal
	}
	return c
}

// CheckPin reports whether pin is the device's admin PIN (admin true) or
// driver PIN, verified against the salted hashes of its configuration.
func (d *Device) CheckPin(admin bool, pin string) bool {
	c := d.Control()
	return c.PinCodes.Matches(admin, pin)
}

// ADASCalibration returns the state of the latest ADAS calibration, empty before one.
func (d *Device) ADASCalibration() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.control.calibration
}

// AccelerometerCalibrations counts the accelerometer calibrations done.
func (d *Device) AccelerometerCalibrations() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.control.accelerometerCalibrations
}

// Wakeups counts the wakeup commands answered.
func (d *Device) Wakeups() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.control.wakeups
}
