package cloudapi

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// ADAS calibration of one device: the measurements set by hand (PUT, a
// manual calibration delivered with the configuration), a calibration the
// device runs now from its images (POST, the adasCalibrate command), and
// the state of the latest one. adas.go serves the calibration images.

// adasMeasurementsDTO is the body of PUT /devices/{imei}/calibrate-adas:
// the measurements, with the picked points of firmware before 14.4 (all
// nine or none).
type adasMeasurementsDTO struct {
	CameraHeight          *int     `json:"cameraHeight"`
	CameraOffset          *int     `json:"cameraOffset"`
	VehicleWidth          *float64 `json:"vehicleWidth"`
	LowestUsableRow       *int     `json:"lowestUsableRow,omitempty"`
	CalpickTopLeftCol     *int     `json:"calpickTopLeftCol,omitempty"`
	CalpickTopLeftRow     *int     `json:"calpickTopLeftRow,omitempty"`
	CalpickBottomLeftCol  *int     `json:"calpickBottomLeftCol,omitempty"`
	CalpickBottomLeftRow  *int     `json:"calpickBottomLeftRow,omitempty"`
	CalpickTopRightCol    *int     `json:"calpickTopRightCol,omitempty"`
	CalpickTopRightRow    *int     `json:"calpickTopRightRow,omitempty"`
	CalpickBottomRightCol *int     `json:"calpickBottomRightCol,omitempty"`
	CalpickBottomRightRow *int     `json:"calpickBottomRightRow,omitempty"`
}

// record checks the body and returns it as stored.
func (d *adasMeasurementsDTO) record() (*store.ADASMeasurements, error) {
	for _, f := range []struct {
		name string
		set  bool
	}{{"cameraHeight", d.CameraHeight != nil}, {"cameraOffset", d.CameraOffset != nil}, {"vehicleWidth", d.VehicleWidth != nil}} {
		if !f.set {
			return nil, badField(f.name, "is required")
		}
	}
	m := protocol.ADASMeasurements{CameraHeight: *d.CameraHeight, CameraOffset: *d.CameraOffset, VehicleWidth: *d.VehicleWidth}
	points := []struct {
		name string
		v    *int
		dst  func(p *protocol.ADASPoints) *int
	}{
		{"lowestUsableRow", d.LowestUsableRow, func(p *protocol.ADASPoints) *int { return &p.LowestUsableRow }},
		{"calpickTopLeftCol", d.CalpickTopLeftCol, func(p *protocol.ADASPoints) *int { return &p.CalpickTopLeftCol }},
		{"calpickTopLeftRow", d.CalpickTopLeftRow, func(p *protocol.ADASPoints) *int { return &p.CalpickTopLeftRow }},
		{"calpickBottomLeftCol", d.CalpickBottomLeftCol, func(p *protocol.ADASPoints) *int { return &p.CalpickBottomLeftCol }},
		{"calpickBottomLeftRow", d.CalpickBottomLeftRow, func(p *protocol.ADASPoints) *int { return &p.CalpickBottomLeftRow }},
		{"calpickTopRightCol", d.CalpickTopRightCol, func(p *protocol.ADASPoints) *int { return &p.CalpickTopRightCol }},
		{"calpickTopRightRow", d.CalpickTopRightRow, func(p *protocol.ADASPoints) *int { return &p.CalpickTopRightRow }},
		{"calpickBottomRightCol", d.CalpickBottomRightCol, func(p *protocol.ADASPoints) *int { return &p.CalpickBottomRightCol }},
		{"calpickBottomRightRow", d.CalpickBottomRightRow, func(p *protocol.ADASPoints) *int { return &p.CalpickBottomRightRow }},
	}
	named := 0
	for _, p := range points {
		if p.v != nil {
			named++
		}
	}
	if named > 0 {
		m.Points = &protocol.ADASPoints{}
		for _, p := range points {
			if p.v == nil {
				return nil, badField(p.name, "is required with the picked points: give all nine or none (firmware 14.4 and later)")
			}
			*p.dst(m.Points) = *p.v
		}
	}
	if err := m.Validate(); err != nil {
		return nil, badRequest("%v", err)
	}
	out := &store.ADASMeasurements{CameraHeight: m.CameraHeight, CameraOffset: m.CameraOffset, VehicleWidth: m.VehicleWidth}
	if m.Points != nil {
		p := store.ADASPoints(*m.Points)
		out.Points = &p
	}
	return out, nil
}

// adasStatusDTO is the answer of GET /devices/{imei}/calibrate-adas.
type adasStatusDTO struct {
	Measurements    adasMeasurementValues `json:"measurements"`
	Status          string                `json:"status"`
	FeatureStatuses map[string]string     `json:"featureStatuses"`
}

type adasMeasurementValues struct {
	CameraHeight int     `json:"cameraHeight"`
	CameraOffset int     `json:"cameraOffset"`
	VehicleWidth float64 `json:"vehicleWidth"`
}

// adasFeatures are the features that wait for a completed calibration.
var adasFeatures = []string{"rollingStopDetection", "followingDistance", "criticalDistance"}

// calibration returns the device's latest calibration with a manual one
// resolved: completed once the device acknowledged the configuration that
// carries it. nil: none was made.
func calibration(ctl store.DeviceControl, dl *store.DeviceLink) *store.CalibrationState {
	c := ctl.Calibration
	if c == nil || c.Type != store.CalibrationManual {
		return c
	}
	out := *c
	if dl != nil && !dl.ConfigAckedAt.IsZero() && dl.AckedConfigVersion >= c.Version {
		out.State = store.CalibrationCompleted
	}
	return &out
}

// adasState reads the path's device, its control settings and its latest
// calibration. A calibration the device reported pending is asked about
// again when the device is online, and the answer stored.
func (s *Server) adasState(c *gin.Context) (*store.Device, store.DeviceControl, *store.CalibrationState, error) {
	var d *store.Device
	var ctl store.DeviceControl
	var cal *store.CalibrationState
	read := func() error {
		return s.view(c, func(tx *store.Tx) error {
			var err error
			if d, err = s.device(c, tx); err != nil {
				return err
			}
			e, err := tx.EffectiveSettings(d.IMEI)
			if err != nil {
				return err
			}
			dl, err := tx.DeviceLink(d.IMEI)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			ctl, cal = e.Control, calibration(e.Control, dl)
			return nil
		})
	}
	if err := read(); err != nil {
		return nil, ctl, nil, err
	}
	if cal == nil || cal.State != store.CalibrationPending || cal.Type == store.CalibrationManual || !s.online(d.IMEI) {
		return d, ctl, cal, nil
	}
	raw, err := s.commander.Send(c.Request.Context(), d.IMEI, protocol.CmdAdasCalibrationState, nil)
	var res protocol.AdasCalibrationResult
	if err != nil || json.Unmarshal(raw, &res) != nil || res.State == cal.State {
		return d, ctl, cal, nil // the stored state stands
	}
	if err := s.recordCalibration(c, d.IMEI, cal.Type, res.State, false); err != nil {
		return nil, ctl, nil, err
	}
	return d, ctl, cal, read()
}

// recordCalibration stores the state of the device's latest calibration;
// requested says a new calibration started now.
func (s *Server) recordCalibration(c *gin.Context, imei, typ, state string, requested bool) error {
	return s.update(c, func(tx *store.Tx) error {
		return updateControl(tx, imei, "device.adasCalibration", func(ctl *store.DeviceControl, _ int64) error {
			cal := ctl.Calibration
			if requested || cal == nil {
				cal = &store.CalibrationState{Type: typ, RequestedAt: s.now()}
			}
			cal.State, cal.UpdatedAt = state, s.now()
			ctl.Calibration = cal
			return nil
		})
	})
}

// getCalibrateADAS handles GET /devices/{imei}/calibrate-adas: the
// measurements (zero until set), none / ready (measurements set, no
// calibration completed) / completed, and the features that wait for it.
// The contract limits it to AI-14 firmware 14.4; fleetcam answers it for
// every device.
func (s *Server) getCalibrateADAS(c *gin.Context) error {
	_, ctl, cal, err := s.adasState(c)
	if err != nil {
		return err
	}
	out := adasStatusDTO{Status: "none", FeatureStatuses: map[string]string{}}
	if a := ctl.ADAS; a != nil {
		out.Measurements = adasMeasurementValues{CameraHeight: a.CameraHeight, CameraOffset: a.CameraOffset, VehicleWidth: a.VehicleWidth}
		out.Status = "ready"
	}
	feature := "pending"
	if cal != nil && cal.State == store.CalibrationCompleted {
		out.Status, feature = "completed", "active"
	}
	for _, f := range adasFeatures {
		out.FeatureStatuses[f] = feature
	}
	return ok(c, out)
}

// putCalibrateADAS handles PUT /devices/{imei}/calibrate-adas: the
// measurements replace the device's (a manual calibration), delivered with
// its configuration; the calibration is pending until the device
// acknowledges that configuration.
func (s *Server) putCalibrateADAS(c *gin.Context) error {
	var dto adasMeasurementsDTO
	if err := decode(c, &dto); err != nil {
		return err
	}
	m, err := dto.record()
	if err != nil {
		return err
	}
	err = s.updatePathDevice(c, func(tx *store.Tx, d *store.Device) error {
		return updateControl(tx, d.IMEI, "device.adasMeasurements", func(ctl *store.DeviceControl, version int64) error {
			ctl.ADAS = m
			ctl.Calibration = &store.CalibrationState{Type: store.CalibrationManual, State: store.CalibrationPending,
				Version: version, RequestedAt: s.now(), UpdatedAt: s.now()}
			return nil
		})
	})
	if err != nil {
		return err
	}
	return ok(c, gin.H{})
}

// calibrateNow runs a calibration of type typ (protocol) on d, which must
// be online and not calibrating already, and records its state.
func (s *Server) calibrateNow(c *gin.Context, d *store.Device, cal *store.CalibrationState, typ string) (string, error) {
	if cal != nil && cal.State == store.CalibrationPending && cal.Type != store.CalibrationManual {
		return "", conflict("device %s is calibrating already (requested at %s)", d.IMEI, isoTime(cal.RequestedAt))
	}
	apiType := store.CalibrationAuto
	if typ == protocol.CalibrationRecalibration {
		apiType = store.CalibrationAutoRecalibrate
	}
	raw, err := s.deviceCommand(c, d, immediate{name: protocol.CmdAdasCalibrate, args: protocol.AdasCalibrateArgs{Type: typ},
		action: "device.adasCalibrate", reason: apiType + " ADAS calibration requested"})
	if err != nil {
		return "", err
	}
	var res protocol.AdasCalibrationResult
	if err := json.Unmarshal(raw, &res); err != nil || res.State == "" {
		return "", fmt.Errorf("cloudapi: adasCalibrate reply of %s: %s", d.IMEI, raw)
	}
	return res.State, s.recordCalibration(c, d.IMEI, apiType, res.State, true)
}

// postCalibrateADAS handles POST /devices/{imei}/calibrate-adas: the device
// calibrates from its calibration images now. It must be online (417) and
// not calibrating already (409). The answer carries the state it reported.
func (s *Server) postCalibrateADAS(c *gin.Context) error {
	d, _, cal, err := s.adasState(c)
	if err == nil && !s.online(d.IMEI) {
		err = ErrDeviceOffline
	}
	if err != nil {
		return err
	}
	state, err := s.calibrateNow(c, d, cal, protocol.CalibrationAuto)
	if err != nil {
		return err
	}
	return ok(c, gin.H{"state": state})
}

// getCalibrateADASState handles GET /devices/{imei}/calibrate-adas/state:
// the state of the latest calibration (404 before any).
func (s *Server) getCalibrateADASState(c *gin.Context) error {
	d, _, cal, err := s.adasState(c)
	if err != nil {
		return err
	}
	if cal == nil {
		return notFound("ADAS calibration of device " + d.IMEI)
	}
	return ok(c, cal.State)
}
