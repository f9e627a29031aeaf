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
	// RetentionMinutes is the same bound to the minute; RetentionDays is it rounded up.
	RetentionMinutes int `json:"retentionMinutes,omitempty"`
	// CameraRetentionMinutes maps a camera id to the device's own retention
	// of that camera, in minutes, which overrides RetentionMinutes for it.
	CameraRetentionMinutes map[string]int `json:"cameraRetentionMinutes,omitempty"`
	// AllowedDrivers are the PINs and QR codes that may check in.
	Drivers []DriverCredential `json:"drivers,omitempty"`
	// Control is how the device itself runs (control.go).
	Control ControlConfig `json:"control"`
}

// DeviceConfig mirrors the device configuration parameters of the API.
type DeviceConfig struct {
	AudioAlarms                 bool `json:"audioAlarms"`
	VoiceRecording              bool `json:"voiceRecording"`
	Brightness                  int  `json:"brightness"`
	SetTimezoneByCloud          bool `json:"setTimezoneByCloud"`
	PinCodeDi                   bool `json:"pinCodeDi"`
	QrDi                        bool `json:"qrDi"`
	DriverIdentification        bool `json:"driverIdentification"`
	DriverPrompt                bool `json:"driverPrompt"`
	AudioAlert                  bool `json:"audioAlert"`
	DriverPromptDurationSeconds int  `json:"driverPromptDurationSeconds,omitempty"`
	LiveVideo                   bool `json:"liveVideo"`
	// StandbyMinutes is how long after the vehicle stops the camera enters standby (up to 1440).
	StandbyMinutes  int    `json:"standbyMinutes,omitempty"`
	HotspotOn       bool   `json:"hotspotOn"`
	HotspotPassword string `json:"hotspotPassword,omitempty"`
	// InternetAccess lets the device reach the internet over Wi-Fi.
	InternetAccess         bool   `json:"internetAccess"`
	Adas                   bool   `json:"adas"`
	DistractedDriver       bool   `json:"distractedDriver"`
	DriverCamera           bool   `json:"driverCamera"`
	InCabinCameraRecording bool   `json:"inCabinCameraRecording"`
	TextOverlay            bool   `json:"textOverlay"`
	DriverPosition         string `json:"driverPosition,omitempty"` // "left" or "right"
	SpeedUnits             string `json:"speedUnits,omitempty"`     // "kmh" or "mph"
	DateTimeUnits          string `json:"dateTimeUnits,omitempty"`  // "eu" or "us"
	NotifyLiveStreaming    bool   `json:"notifyLiveStreaming"`
	VirtualIgnition        bool   `json:"virtualIgnition"`
	ScreenTimeoutSeconds   int    `json:"screenTimeoutSeconds,omitempty"`
	PassengerLimit         int    `json:"passengerLimit,omitempty"`
	WakeupMessage          bool   `json:"wakeupMessage"`
	WakeupMessageSeconds   int    `json:"wakeupMessageSeconds,omitempty"`
	LEDEnabled             bool   `json:"ledEnabled"`
}

// PrivacyConfig mirrors the privacy object.
type PrivacyConfig struct {
	RecordingEnabled  bool `json:"recordingEnabled"`
	AllEventsEnabled  bool `json:"allEventsEnabled"`
	LiveStreamEnabled bool `json:"liveStreamEnabled"`
	MvaiEnabled       bool `json:"mvaiEnabled"`
	GPSEnabled        bool `json:"gpsEnabled"`
	// Cameras holds per-camera privacy flags; false blocks that camera's media.
	Cameras map[int]bool `json:"cameras,omitempty"`
	// CameraRecording holds per-camera recording flags; false stops that camera recording.
	CameraRecording map[int]bool `json:"cameraRecording,omitempty"`
	// Mode is the privacy mode: "on" or "off".
	Mode string `json:"mode,omitempty"`
	// ModeConfig says what stays enabled while Mode is "on"; absent until
	// privacy mode was switched for the first time.
	ModeConfig *PrivacyModeConfig `json:"modeConfig,omitempty"`
}

// PrivacyModeConfig lists what stays enabled while privacy mode is on;
// every member false stops all of it.
type PrivacyModeConfig struct {
	GPSTracking         bool `json:"gpsTracking"`
	LiveVideo           bool `json:"liveVideo"`
	CabinEvents         bool `json:"cabinEvents"`
	CabinLensVideo      bool `json:"cabinLensVideo"`
	CabinBeepAlerts     bool `json:"cabinBeepAlerts"`
	VoiceRecording      bool `json:"voiceRecording"`
	RoadAndAuxEvents    bool `json:"roadAndAuxEvents"`
	RoadAndAuxLensVideo bool `json:"roadAndAuxLensVideo"`
	AccelerationEvents  bool `json:"accelerationEvents"`
	GSensorEvents       bool `json:"gSensorEvents"`
	VirtualEvent        bool `json:"virtualEvent"`
	OtherEvents         bool `json:"otherEvents"`
}

// EventConfig is the per-event switches and thresholds.
type EventConfig struct {
	// VehicleType sets the motion sensor's sensitivity: Private, Van or Trailer.
	VehicleType string `json:"vehicleType,omitempty"`
	// Events maps an API-syntax event type to its settings; a type absent
	// from the map is enabled with default alerts.
	Events                     map[string]EventSetting `json:"events,omitempty"`
	LaneWeavingTimes           int                     `json:"laneWeavingTimes"`
	LaneWeavingDurationSeconds int                     `json:"laneWeavingDurationSeconds"`
	DrivingDurationHours       int                     `json:"drivingDuration"`
	MvaiMinSpeedKmh            int                     `json:"mvaiMinSpeed"`
	SpeedLimitKmh              int                     `json:"speedLimitKmh,omitempty"`
}

// EventSetting switches one event type; every member is resolved (no defaults left to the device).
type EventSetting struct {
	Enabled     bool `json:"enabled"`
	VisualAlert bool `json:"visualAlert"`
	AudioAlert  bool `json:"audioAlert"`
	// DataType is the media attached: none, snapshot or video.
	DataType string `json:"dataType,omitempty"`
	// MinimumSpeedKmh applies to MV+AI events; below 5 no event is created.
	MinimumSpeedKmh int `json:"minimumSpeed,omitempty"`
	// NumberOfBeeps before an MV+AI event is created (0: device default).
	NumberOfBeeps int `json:"numberOfBeeps,omitempty"`
	// Weight is the scoring weight, 0 to 5.
	Weight int `json:"weight,omitempty"`
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
