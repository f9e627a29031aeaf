package cloudapi

import (
	"maps"
	"slices"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// WebhookSettingsReader renders an organization's webhook settings for
// GET /organizations/{orgId}/default-settings. cloudapi/webhooks provides it;
// the value it returns is sent as the webhookSettings member unchanged.
type WebhookSettingsReader interface {
	OrganizationWebhookSettings(orgID int64) (any, error)
}

// noWebhookSettings is the webhookSettings member of an organization without
// webhook settings: no URLs for any webhook type.
type noWebhookSettings struct {
	GPSWebhookURL         []string `json:"gpsWebhookUrl"`
	EventWebhookURL       []string `json:"eventWebhookUrl"`
	AlarmsWebhookURL      []string `json:"alarmsWebhookUrl"`
	SystemMessagesWebhook []string `json:"systemMessagesWebhook"`
}

// defaultSettingsDTO is every organization-level default in one object:
// device settings (with privacy), event settings, webhook settings, and the
// purge days and retention times. They apply to all current and future
// devices of the organization, whichever partner they come from.
type defaultSettingsDTO struct {
	OrganizationID               int64 `json:"organizationId"`
	IsOrganizationProfileEnabled bool  `json:"isOrganizationProfileEnabled"`
	retentionDTO
	Device          defaultDeviceDTO `json:"device"`
	Events          defaultEventsDTO `json:"events"`
	WebhookSettings any              `json:"webhookSettings"`
}

// defaultDeviceDTO is the organization's device configuration.
type defaultDeviceDTO struct {
	AudioAlarms                 bool              `json:"audioAlarms"`
	VoiceRecording              bool              `json:"voiceRecording"`
	Brightness                  int               `json:"brightness"`
	SetTimezoneByCloud          bool              `json:"setTimezoneByCloud"`
	PinCodeDi                   bool              `json:"pinCodeDi"`
	QrDi                        bool              `json:"qrDi"`
	DriverIdentification        bool              `json:"driverIdentification"`
	DriverPrompt                bool              `json:"driverPrompt"`
	AudioAlert                  bool              `json:"audioAlert"`
	DriverPromptDurationSeconds int               `json:"driverPromptDurationSeconds,omitempty"`
	LiveVideo                   bool              `json:"liveVideo"`
	StandbyMinutes              int               `json:"standbyMinutes"`
	Privacy                     defaultPrivacyDTO `json:"privacy"`
}

// defaultPrivacyDTO is the privacy member of the device configuration.
type defaultPrivacyDTO struct {
	RecordingEnabled  bool                   `json:"recordingEnabled"`
	AllEventsEnabled  bool                   `json:"allEventsEnabled"`
	LiveStreamEnabled bool                   `json:"liveStreamEnabled"`
	MvaiEnabled       bool                   `json:"mvaiEnabled"`
	Cameras           []defaultCameraFlagDTO `json:"cameras"`
}

type defaultCameraFlagDTO struct {
	CameraID      int  `json:"cameraId"`
	EventsEnabled bool `json:"eventsEnabled"`
}

// defaultEventsDTO is the organization's event configuration; event types
// not listed follow the defaults (enabled, visual alert on, audio alert as audioAlarms).
type defaultEventsDTO struct {
	Events                     []defaultEventDTO `json:"events"`
	LaneWeavingTimes           int               `json:"laneWeavingTimes"`
	LaneWeavingDurationSeconds int               `json:"laneWeavingDurationSeconds"`
	DrivingDuration            int               `json:"drivingDuration"`
	MinimumSpeed               int               `json:"mvaiMinSpeed"`
	SpeedLimit                 int               `json:"speedLimit,omitempty"`
}

type defaultEventDTO struct {
	EventType   string `json:"eventType"`
	Enabled     bool   `json:"enabled"`
	VisualAlert bool   `json:"visualAlert"`
	AudioAlert  bool   `json:"audioAlert"`
}

func toDefaultSettings(o *store.Organization, orgSet *store.OrgSettings, webhooks any) defaultSettingsDTO {
	dev, ev, pr := store.DefaultDeviceConfig(), store.DefaultEventConfig(), store.DefaultPrivacyConfig()
	if orgSet.Device != nil {
		dev = *orgSet.Device
	}
	if orgSet.Events != nil {
		ev = *orgSet.Events
	}
	if orgSet.Privacy != nil {
		pr = *orgSet.Privacy
	}
	out := defaultSettingsDTO{OrganizationID: o.ID, IsOrganizationProfileEnabled: o.IsOrganizationProfileEnabled,
		retentionDTO: toRetentionDTO(o.Retention), WebhookSettings: webhooks}
	out.Device = defaultDeviceDTO{AudioAlarms: dev.AudioAlarms, VoiceRecording: dev.VoiceRecording, Brightness: dev.Brightness,
		SetTimezoneByCloud: dev.SetTimezoneByCloud, PinCodeDi: dev.PinCodeDi, QrDi: dev.QrDi,
		DriverIdentification: dev.DriverIdentification, DriverPrompt: dev.DriverPrompt, AudioAlert: dev.AudioAlert,
		DriverPromptDurationSeconds: dev.DriverPromptDurationSeconds, LiveVideo: dev.LiveVideo, StandbyMinutes: dev.StandbyMinutes,
		Privacy: defaultPrivacyDTO{RecordingEnabled: pr.RecordingEnabled, AllEventsEnabled: pr.AllEventsEnabled,
			LiveStreamEnabled: pr.LiveStreamEnabled, MvaiEnabled: pr.MvaiEnabled, Cameras: []defaultCameraFlagDTO{}}}
	for _, id := range slices.Sorted(maps.Keys(pr.Cameras)) {
		out.Device.Privacy.Cameras = append(out.Device.Privacy.Cameras, defaultCameraFlagDTO{CameraID: id, EventsEnabled: pr.Cameras[id]})
	}
	out.Events = defaultEventsDTO{Events: []defaultEventDTO{}, LaneWeavingTimes: ev.LaneWeavingTimes,
		LaneWeavingDurationSeconds: ev.LaneWeavingDurationSeconds, DrivingDuration: ev.DrivingDurationHours,
		MinimumSpeed: ev.MvaiMinSpeedKmh, SpeedLimit: ev.SpeedLimitKmh}
	for _, t := range slices.Sorted(maps.Keys(ev.Events)) {
		e := ev.Setting(t, dev.AudioAlarms)
		out.Events.Events = append(out.Events.Events, defaultEventDTO{EventType: t, Enabled: e.Enabled, VisualAlert: e.VisualAlert, AudioAlert: e.AudioAlert})
	}
	return out
}

// defaultSettings handles GET /organizations/{orgId}/default-settings.
func (s *Server) defaultSettings(c *gin.Context) {
	var o *store.Organization
	var orgSet *store.OrgSettings
	err := s.view(func(tx *store.Tx) error {
		var err error
		if o, err = s.org(c, tx); err != nil {
			return err
		}
		orgSet, err = tx.OrgSettings(o.ID)
		return err
	})
	if err != nil {
		s.fail(c, err)
		return
	}
	var webhooks any = noWebhookSettings{GPSWebhookURL: []string{}, EventWebhookURL: []string{},
		AlarmsWebhookURL: []string{}, SystemMessagesWebhook: []string{}}
	if s.webhooks != nil {
		if webhooks, err = s.webhooks.OrganizationWebhookSettings(o.ID); err != nil {
			s.fail(c, err)
			return
		}
	}
	ok(c, toDefaultSettings(o, orgSet, webhooks))
}
