package cloudapi

import (
	"fmt"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Persistent device states: operating mode (demo, semi-online), USB OTG and
// the tailgating alert mute. Each is a control setting of the device
// (store/devicecontrol.go), versioned with its settings and pushed in the
// desired configuration, so a device offline now applies it when it
// connects. The answer says per IMEI whether the device got it now
// (success) or gets it on reconnect (accepted).

// writeControl changes the control settings of the devices resolve names
// with change, audited under action.
func (s *Server) writeControl(c *gin.Context, resolve deviceResolver, action string,
	change func(ctl *store.DeviceControl) error) (bulkWriteResult, error) {
	return s.writeDevices(c, resolve, func(tx *store.Tx, imei string) error {
		return updateControl(tx, imei, action, func(ctl *store.DeviceControl, _ int64) error { return change(ctl) })
	})
}

// updateControl changes the device's own control settings with change,
// given the settings version the change is stored under, audited under action.
func updateControl(tx *store.Tx, imei, action string, change func(ctl *store.DeviceControl, version int64) error) error {
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return err
	}
	if ds.Control == nil {
		ds.Control = &store.DeviceControl{}
	}
	if err := change(ds.Control, ds.Version+1); err != nil {
		return err
	}
	return tx.PutDeviceSettings(ds, action)
}

// setMode answers a call that puts the path's device in mode.
func (s *Server) setMode(mode string) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		res, err := s.writeControl(c, s.pathDevice(c), "device.mode", func(ctl *store.DeviceControl) error {
			ctl.Mode = mode
			return nil
		})
		if err != nil {
			return err
		}
		return ok(c, res)
	}
}

// otgRequest is the body of POST /devices/{imei}/otg-settings.
type otgRequest struct {
	Enabled *bool `json:"enabled"`
}

// postOTGSettings handles POST /devices/{imei}/otg-settings: USB on-the-go
// on or off. The contract answers only {"enabled"}; the setting reaches an
// offline device when it connects.
func (s *Server) postOTGSettings(c *gin.Context) error {
	var req otgRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Enabled == nil {
		return badField("enabled", "is required: true turns USB OTG on, false off")
	}
	_, err := s.writeControl(c, s.pathDevice(c), "device.otg", func(ctl *store.DeviceControl) error {
		ctl.OTGEnabled = ptrOf(*req.Enabled)
		return nil
	})
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"enabled": *req.Enabled, "requestId": requestID(c)})
}

// tailgatingMuteRequest is the body of POST /devices/tailgating-event-mute/configure.
type tailgatingMuteRequest struct {
	EntityType      string   `json:"entityType"`
	EntityValues    []string `json:"entityValues"`
	CoolOffDuration *int     `json:"coolOffDuration"`
}

// maxTailgatingDevices bounds entityValues.
const maxTailgatingDevices = 100

// configureTailgatingMute handles POST /devices/tailgating-event-mute/configure:
// after a tailgating alert the devices raise no other for coolOffDuration
// minutes. Devices the caller may not see are rejected, per IMEI.
func (s *Server) configureTailgatingMute(c *gin.Context) error {
	var req tailgatingMuteRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.EntityType != "device" {
		return badField("entityType", "must be device")
	}
	if m := req.CoolOffDuration; m == nil || *m < protocol.MinTailgatingCoolOff || *m > protocol.MaxTailgatingCoolOff {
		return badField("coolOffDuration", fmt.Sprintf("is required, in minutes from %d to %d",
			protocol.MinTailgatingCoolOff, protocol.MaxTailgatingCoolOff))
	}
	if n := len(req.EntityValues); n == 0 || n > maxTailgatingDevices {
		return badField("entityValues", fmt.Sprintf("must hold from 1 to %d IMEIs", maxTailgatingDevices))
	}
	imeis, err := checkIMEIList(req.EntityValues, maxTailgatingDevices)
	if err != nil {
		return err
	}
	res, err := s.writeControl(c, s.listedDevices(c, imeis), "device.tailgatingMute", func(ctl *store.DeviceControl) error {
		ctl.TailgatingCoolOffMinutes = *req.CoolOffDuration
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, res)
}
