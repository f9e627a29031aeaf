package store

import (
	"fmt"
	"time"
)

// Device settings records. The API validates and writes them; the broker
// turns a device's effective settings into the desired configuration it
// pushes. Each change bumps the device's config version.

// DeviceConfig is the device configuration parameters of the spec.
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
	// StandbyHours is the standby window, up to 24.
	StandbyHours int `json:"standbyHours,omitempty"`
}

// DefaultDeviceConfig is what a device gets when neither it nor its
// organization has device settings.
func DefaultDeviceConfig() DeviceConfig {
	return DeviceConfig{AudioAlarms: true, Brightness: 128, LiveVideo: true, StandbyHours: 24}
}

// PrivacyConfig is the privacy object of the device configuration.
type PrivacyConfig struct {
	RecordingEnabled  bool `json:"recordingEnabled"`
	AllEventsEnabled  bool `json:"allEventsEnabled"`
	LiveStreamEnabled bool `json:"liveStreamEnabled"`
	MvaiEnabled       bool `json:"mvaiEnabled"`
	// Cameras holds per-camera flags; false blocks that camera's event media.
	Cameras map[int]bool `json:"cameras,omitempty"`
}

// DefaultPrivacyConfig enables everything.
func DefaultPrivacyConfig() PrivacyConfig {
	return PrivacyConfig{RecordingEnabled: true, AllEventsEnabled: true, LiveStreamEnabled: true, MvaiEnabled: true}
}

// EventSetting switches one event type and its alerts.
type EventSetting struct {
	Enabled     bool `json:"enabled"`
	VisualAlert bool `json:"visualAlert"`
	AudioAlert  bool `json:"audioAlert"`
}

// EventConfig is the event configuration parameters of the spec.
type EventConfig struct {
	// Events holds per-type settings keyed by API syntax; a type absent here
	// is enabled, with the visual alert on and the audio alert following audioAlarms.
	Events                     map[string]EventSetting `json:"events,omitempty"`
	LaneWeavingTimes           int                     `json:"laneWeavingTimes"`
	LaneWeavingDurationSeconds int                     `json:"laneWeavingDurationSeconds"`
	DrivingDurationHours       int                     `json:"drivingDuration"`
	MvaiMinSpeedKmh            int                     `json:"mvaiMinSpeed"`
	SpeedLimitKmh              int                     `json:"speedLimitKmh,omitempty"`
}

// DefaultEventConfig carries the spec's defaults.
func DefaultEventConfig() EventConfig {
	return EventConfig{LaneWeavingTimes: 3, LaneWeavingDurationSeconds: 30, DrivingDurationHours: 8, MvaiMinSpeedKmh: 5}
}

// Setting returns the effective setting of eventType given audioAlarms.
func (c EventConfig) Setting(eventType string, audioAlarms bool) EventSetting {
	if s, ok := c.Events[eventType]; ok {
		return s
	}
	return EventSetting{Enabled: true, VisualAlert: true, AudioAlert: audioAlarms}
}

// DeviceSettings is everything configurable on one device, with the version
// the broker delivers it under. A nil member inherits the organization default.
type DeviceSettings struct {
	IMEI    string         `json:"imei"`
	Version int64          `json:"version"`
	Device  *DeviceConfig  `json:"device,omitempty"`
	Events  *EventConfig   `json:"events,omitempty"`
	Privacy *PrivacyConfig `json:"privacy,omitempty"`
	// PrivacyMode is "on" or "off".
	PrivacyMode string    `json:"privacyMode,omitempty"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// OrgSettings are an organization's defaults for current and future devices.
type OrgSettings struct {
	OrganizationID int64          `json:"organizationId"`
	Device         *DeviceConfig  `json:"device,omitempty"`
	Events         *EventConfig   `json:"events,omitempty"`
	Privacy        *PrivacyConfig `json:"privacy,omitempty"`
	// ForbidLegacyFirmware refuses devices below firmware 3.12 that connect without a token.
	ForbidLegacyFirmware bool      `json:"forbidLegacyFirmware,omitempty"`
	UpdatedAt            time.Time `json:"updatedAt"`
}

// Effective is a device's settings with organization defaults and built-in
// defaults filled in.
type Effective struct {
	Version     int64
	Device      DeviceConfig
	Events      EventConfig
	Privacy     PrivacyConfig
	PrivacyMode string
}

func init() { registerBuckets("device_settings", "org_settings") }

var (
	bucketDeviceSettings = []byte("device_settings")
	bucketOrgSettings    = []byte("org_settings")
)

// DeviceSettings returns the stored settings of imei; a device never
// configured gets an empty record at version 0.
func (tx *Tx) DeviceSettings(imei string) (*DeviceSettings, error) {
	s := &DeviceSettings{IMEI: imei}
	if err := getJSON(tx.bucket(bucketDeviceSettings), []byte(imei), s); err != nil && err != ErrNotFound {
		return nil, err
	}
	return s, nil
}

// PutDeviceSettings stores s with the next version and audits the change under action.
func (tx *Tx) PutDeviceSettings(s *DeviceSettings, action string) error {
	d, err := tx.Device(s.IMEI)
	if err != nil {
		return err
	}
	prev, err := tx.DeviceSettings(s.IMEI)
	if err != nil {
		return err
	}
	s.Version = prev.Version + 1
	s.UpdatedAt = tx.now
	if err := putJSON(tx.bucket(bucketDeviceSettings), []byte(s.IMEI), s); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: action, EntityType: "device", EntityID: s.IMEI,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID, Before: prev, After: s})
}

// OrgSettings returns an organization's default settings (empty when never set).
func (tx *Tx) OrgSettings(orgID int64) (*OrgSettings, error) {
	s := &OrgSettings{OrganizationID: orgID}
	if err := getJSON(tx.bucket(bucketOrgSettings), itob(orgID), s); err != nil && err != ErrNotFound {
		return nil, err
	}
	return s, nil
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
	if err := putJSON(tx.bucket(bucketOrgSettings), itob(s.OrganizationID), s); err != nil {
		return err
	}
	if err := tx.Audit(AuditChange{Action: action, EntityType: "organization", EntityID: fmt.Sprint(o.ID),
		OrganizationID: o.ID, PartnerID: o.PartnerID, Before: prev, After: s}); err != nil {
		return err
	}
	devices, _, err := tx.Devices(DeviceFilter{OrganizationID: o.ID}, Page{})
	if err != nil {
		return err
	}
	for _, d := range devices {
		ds, err := tx.DeviceSettings(d.IMEI)
		if err != nil {
			return err
		}
		ds.Version++
		if err := putJSON(tx.bucket(bucketDeviceSettings), []byte(d.IMEI), ds); err != nil {
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
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return nil, err
	}
	os, err := tx.OrgSettings(d.OrganizationID)
	if err != nil {
		return nil, err
	}
	e := &Effective{Version: ds.Version, Device: DefaultDeviceConfig(), Events: DefaultEventConfig(),
		Privacy: DefaultPrivacyConfig(), PrivacyMode: "off"}
	pick(&e.Device, ds.Device, os.Device)
	pick(&e.Events, ds.Events, os.Events)
	pick(&e.Privacy, ds.Privacy, os.Privacy)
	if ds.PrivacyMode != "" {
		e.PrivacyMode = ds.PrivacyMode
	}
	return e, nil
}

func pick[T any](dst *T, own, org *T) {
	switch {
	case own != nil:
		*dst = *own
	case org != nil:
		*dst = *org
	}
}
