package protocol

// DesiredConfig is everything the cloud wants a device to apply. The cloud
// sends it on every connect until the device acknowledges Version.
type DesiredConfig struct {
	Version   int64         `json:"version"`
	Device    DeviceConfig  `json:"device"`
	Events    EventConfig   `json:"events"`
	Privacy   PrivacyConfig `json:"privacy"`
	Geofences []Geofence    `json:"geofences,omitempty"`
	// RetentionDays bounds how long recordings stay on the SD card (0: until full).
	RetentionDays int `json:"retentionDays,omitempty"`
	// AllowedDrivers are the PINs and QR codes that may check in.
	Drivers []DriverCredential `json:"drivers,omitempty"`
}

// DeviceConfig mirrors the device configuration parameters of the API.
type DeviceConfig struct {
	AudioAlarms                 bool   `json:"audioAlarms"`
	VoiceRecording              bool   `json:"voiceRecording"`
	Brightness                  int    `json:"brightness"`
	SetTimezoneByCloud          bool   `json:"setTimezoneByCloud"`
	PinCodeDi                   bool   `json:"pinCodeDi"`
	QrDi                        bool   `json:"qrDi"`
	DriverIdentification        bool   `json:"driverIdentification"`
	DriverPrompt                bool   `json:"driverPrompt"`
	AudioAlert                  bool   `json:"audioAlert"`
	DriverPromptDurationSeconds int    `json:"driverPromptDurationSeconds,omitempty"`
	LiveVideo                   bool   `json:"liveVideo"`
	StandbyHours                int    `json:"standbyHours,omitempty"`
	HotspotOn                   bool   `json:"hotspotOn"`
	HotspotPassword             string `json:"hotspotPassword,omitempty"`
}

// PrivacyConfig mirrors the privacy object.
type PrivacyConfig struct {
	RecordingEnabled  bool `json:"recordingEnabled"`
	AllEventsEnabled  bool `json:"allEventsEnabled"`
	LiveStreamEnabled bool `json:"liveStreamEnabled"`
	MvaiEnabled       bool `json:"mvaiEnabled"`
	// Cameras holds per-camera privacy flags; false blocks that camera's media.
	Cameras map[int]bool `json:"cameras,omitempty"`
	// Mode is the privacy mode: "on" or "off".
	Mode string `json:"mode,omitempty"`
}

// EventConfig is the per-event switches and thresholds.
type EventConfig struct {
	// Events maps an API-syntax event type to its settings; a type absent
	// from the map is enabled with default alerts.
	Events                     map[string]EventSetting `json:"events,omitempty"`
	LaneWeavingTimes           int                     `json:"laneWeavingTimes"`
	LaneWeavingDurationSeconds int                     `json:"laneWeavingDurationSeconds"`
	DrivingDurationHours       int                     `json:"drivingDuration"`
	MvaiMinSpeedKmh            int                     `json:"mvaiMinSpeed"`
	SpeedLimitKmh              int                     `json:"speedLimitKmh,omitempty"`
}

// EventSetting switches one event type.
type EventSetting struct {
	Enabled     bool `json:"enabled"`
	VisualAlert bool `json:"visualAlert"`
	AudioAlert  bool `json:"audioAlert"`
}

// Geofence is a circle or polygon the device watches.
type Geofence struct {
	ID     int64    `json:"id"`
	Name   string   `json:"name"`
	Circle *Circle  `json:"circle,omitempty"`
	Points []LatLon `json:"points,omitempty"`
}

// Circle is a center and a radius in meters.
type Circle struct {
	Center       LatLon  `json:"center"`
	RadiusMeters float64 `json:"radiusMeters"`
}

// LatLon is a position.
type LatLon struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// DriverCredential lets a driver check in at the device.
type DriverCredential struct {
	DriverID int64  `json:"driverId"`
	PinCode  string `json:"pinCode,omitempty"`
	QRCode   string `json:"qrCode,omitempty"`
}
