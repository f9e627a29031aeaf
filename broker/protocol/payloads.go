package protocol

import "encoding/json"

// TokenGrant carries the secret token issued after a bootstrap. The device
// stores it and uses it as its password from then on; any older token stops working.
type TokenGrant struct {
	Token    string `json:"token"`
	IssuedAt int64  `json:"issuedAt"` // unix seconds
}

// Status is the device's health and presence report, sent after every connect
// and whenever a member changes.
type Status struct {
	Firmware    string `json:"firmware"`
	ProductType string `json:"productType,omitempty"` // e.g. "AI-12"
	// State is "online" or "standby".
	State          string        `json:"state"`
	SDCard         *SDCard       `json:"sdCard,omitempty"`
	RecordingTest  string        `json:"recordingTest,omitempty"` // "passed" or "failed"
	PowerConnected *bool         `json:"powerConnected,omitempty"`
	Cameras        []Camera      `json:"cameras,omitempty"`
	DataUsage      *DataUsage    `json:"dataUsage,omitempty"`
	Hotspot        *HotspotState `json:"hotspot,omitempty"`
	AdasCalibrated *bool         `json:"adasCalibrated,omitempty"`
}

// SDCard describes the storage card.
type SDCard struct {
	Present      bool   `json:"present"`
	Healthy      bool   `json:"healthy"`
	UUID         string `json:"uuid,omitempty"`
	Manufacturer string `json:"manufacturer,omitempty"`
}

// Camera is one camera of the device: 1 road-facing, 2 in-cabin, 50 and above auxiliary.
type Camera struct {
	ID           int    `json:"id"`
	Connected    bool   `json:"connected"`
	Kind         string `json:"kind,omitempty"` // "wired" or "wifi" for auxiliary cameras
	SerialNumber string `json:"serialNumber,omitempty"`
}

// DataUsage is cellular data used in the period since PeriodStart.
type DataUsage struct {
	PeriodStart int64 `json:"periodStart"` // unix seconds
	BytesUp     int64 `json:"bytesUp"`
	BytesDown   int64 `json:"bytesDown"`
}

// HotspotState is the Wi-Fi hotspot as the device reports it.
type HotspotState struct {
	On bool `json:"on"`
}

// GPSSample is one position fix.
type GPSSample struct {
	Time     int64   `json:"time"` // unix milliseconds
	Lat      float64 `json:"lat"`
	Lon      float64 `json:"lon"`
	Alt      float64 `json:"alt"`
	Speed    float64 `json:"speed"` // km/h
	Accuracy float64 `json:"accuracy"`
	Heading  float64 `json:"heading,omitempty"`
}

// GPSBatch is a run of fixes, oldest first.
type GPSBatch struct {
	Samples []GPSSample `json:"samples"`
}

// Sample is one accelerometer sample of an event's metadata.
type Sample struct {
	X     float64 `json:"x"` // m/s²
	Y     float64 `json:"y"`
	Z     float64 `json:"z"`
	Time  int64   `json:"time"`  // unix seconds
	Speed float64 `json:"speed"` // m/s
}

// File names a camera file recorded for an event; its bytes are uploaded
// over HTTP when the cloud asks for them.
type File struct {
	CameraID int    `json:"cameraId"`
	FileID   string `json:"fileId"`
	FileType string `json:"fileType"` // "video" or "snapshot"
}

// Event is a driving or device event. ID is unique per device and makes
// redelivery idempotent.
type Event struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"` // API syntax, e.g. "deceleration"
	Time     int64    `json:"time"` // unix milliseconds
	Lat      float64  `json:"lat"`
	Lon      float64  `json:"lon"`
	Alt      float64  `json:"alt"`
	Speed    float64  `json:"speed"` // km/h
	Accuracy float64  `json:"accuracy"`
	Severity int      `json:"severity,omitempty"`
	Samples  []Sample `json:"samples,omitempty"`
	Files    []File   `json:"files,omitempty"`
	// Type-specific members.
	QRCode       string  `json:"qrCode,omitempty"`
	GeoFenceID   int64   `json:"geoFenceId,omitempty"`
	GeoFencePath string  `json:"geoFencePath,omitempty"` // "entered" or "exited"
	SDCard       *SDCard `json:"sdCard,omitempty"`
	DriverID     int64   `json:"driverId,omitempty"`
	PinCode      string  `json:"pinCode,omitempty"`
	CameraID     int     `json:"cameraId,omitempty"` // auxiliary camera events
}

// ConfigAck acknowledges a DesiredConfig version and reports what the device applied.
type ConfigAck struct {
	Version  int64           `json:"version"`
	Reported json.RawMessage `json:"reported,omitempty"`
}

// MediaReady tells the cloud that an upload finished.
type MediaReady struct {
	FileID   string `json:"fileId"`
	CameraID int    `json:"cameraId"`
	FileType string `json:"fileType"`
}
