package cloudapi

import (
	"encoding/json"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// One-shot operations on a device: reboot, factory reset, wake-up. Each is
// an immediate command (docs/device-protocol.md section 7): the device must
// be connected (417 ExpectationFailedError otherwise, or when it fails or
// does not answer in time), and the request is audited before it is sent.

// immediate is one immediate command the API sends for a call.
type immediate struct {
	name   string // protocol command name
	args   any
	action string // audit action
	reason string // audit reason
}

// pathDeviceCommand sends cmd to the device the path names and returns the
// device and the reply's result.
func (s *Server) pathDeviceCommand(c *gin.Context, cmd immediate) (*store.Device, json.RawMessage, error) {
	var d *store.Device
	if err := s.view(c, func(tx *store.Tx) (err error) { d, err = s.device(c, tx); return err }); err != nil {
		return nil, nil, err
	}
	raw, err := s.deviceCommand(c, d, cmd)
	return d, raw, err
}

// deviceCommand audits cmd and sends it to d, which must be online.
func (s *Server) deviceCommand(c *gin.Context, d *store.Device, cmd immediate) (json.RawMessage, error) {
	if !s.online(d.IMEI) {
		return nil, ErrDeviceOffline
	}
	err := s.update(c, func(tx *store.Tx) error {
		return tx.Audit(store.AuditChange{Action: cmd.action, EntityType: "device", EntityID: d.IMEI,
			OrganizationID: d.OrganizationID, PartnerID: d.PartnerID, Reason: cmd.reason})
	})
	if err != nil {
		return nil, err
	}
	return s.commander.Send(c.Request.Context(), d.IMEI, cmd.name, cmd.args)
}

// rebootDevice handles POST /devices/{imei}/reboot.
func (s *Server) rebootDevice(c *gin.Context) error {
	if _, _, err := s.pathDeviceCommand(c, immediate{name: protocol.CmdReboot, action: "device.reboot", reason: "reboot requested"}); err != nil {
		return err
	}
	return ok(c, gin.H{})
}

// wakeupDevice handles POST /devices/{imei}/wakeup: a device in standby
// (connected, vehicle parked) returns to full operation.
func (s *Server) wakeupDevice(c *gin.Context) error {
	if _, _, err := s.pathDeviceCommand(c, immediate{name: protocol.CmdWakeup, action: "device.wakeup", reason: "wake-up requested"}); err != nil {
		return err
	}
	return ok(c, gin.H{})
}

// factoryResetDevice handles POST /devices/{imei}/factory-reset. Once the
// device confirms, its token is revoked (it bootstraps again, as the
// broker records the reply) and the cloud drops the settings a reset
// reverts: the device's own configuration and privacy settings, privacy
// mode, and control settings (operating mode, USB OTG, tailgating mute,
// ADAS measurements and calibration state); it then takes its
// organization's settings. PIN codes, camera names, event settings and
// geofences stay.
func (s *Server) factoryResetDevice(c *gin.Context) error {
	d, _, err := s.pathDeviceCommand(c, immediate{name: protocol.CmdFactoryReset, action: "device.factoryReset", reason: "factory reset requested"})
	if err != nil {
		return err
	}
	err = s.update(c, func(tx *store.Tx) error {
		ds, err := tx.DeviceSettings(d.IMEI)
		if err != nil {
			return err
		}
		ds.Device, ds.Privacy, ds.PrivacyMode, ds.PrivacyModeConfig = nil, nil, "", nil
		if ctl := ds.Control; ctl != nil {
			ds.Control = &store.DeviceControl{PinCodes: ctl.PinCodes, CameraNames: ctl.CameraNames}
		}
		return tx.PutDeviceSettings(ds, "device.factoryResetSettings")
	})
	if err != nil {
		return err
	}
	s.pushConfig(d.IMEI)
	return ok(c, gin.H{})
}
