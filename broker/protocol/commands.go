package protocol

import "encoding/json"

// Command names. Each names the args type it carries and the result type of its reply.
const (
	CmdPrivacyMode      = "privacyMode"      // PrivacyModeArgs → none
	CmdHotspot          = "hotspot"          // HotspotArgs → none
	CmdFormatStorage    = "formatStorage"    // none → SDCard (and an sdCardFormatted event)
	CmdUploadMedia      = "uploadMedia"      // UploadArgs → none (MediaReady when done)
	CmdRecordingRanges  = "recordingRanges"  // none → RecordingRanges
	CmdClip             = "clip"             // ClipArgs → ClipResult (virtual events, recordings)
	CmdLiveStream       = "liveStream"       // LiveStreamArgs → none
	CmdAdasImages       = "adasImages"       // AdasImagesArgs → AdasImagesResult
	CmdAdasDeleteImages = "adasDeleteImages" // none → none
	CmdDriverCheckout   = "driverCheckout"   // none → none (and a driverCheckOut event)
	CmdFactoryReset     = "factoryReset"     // none → none
	CmdReboot           = "reboot"           // none → none
	CmdAuxSearch        = "auxSearch"        // AuxSearchArgs → AuxCamerasResult (cameras in range)
	CmdAuxPair          = "auxPair"          // AuxPairArgs → AuxCamerasResult (cameras paired)
	CmdAuxUnpair        = "auxUnpair"        // AuxUnpairArgs → none
	// CmdWakeup brings a device in standby back to full operation.
	CmdWakeup = "wakeup" // none → none
	// CmdAdasCalibrate starts an ADAS calibration (control.go).
	CmdAdasCalibrate = "adasCalibrate" // AdasCalibrateArgs → AdasCalibrationResult
	// CmdAdasCalibrationState asks how the latest ADAS calibration went.
	CmdAdasCalibrationState = "adasCalibrationState" // none → AdasCalibrationResult
	// CmdCalibrateAccelerometer levels the accelerometer at the current
	// position of the parked vehicle.
	CmdCalibrateAccelerometer = "calibrateAccelerometer" // none → none
)

// Command asks a device to do something. ID is the correlation id: with MQTT
// 5 it is also sent as correlation data with a response topic; with MQTT
// 3.1.1 the device copies it into its Reply.
type Command struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args,omitempty"`
	IssuedAt int64           `json:"issuedAt"` // unix seconds
}

// Reply answers a Command.
type Reply struct {
	ID     string          `json:"id"`
	OK     bool            `json:"ok"`
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// PrivacyModeArgs switches privacy mode.
type PrivacyModeArgs struct {
	Mode string `json:"mode"` // "on" or "off"
}

// HotspotArgs switches the hotspot; Password is set when it turns on.
type HotspotArgs struct {
	On       bool   `json:"on"`
	Password string `json:"password,omitempty"`
}

// UploadArgs asks the device to PUT a file to URL before the URL expires.
type UploadArgs struct {
	FileID   string `json:"fileId"`
	CameraID int    `json:"cameraId"`
	FileType string `json:"fileType"`
	URL      string `json:"url"`
	Expires  int64  `json:"expires"` // unix seconds
}

// RecordingRanges lists, per camera, the intervals the SD card holds.
type RecordingRanges struct {
	Cameras []CameraRanges `json:"cameras"`
}

// CameraRanges is one camera's recorded intervals.
type CameraRanges struct {
	CameraID int        `json:"cameraId"`
	Ranges   [][2]int64 `json:"ranges"` // [start, end] unix seconds
}

// ClipArgs asks for the recording around Time, uploaded to URL when set.
type ClipArgs struct {
	Time            int64  `json:"time"` // unix seconds
	DurationSeconds int    `json:"durationSeconds"`
	CameraID        int    `json:"cameraId"`
	MediaType       string `json:"mediaType"` // "video" or "snapshot"
	Quality         string `json:"quality,omitempty"`
	FileID          string `json:"fileId"`
	URL             string `json:"url,omitempty"`
	Expires         int64  `json:"expires,omitempty"`
}

// ClipResult says whether the recording existed.
type ClipResult struct {
	Available bool `json:"available"`
}

// LiveStreamArgs starts or stops a live stream of frames POSTed to URL.
type LiveStreamArgs struct {
	CameraID int    `json:"cameraId"`
	Start    bool   `json:"start"`
	URL      string `json:"url,omitempty"`
	Expires  int64  `json:"expires,omitempty"`
}

// AdasImagesArgs asks for calibration images, uploaded to the URLs given per camera.
type AdasImagesArgs struct {
	CalibrationType string         `json:"calibrationType"` // "auto" or "manual"
	URLs            map[int]string `json:"urls"`
	Expires         int64          `json:"expires"`
}

// AdasImagesResult lists the files the device uploaded.
type AdasImagesResult struct {
	Files []File `json:"files"`
}

// AuxSearchArgs asks the device for up to Limit auxiliary cameras in range.
type AuxSearchArgs struct {
	Limit int `json:"limit"`
}

// AuxPairArgs asks the device to pair the auxiliary cameras with these SSIDs.
type AuxPairArgs struct {
	SSIDs []string `json:"ssids"`
}

// AuxUnpairArgs asks the device to unpair auxiliary cameras.
type AuxUnpairArgs struct {
	CameraIDs []int `json:"cameraIds"`
}

// AuxCamerasResult lists auxiliary cameras found or paired. A paired camera
// has its camera id (50 and above) assigned by the device.
type AuxCamerasResult struct {
	Cameras []AuxCameraInfo `json:"cameras"`
}

// AuxCameraInfo describes one auxiliary camera.
type AuxCameraInfo struct {
	CameraID     int    `json:"cameraId,omitempty"`
	SSID         string `json:"ssid,omitempty"`
	SerialNumber string `json:"serialNumber,omitempty"`
	Kind         string `json:"kind,omitempty"` // "wired" or "wifi"
}
