package cloudapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Calibration across devices: the auto-calibration switch at partner,
// organization or device level, the auto-calibration status of a device,
// recalibration of listed devices and accelerometer calibration of an
// organization's devices. Calls that reach many devices answer per IMEI
// which devices accepted and which were rejected, and why; a device the
// caller may not see is rejected as not found.

// acceptedRejected is the per-device answer of a command sent to many devices.
type acceptedRejected struct {
	Accepted []string         `json:"accepted"`
	Rejected []rejectedDevice `json:"rejected"`
}

type rejectedDevice struct {
	IMEI   string `json:"imei"`
	Reason string `json:"reason"`
}

func newAcceptedRejected() acceptedRejected {
	return acceptedRejected{Accepted: []string{}, Rejected: []rejectedDevice{}}
}

func (a *acceptedRejected) reject(imei string, err error) {
	a.Rejected = append(a.Rejected, rejectedDevice{IMEI: imei, Reason: statusOf(err).Message})
}

// autoCalibrationConfigRequest is the body of POST /devices/auto-calibration/config.
type autoCalibrationConfigRequest struct {
	Enabled     *bool           `json:"enabled"`
	EntityType  string          `json:"entityType"`
	EntityValue json.RawMessage `json:"entityValue"`
}

// postAutoCalibrationConfig handles POST /devices/auto-calibration/config:
// auto-calibration on or off for a device, an organization (the default
// of its devices without their own switch) or a partner (the default of
// every organization the partner created; organizations created later
// start disabled). Another tenant's partner, organization or device is 404.
func (s *Server) postAutoCalibrationConfig(c *gin.Context) error {
	var req autoCalibrationConfigRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Enabled == nil {
		return badField("enabled", "is required")
	}
	value := strings.Trim(strings.TrimSpace(string(req.EntityValue)), `"`)
	if value == "" || value == "null" {
		return badField("entityValue", "is required: a partner id, an organization id or an IMEI")
	}
	enabled := *req.Enabled
	var err error
	switch req.EntityType {
	case "device":
		if !s.canSeeIMEI(c, value) {
			return notFound("device " + value)
		}
		_, err = s.writeControl(c, s.listedDevices(c, []string{value}), "device.autoCalibration", func(ctl *store.DeviceControl) error {
			ctl.AutoCalibration = ptrOf(enabled)
			return nil
		})
	case "organization", "partner":
		id, perr := strconv.ParseInt(value, 10, 64)
		if perr != nil || id <= 0 {
			return badField("entityValue", "must be the id of the "+req.EntityType)
		}
		err = s.setOrgsAutoCalibration(c, req.EntityType, id, enabled)
	default:
		return badField("entityType", "must be partner, organization or device")
	}
	if err != nil {
		return err
	}
	return ok(c, gin.H{"enabled": enabled})
}

// canSeeIMEI reports whether the caller may see device imei.
func (s *Server) canSeeIMEI(c *gin.Context, imei string) bool {
	err := s.view(c, func(tx *store.Tx) error { _, err := s.deviceByIMEI(c, tx, imei); return err })
	return err == nil
}

// setOrgsAutoCalibration sets the auto-calibration default of organization
// id, or of every organization partner id created, and delivers it.
func (s *Server) setOrgsAutoCalibration(c *gin.Context, level string, id int64, enabled bool) error {
	var imeis []string
	err := s.update(c, func(tx *store.Tx) error {
		var orgs []store.Organization
		if level == "organization" {
			o, err := s.orgByID(c, tx, id)
			if err != nil {
				return err
			}
			if isGuest(principal(c), o) {
				return forbidden("only the partner that created organization %d can change its settings", o.ID)
			}
			orgs = []store.Organization{*o}
		} else {
			p := principal(c)
			if !p.IsPartner() || p.PartnerID != id {
				return notFound(fmt.Sprintf("partner %d", id))
			}
			all, _, err := tx.Organizations(store.OrganizationFilter{PartnerID: id}, store.Page{})
			if err != nil {
				return err
			}
			for _, o := range all {
				if o.PartnerID == id {
					orgs = append(orgs, o)
				}
			}
		}
		for _, o := range orgs {
			os, err := tx.OrgSettings(o.ID)
			if err != nil {
				return err
			}
			if os.Control == nil {
				os.Control = &store.DeviceControl{}
			}
			os.Control.AutoCalibration = ptrOf(enabled)
			if err := tx.PutOrgSettings(os, "organization.autoCalibration"); err != nil {
				return err
			}
			more, err := tx.OrgIMEIs(o.ID)
			if err != nil {
				return err
			}
			imeis = append(imeis, more...)
		}
		return nil
	})
	if err == nil {
		s.pushConfig(imeis...)
	}
	return err
}

// autoCalibrationStatus is the answer of GET /devices/{imei}/auto-calibration/status.
type autoCalibrationStatus struct {
	Status    string `json:"status"`
	Type      string `json:"type,omitempty"`
	RequestID string `json:"requestId"`
}

// getAutoCalibrationStatus handles GET /devices/{imei}/auto-calibration/status:
// the state and type of the device's latest calibration (notStarted before any).
func (s *Server) getAutoCalibrationStatus(c *gin.Context) error {
	_, _, cal, err := s.adasState(c)
	if err != nil {
		return err
	}
	out := autoCalibrationStatus{Status: "notStarted", RequestID: requestID(c)}
	if cal != nil {
		out.Status, out.Type = cal.State, cal.Type
	}
	return okBody(c, out)
}

// autoRecalibrateRequest is the body of POST /devices/auto-recalibrate.
type autoRecalibrateRequest struct {
	IMEIs []string `json:"imeis"`
}

// maxRecalibrate bounds the imeis of one recalibration.
const maxRecalibrate = 100

// postAutoRecalibrate handles POST /devices/auto-recalibrate: each listed
// device calibrates ADAS again now. A device is accepted when it started
// (or finished) the calibration, rejected when it is not the caller's,
// offline, calibrating already or failed.
func (s *Server) postAutoRecalibrate(c *gin.Context) error {
	var req autoRecalibrateRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	imeis, err := checkIMEIList(req.IMEIs, maxRecalibrate)
	if err != nil {
		return err
	}
	out := newAcceptedRejected()
	for _, imei := range imeis {
		var d *store.Device
		var cal *store.CalibrationState
		err := s.view(c, func(tx *store.Tx) error {
			var err error
			if d, err = s.deviceByIMEI(c, tx, imei); err != nil {
				return err
			}
			e, err := tx.EffectiveSettings(imei)
			if err == nil {
				dl, _ := tx.DeviceLink(imei)
				cal = calibration(e.Control, dl)
			}
			return err
		})
		if err == nil {
			_, err = s.calibrateNow(c, d, cal, protocol.CalibrationRecalibration)
		}
		if err != nil {
			out.reject(imei, err)
			continue
		}
		out.Accepted = append(out.Accepted, imei)
	}
	return ok(c, out)
}

// accelerometerRequest is the body of the accelerometer calibration.
type accelerometerRequest struct {
	IMEIs     []string `json:"imeis"`
	Groups    []int64  `json:"groups"`
	Ungrouped *bool    `json:"ungrouped"`
}

// postCalibrateAccelerometer handles POST /organizations/{orgId}/devices/calibrate-accelerometer:
// the devices named (by IMEI, by group, or those in no group) level their
// accelerometers now; each must be online. A device outside the
// organization, or that the caller may not see, is rejected as not found.
func (s *Server) postCalibrateAccelerometer(c *gin.Context) error {
	var req accelerometerRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	ungrouped := req.Ungrouped != nil && *req.Ungrouped
	if len(req.IMEIs) == 0 && len(req.Groups) == 0 && !ungrouped {
		return badRequest("name the devices: imeis, groups or ungrouped true")
	}
	if len(req.IMEIs) > maxBulkConfigIMEIs {
		return badField("imeis", fmt.Sprintf("must hold at most %d IMEIs", maxBulkConfigIMEIs))
	}
	out := newAcceptedRejected()
	var targets []*store.Device
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		for i, g := range req.Groups {
			if g == -1 {
				ungrouped = true
				continue
			}
			if grp, err := tx.Group(g); err != nil || grp.OrganizationID != o.ID {
				return badField(fmt.Sprintf("groups[%d]", i), fmt.Sprintf("names group %d, which is not a group of organization %d", g, o.ID))
			}
		}
		devices, _, err := tx.Devices(deviceFilter(principal(c), o.ID), store.Page{})
		if err != nil {
			return err
		}
		for _, imei := range req.IMEIs {
			if !slices.ContainsFunc(devices, func(d store.Device) bool { return d.IMEI == imei }) {
				out.reject(imei, notFound("device "+imei+" in organization "+strconv.FormatInt(o.ID, 10)))
			}
		}
		for i := range devices {
			d := &devices[i]
			if slices.Contains(req.IMEIs, d.IMEI) || slices.Contains(req.Groups, d.GroupID) || (ungrouped && d.GroupID == 0) {
				targets = append(targets, d)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range targets {
		_, err := s.deviceCommand(c, d, immediate{name: protocol.CmdCalibrateAccelerometer,
			action: "device.calibrateAccelerometer", reason: "accelerometer calibration requested"})
		if err != nil {
			out.reject(d.IMEI, err)
			continue
		}
		out.Accepted = append(out.Accepted, d.IMEI)
	}
	return ok(c, out)
}
