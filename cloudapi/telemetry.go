package cloudapi

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Telemetry is what the cloud last learned of a device: its connection,
// its health reports and open alarms, its configuration and its auxiliary
// cameras. fleetcam's devices do not report their SIM (network type,
// operator, state, number), modem version, SD card sizes or Wi-Fi signal:
// those members are empty, "unknown" or 0, and the contract's optional
// ones are left out.

// auxTelemetryDTO is one paired auxiliary camera in a device's telemetry.
type auxTelemetryDTO struct {
	CameraID int    `json:"cameraId"`
	State    string `json:"state"`
}

// telemetryDTO answers GET /devices/{imei}/telemetry.
type telemetryDTO struct {
	FirmwareVersion string `json:"firmwareVersion"`
	DeviceModel     string `json:"deviceModel"`
	LastSeenOnline  string `json:"lastSeenOnline"`
	// Status is the connection status: online, standby or offline.
	Status         string `json:"status"`
	SimNetworkType string `json:"simNetworkType"`
	SimOperator    string `json:"simOperator"`
	SimState       string `json:"simState"`
	// CalibrationCompleted and AdasCalibrationCompleted both carry the one
	// calibration fleetcam's devices report, the ADAS one.
	CalibrationCompleted     bool `json:"calibrationCompleted"`
	AdasCalibrationCompleted bool `json:"adasCalibrationCompleted"`
	// SDCardInserted is false while an "SD card missing" alarm is open.
	SDCardInserted      bool              `json:"sdCardInserted"`
	SDCardCapacityBytes int64             `json:"sdCardCapacityBytes"`
	SDCardFreeBytes     int64             `json:"sdCardFreeBytes"`
	WifiEnabled         bool              `json:"wifiEnabled"`
	AuxCameras          []auxTelemetryDTO `json:"auxCameras"`
	// HealthReportedAt is when the device last reported its health; absent until it does.
	HealthReportedAt string `json:"healthReportedAt,omitempty"`
}

// neverConnected is the 417 of a telemetry call for a device the cloud has
// never heard from.
func neverConnected(imei string) error {
	return apiErr(http.StatusExpectationFailed, nameExpectationFailed,
		"device %s has never connected to the cloud, so there is no telemetry yet; power it on with a SIM that has data", imei)
}

// getDeviceTelemetry handles GET /devices/{imei}/telemetry: the last state
// the device reported, also while it is offline; 417 until it first connects.
func (s *Server) getDeviceTelemetry(c *gin.Context) error {
	var out telemetryDTO
	err := s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		pc, found := DeviceConnection{}, false
		if s.presence != nil {
			pc, found = s.presence.Presence(tx, d.IMEI)
		}
		if !found {
			return neverConnected(d.IMEI)
		}
		out = telemetryDTO{FirmwareVersion: pc.FirmwareVersion, DeviceModel: d.ProductType, LastSeenOnline: isoTime(pc.LastSeen),
			Status: pc.Status, SimState: "unknown", AuxCameras: []auxTelemetryDTO{}}
		h, err := tx.DeviceHealthState(d.IMEI)
		if err != nil {
			return err
		}
		out.CalibrationCompleted, out.AdasCalibrationCompleted = h.AdasCalibrated, h.AdasCalibrated
		out.HealthReportedAt = isoTime(h.ReportedAt)
		open := true
		_, missing, err := tx.Alarms(store.AlarmFilter{IMEI: d.IMEI, DefinitionID: store.AlarmSDCardMissing, Open: &open},
			store.Sort{}, store.Page{Limit: 1})
		if err != nil {
			return err
		}
		out.SDCardInserted = missing == 0
		eff, err := tx.EffectiveSettings(d.IMEI)
		if err != nil {
			return err
		}
		out.WifiEnabled = eff.Device.HotspotEnabled
		aux, err := tx.AuxCameras(d.IMEI)
		if err != nil {
			return err
		}
		for _, a := range aux {
			if !a.Paired {
				continue
			}
			st := auxTelemetryDTO{CameraID: a.CameraID, State: "notConnected"}
			if a.Connected {
				st.State = "connected"
			}
			out.AuxCameras = append(out.AuxCameras, st)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// Camera stream codes of the contract; fleetcam's cloud streams live
// video only (recordings are uploaded as files), so CODE3 to CODE5 never
// occur.
const (
	codeLiveReady    = "CODE1"
	codeLiveNotReady = "CODE2"
)

// cameraTelemetryDTO answers GET /devices/{imei}/{cameraId}/telemetry.
type cameraTelemetryDTO struct {
	Status string `json:"status"`
	Code   string `json:"code"`
}

// getCameraTelemetry handles GET /devices/{imei}/{cameraId}/telemetry: the
// state of the camera's live stream in the cloud (CODE1 once the first
// frame arrived, CODE2 otherwise). Camera 0 asks about every camera: CODE1
// when any of them streams.
func (s *Server) getCameraTelemetry(c *gin.Context) error {
	cam, err := strconv.Atoi(c.Param("cameraId"))
	if err != nil || cam != 0 && !store.ValidCameraID(cam) {
		return badField("cameraId", "must be 0 (every camera) or a camera id that "+store.RuleCameraID)
	}
	var cams []int
	err = s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		aux, err := tx.AuxCameras(d.IMEI)
		if err != nil {
			return err
		}
		known := []int{1, 2}
		for _, a := range aux {
			if a.Paired {
				known = append(known, a.CameraID)
			}
		}
		switch {
		case cam == 0:
			cams = known
		case cam >= store.MinAuxCameraID && !slices.Contains(known, cam):
			return notFound("auxiliary camera " + strconv.Itoa(cam) + " paired with device " + d.IMEI)
		default:
			cams = []int{cam}
		}
		return nil
	})
	if err != nil {
		return err
	}
	out := cameraTelemetryDTO{Status: "no live stream in progress", Code: codeLiveNotReady}
	for _, id := range cams {
		switch running, ready := s.live.State(c.Param("imei"), id); {
		case ready:
			out = cameraTelemetryDTO{Status: "live stream of camera " + strconv.Itoa(id) + " is ready", Code: codeLiveReady}
		case running && out.Code != codeLiveReady:
			out.Status = "live stream of camera " + strconv.Itoa(id) + " is starting: the device has sent no frame yet"
		}
	}
	return ok(c, out)
}
