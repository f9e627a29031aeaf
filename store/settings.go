package store

import (
	"fmt"
	"maps"
	"time"
)

// Device settings records. The API validates and writes them; the broker
// turns a device's effective settings into the desired configuration it
// pushes. Each change bumps the device's config version.

// DeviceConfig is a device's configuration parameters, as the API's
// device-config calls and the desired configuration carry them.
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
	// StandbyMinutes is how long after the vehicle stops the camera enters
	// standby, up to 24 hours.
	StandbyMinutes int `json:"standbyMinutes"`
	// HotspotEnabled switches the Wi-Fi hotspot (AI-12). The password is kept
	// per device (see HotspotPassword), never in a configuration.
	HotspotEnabled bool `json:"hotspotEnabled"`
	// InternetAccess lets the device reach the internet over Wi-Fi.
	InternetAccess         bool   `json:"internetAccess"`
	Adas                   bool   `json:"adas"`
	DistractedDriver       bool   `json:"distractedDriver"`
	DriverCamera           bool   `json:"driverCamera"`
	InCabinCameraRecording bool   `json:"inCabinCameraRecording"`
	TextOverlay            bool   `json:"textOverlay"`
	DriverPosition         string `json:"driverPosition"` // "left" or "right"
	SpeedUnits             string `json:"speedUnits"`     // "kmh" or "mph"
	DateTimeUnits          string `json:"dateTimeUnits"`  // "eu" or "us"
	NotifyLiveStreaming    bool   `json:"notifyLiveStreaming"`
	VirtualIgnition        bool   `json:"virtualIgnition"`
	ScreenTimeoutSeconds   int    `json:"screenTimeoutSeconds"`
	PassengerLimit         int    `json:"passengerLimit"`
	WakeupMessage          bool   `json:"wakeupMessage"`
	WakeupMessageSeconds   int    `json:"wakeupMessageSeconds"`
	LEDEnabled             bool   `json:"ledEnabled"`
}

// DefaultDeviceConfig is what a device gets when neither it nor its
// organization has device settings, and what a replacing write starts from.
func DefaultDeviceConfig() DeviceConfig {
	return DeviceConfig{AudioAlarms: true, Brightness: 128, LiveVideo: true, StandbyMinutes: 10,
		DistractedDriver: true, DriverCamera: true, InCabinCameraRecording: true, TextOverlay: true,
		DriverPosition: "left", SpeedUnits: "kmh", DateTimeUnits: "eu", NotifyLiveStreaming: true,
		ScreenTimeoutSeconds: 60, PassengerLimit: 4, WakeupMessageSeconds: 10, LEDEnabled: true}
}

// PrivacyConfig is the privacy object of the device configuration. It
// applies until privacy mode is switched for the first time; from then on
// PrivacyModeConfig governs while privacy mode is on.
type PrivacyConfig struct {
	RecordingEnabled  bool `json:"recordingEnabled"`
	AllEventsEnabled  bool `json:"allEventsEnabled"`
	LiveStreamEnabled bool `json:"liveStreamEnabled"`
	MvaiEnabled       bool `json:"mvaiEnabled"`
	GPSEnabled        bool `json:"gpsEnabled"`
	// Cameras holds per-camera event flags; false blocks that camera's event media.
	Cameras map[int]bool `json:"cameras,omitempty"`
	// CameraRecording holds per-camera recording flags; false stops that camera recording.
	CameraRecording map[int]bool `json:"cameraRecording,omitempty"`
}

// DefaultPrivacyConfig enables everything.
func DefaultPrivacyConfig() PrivacyConfig {
	return PrivacyConfig{RecordingEnabled: true, AllEventsEnabled: true, LiveStreamEnabled: true,
		MvaiEnabled: true, GPSEnabled: true}
}

func (p PrivacyConfig) clone() PrivacyConfig {
	p.Cameras = maps.Clone(p.Cameras)
	p.CameraRecording = maps.Clone(p.CameraRecording)
	return p
}

// PrivacyModeConfig says what stays enabled while privacy mode is on. Every
// member is disabled by default: privacy mode stops all of it.
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

// EventSetting switches one event type and its alerts. Nil members take
// their defaults (see EventConfig.Setting).
type EventSetting struct {
	Enabled bool `json:"enabled"`
	// DataType is the media attached: none, snapshot or video.
	DataType    string `json:"dataType,omitempty"`
	VisualAlert *bool  `json:"visualAlert,omitempty"`
	AudioAlert  *bool  `json:"audioAlert,omitempty"`
	// MinimumSpeedKmh applies to MV+AI events; below 5 no event is created.
	MinimumSpeedKmh *int `json:"minimumSpeed,omitempty"`
	// NumberOfBeeps before an MV+AI event is created (0: device default).
	NumberOfBeeps int `json:"numberOfBeeps,omitempty"`
	// Weight is the scoring weight, 0 to 5.
	Weight int `json:"weight,omitempty"`
}

// EventConfig is a device's event configuration parameters, as the API's
// event-config calls carry them.
type EventConfig struct {
	// VehicleType sets the motion sensor's sensitivity: Private, Van or Trailer.
	VehicleType string `json:"vehicleType"`
	// Events holds per-type settings keyed by API syntax; a type absent here
	// is enabled, with the visual alert on and the audio alert following audioAlarms.
	Events                     map[string]EventSetting `json:"events,omitempty"`
	LaneWeavingTimes           int                     `json:"laneWeavingTimes"`
	LaneWeavingDurationSeconds int                     `json:"laneWeavingDurationSeconds"`
	DrivingDurationHours       int                     `json:"drivingDuration"`
	// MvaiMinSpeedKmh is the minimum speed of MV+AI events without their own.
	MvaiMinSpeedKmh int `json:"mvaiMinSpeed"`
	SpeedLimitKmh   int `json:"speedLimitKmh,omitempty"`
}

// Vehicle types.
const (
	VehiclePrivate = "Private"
	VehicleVan     = "Van"
	VehicleTrailer = "Trailer"
)

// DefaultEventConfig is the event configuration of a device and an
// organization that never set one: vehicle type Private, lane weaving 3
// times in 30 seconds, possible fatigue after 8 hours of driving, MV+AI
// events from 5 km/h.
func DefaultEventConfig() EventConfig {
	return EventConfig{VehicleType: VehiclePrivate, LaneWeavingTimes: 3, LaneWeavingDurationSeconds: 30,
		DrivingDurationHours: 8, MvaiMinSpeedKmh: 5}
}

// Clone returns a deep copy of c.
func (c EventConfig) Clone() EventConfig {
	if c.Events != nil {
		ev := make(map[string]EventSetting, len(c.Events))
		for k, s := range c.Events {
			s.VisualAlert = clonePtr(s.VisualAlert)
			s.AudioAlert = clonePtr(s.AudioAlert)
			s.MinimumSpeedKmh = clonePtr(s.MinimumSpeedKmh)
			ev[k] = s
		}
		c.Events = ev
	}
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// ResolvedEvent is one event type's setting with every default filled in.
type ResolvedEvent struct {
	Enabled         bool
	DataType        string
	VisualAlert     bool
	AudioAlert      bool
	MinimumSpeedKmh int
	NumberOfBeeps   int
	Weight          int
}

// Setting returns the effective setting of eventType given audioAlarms:
// visual alerts are on unless switched off, audio alerts follow audioAlarms
// unless the event says otherwise. speedLimit events are off while the
// configuration sets no speed limit: there is nothing to exceed, and the API
// enables them only together with a limit.
func (c EventConfig) Setting(eventType string, audioAlarms bool) ResolvedEvent {
	kind, _ := LookupEvent(eventType)
	r := c.setting(eventType, kind, audioAlarms)
	if kind.API == EventSpeedLimit && c.SpeedLimitKmh <= 0 {
		r.Enabled = false
	}
	return r
}

func (c EventConfig) setting(eventType string, kind EventKind, audioAlarms bool) ResolvedEvent {
	r := ResolvedEvent{Enabled: true, DataType: kind.DefaultDataType(), VisualAlert: true, AudioAlert: audioAlarms}
	if kind.MVAI {
		r.MinimumSpeedKmh = c.MvaiMinSpeedKmh
	}
	s, ok := c.Events[eventType]
	if !ok {
		return r
	}
	r.Enabled, r.NumberOfBeeps, r.Weight = s.Enabled, s.NumberOfBeeps, s.Weight
	if s.DataType != "" {
		r.DataType = s.DataType
	}
	if s.VisualAlert != nil {
		r.VisualAlert = *s.VisualAlert
	}
	if s.AudioAlert != nil {
		r.AudioAlert = *s.AudioAlert
	}
	if s.MinimumSpeedKmh != nil {
		r.MinimumSpeedKmh = *s.MinimumSpeedKmh
	}
	return r
}

// DeviceSettings is everything configurable on one device, with the version
// the broker delivers it under. A nil member inherits the organization default.
type DeviceSettings struct {
	IMEI    string         `json:"imei"`
	Version int64          `json:"version"`
	Device  *DeviceConfig  `json:"device,omitempty"`
	Events  *EventConfig   `json:"events,omitempty"`
	Privacy *PrivacyConfig `json:"privacy,omitempty"`
	// PrivacyMode is "on" or "off"; empty until it is switched the first time.
	PrivacyMode       string             `json:"privacyMode,omitempty"`
	PrivacyModeConfig *PrivacyModeConfig `json:"privacyModeConfig,omitempty"`
	// Geofences are the device's own; organizations have none.
	Geofences []Geofence `json:"geofences,omitempty"`
	// Control is how the device itself runs (devicecontrol.go).
	Control *DeviceControl `json:"control,omitempty"`
	// CameraRetention is the device's own SD-card retention per camera
	// (cameraretention.go); organizations have none.
	CameraRetention []CameraRetention `json:"cameraRetention,omitempty"`
	// NotificationRecipients are the e-mail addresses told of each event
	// type (API syntax) on the device (eventrecipients.go); organizations
	// have none.
	NotificationRecipients map[string][]string `json:"notificationRecipients,omitempty"`
	UpdatedAt              time.Time           `json:"updatedAt"`
}

// OrgSettings are an organization's defaults for current and future devices.
type OrgSettings struct {
	OrganizationID    int64              `json:"organizationId"`
	Device            *DeviceConfig      `json:"device,omitempty"`
	Events            *EventConfig       `json:"events,omitempty"`
	Privacy           *PrivacyConfig     `json:"privacy,omitempty"`
	PrivacyModeConfig *PrivacyModeConfig `json:"privacyModeConfig,omitempty"`
	// Control holds the organization's defaults of device control settings
	// (auto-calibration, PIN codes).
	Control *DeviceControl `json:"control,omitempty"`
	// ForbidLegacyFirmware refuses devices below firmware 3.12 that connect without a token.
	ForbidLegacyFirmware bool      `json:"forbidLegacyFirmware,omitempty"`
	UpdatedAt            time.Time `json:"updatedAt"`
}

// Effective is a device's settings with organization defaults and built-in
// defaults filled in.
type Effective struct {
	Version int64
	Device  DeviceConfig
	Events  EventConfig
	Privacy PrivacyConfig
	// PrivacyMode is "on" or "off".
	PrivacyMode string
	// PrivacyModeSet reports whether privacy mode was ever switched; until
	// then Privacy alone governs, afterwards PrivacyModeConfig governs while
	// PrivacyMode is on.
	PrivacyModeSet    bool
	PrivacyModeConfig PrivacyModeConfig
	// HotspotPassword is the device's current hotspot password. It is a
	// secret: deliver it to the device, never log it.
	HotspotPassword string
	// Geofences are the device's geofences, delivered with its configuration.
	Geofences []Geofence
	// Drivers are the credentials the device accepts at check-in (driverassignments.go).
	Drivers []DriverCredential
	// RetentionMinutes bounds how long recordings stay on the SD card: the
	// organization's Retention.DeviceMinutes.
	RetentionMinutes int
	// Control is the device's control settings, member by member its own,
	// else its organization's, else the default.
	Control DeviceControl
	// CameraRetention is the device's own retention of some cameras, which
	// overrides RetentionMinutes for them.
	CameraRetention []CameraRetention
	// NotificationRecipients are the device's e-mail recipients of each
	// event type (eventrecipients.go).
	NotificationRecipients map[string][]string
}

// Event returns the effective setting of one event type.
func (e *Effective) Event(eventType string) ResolvedEvent {
	return e.Events.Setting(eventType, e.Device.AudioAlarms)
}

// dropDeviceSettings drops the settings of a removed device.
func dropDeviceSettings(tx *Tx, d *Device) error {
	return tx.rec.DeviceSettings().Delete(d.IMEI)
}

// DeviceSettings returns the stored settings of imei; a device never
// configured gets an empty record at version 0.
func (tx *Tx) DeviceSettings(imei string) (*DeviceSettings, error) {
	s, err := tx.rec.DeviceSettings().Get(imei)
	if isNotFound(err) {
		return &DeviceSettings{IMEI: imei}, nil
	}
	return s, err
}

// PutDeviceSettings stores s with the next version and audits the change under action.
func (tx *Tx) PutDeviceSettings(s *DeviceSettings, action string) error {
	d, prev, err := tx.putDeviceSettings(s)
	if err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: action, EntityType: "device", EntityID: s.IMEI,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID, Before: prev, After: s})
}

// putDeviceSettings stores s with the next version, without auditing, and
// keeps the hotspot password in step with the new effective configuration.
func (tx *Tx) putDeviceSettings(s *DeviceSettings) (*Device, *DeviceSettings, error) {
	d, err := tx.Device(s.IMEI)
	if err != nil {
		return nil, nil, err
	}
	prev, err := tx.DeviceSettings(s.IMEI)
	if err != nil {
		return nil, nil, err
	}
	s.Version = prev.Version + 1
	s.UpdatedAt = tx.now
	if err := tx.rec.DeviceSettings().Put(s); err != nil {
		return nil, nil, err
	}
	return d, prev, tx.syncHotspot(s.IMEI)
}

// OrgSettings returns an organization's default settings (empty when never set).
func (tx *Tx) OrgSettings(orgID int64) (*OrgSettings, error) {
	s, err := tx.rec.OrganizationSettings().Get(orgID)
	if isNotFound(err) {
		return &OrgSettings{OrganizationID: orgID}, nil
	}
	return s, err
}

// PutOrgSettings stores an organization's defaults, audits the change under
// action and bumps the config version of every device of the organization so
// the broker pushes the new effective settings.
func (tx *Tx) PutOrgSettings(s *OrgSettings, action string) error {
	o, err := tx.Organization(s.OrganizationID)
	if err != nil {
		return err
	}
	prev, err := tx.OrgSettings(s.OrganizationID)
	if err != nil {
		return err
	}
	s.UpdatedAt = tx.now
	if err := tx.rec.OrganizationSettings().Put(s); err != nil {
		return err
	}
	if err := tx.Audit(AuditChange{Action: action, EntityType: "organization", EntityID: fmt.Sprint(o.ID),
		OrganizationID: o.ID, PartnerID: o.PartnerID, Before: prev, After: s}); err != nil {
		return err
	}
	return tx.eachOrgDevice(o.ID, func(imei string) error {
		if err := tx.touchDeviceConfig(imei); err != nil {
			return err
		}
		return tx.syncHotspot(imei)
	})
}

// UpdateOrgDeviceSettings applies fn to the settings of every device of the
// organization and stores each under action (next version, audited). It is
// how organization-profile changes reach every current device. It returns
// the IMEIs it changed. An error from fn stops it and is returned.
func (tx *Tx) UpdateOrgDeviceSettings(orgID int64, action string, fn func(*DeviceSettings) error) ([]string, error) {
	imeis, err := tx.orgIMEIs(orgID)
	if err != nil {
		return nil, err
	}
	for _, imei := range imeis {
		ds, err := tx.DeviceSettings(imei)
		if err != nil {
			return nil, err
		}
		if err := fn(ds); err != nil {
			return nil, err
		}
		if err := tx.PutDeviceSettings(ds, action); err != nil {
			return nil, err
		}
	}
	return imeis, nil
}

// OrgIMEIs lists the IMEIs of every device of an organization, whichever
// partner owns them, in IMEI order.
func (tx *Tx) OrgIMEIs(orgID int64) ([]string, error) { return tx.orgIMEIs(orgID) }

func (tx *Tx) orgIMEIs(orgID int64) ([]string, error) {
	if orgID == 0 {
		return nil, nil // no organization has id 0; Devices would list them all
	}
	devices, _, err := tx.Devices(DeviceFilter{OrganizationID: orgID}, Page{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range devices {
		out = append(out, d.IMEI)
	}
	return out, nil
}

// eachOrgDevice calls fn with the IMEI of every device of an organization,
// in IMEI order, and stops at the first error.
func (tx *Tx) eachOrgDevice(orgID int64, fn func(imei string) error) error {
	imeis, err := tx.orgIMEIs(orgID)
	if err != nil {
		return err
	}
	for _, imei := range imeis {
		if err := fn(imei); err != nil {
			return err
		}
	}
	return nil
}

// EffectiveSettings resolves a device's settings: its own, else its
// organization's, else the built-in defaults.
func (tx *Tx) EffectiveSettings(imei string) (*Effective, error) {
	d, err := tx.Device(imei)
	if err != nil {
		return nil, err
	}
	e, err := tx.resolveSettings(d)
	if err != nil {
		return nil, err
	}
	if e.HotspotPassword, err = tx.HotspotPassword(imei); err != nil {
		return nil, err
	}
	if e.Drivers, err = tx.DriverCredentials(imei); err != nil {
		return nil, err
	}
	if o, err := tx.Organization(d.OrganizationID); err == nil {
		e.RetentionMinutes = o.Retention.DeviceMinutes()
	}
	return e, nil
}

// resolveSettings is EffectiveSettings of device d without what only the
// device's configuration carries (its hotspot password, driver
// credentials and retention): what the event rules apply to each event.
func (tx *Tx) resolveSettings(d *Device) (*Effective, error) {
	ds, err := tx.DeviceSettings(d.IMEI)
	if err != nil {
		return nil, err
	}
	os, err := tx.OrgSettings(d.OrganizationID)
	if err != nil {
		return nil, err
	}
	e := &Effective{Version: ds.Version, Device: DefaultDeviceConfig(), Events: DefaultEventConfig(),
		Geofences: ds.Geofences, CameraRetention: ds.CameraRetention, NotificationRecipients: ds.NotificationRecipients}
	pick(&e.Device, ds.Device, os.Device)
	pick(&e.Events, ds.Events, os.Events)
	e.Events = e.Events.Clone()
	e.resolvePrivacy(ds, os)
	e.Privacy = e.Privacy.clone()
	e.Control = EffectiveControl(ds.Control, os.Control)
	return e, nil
}

// resolvePrivacy sets e's privacy members from the device's settings ds
// and its organization's os; e.Privacy shares their maps.
func (e *Effective) resolvePrivacy(ds *DeviceSettings, os *OrgSettings) {
	e.Privacy, e.PrivacyMode = DefaultPrivacyConfig(), PrivacyModeOff
	pick(&e.Privacy, ds.Privacy, os.Privacy)
	pick(&e.PrivacyModeConfig, ds.PrivacyModeConfig, os.PrivacyModeConfig)
	if ds.PrivacyMode != "" {
		e.PrivacyMode, e.PrivacyModeSet = ds.PrivacyMode, true
	}
}

func pick[T any](dst *T, own, org *T) {
	switch {
	case own != nil:
		*dst = *own
	case org != nil:
		*dst = *org
	}
}
