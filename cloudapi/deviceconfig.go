package cloudapi

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Device configuration: PUT /devices/{imei}/device-config replaces a
// device's configuration, PUT /devices/device-config replaces it on many
// devices, POST /organizations/{orgId}/device-settings sets the named
// parameters of the organization's default and keeps the others. Every
// parameter is an object, as in the reference contract: {"brightness":
// {"value": 128}}.

// Wrappers of one parameter's value.
type (
	boolParam struct {
		Value *bool `json:"value"`
	}
	intParam struct {
		Value *int `json:"value"`
	}
	stringParam struct {
		Value *string `json:"value"`
	}
)

// deviceConfigDTO is the device configuration in requests and responses.
// In a request a nil member is not named; a response names every member.
type deviceConfigDTO struct {
	Adas                   *boolParam               `json:"adas,omitempty"`
	DistractedDriver       *boolParam               `json:"distractedDriver,omitempty"`
	LiveVideo              *boolParam               `json:"liveVideo,omitempty"`
	DriverCamera           *boolParam               `json:"driverCamera,omitempty"`
	TextOverlay            *boolParam               `json:"textOverlay,omitempty"`
	InCabinCameraRecording *boolParam               `json:"inCabinCameraRecording,omitempty"`
	DriverPosition         *stringParam             `json:"driverPosition,omitempty"`
	SpeedUnits             *stringParam             `json:"speedUnits,omitempty"`
	AudioAlarms            *boolParam               `json:"audioAlarms,omitempty"`
	NotifyLiveStreaming    *boolParam               `json:"notifyLiveStreaming,omitempty"`
	Brightness             *intParam                `json:"brightness,omitempty"`
	DateTimeUnits          *stringParam             `json:"dateTimeUnits,omitempty"`
	VoiceRecording         *boolParam               `json:"voiceRecording,omitempty"`
	Standby                *standbyParam            `json:"standby,omitempty"`
	HotSpot                *hotSpotParam            `json:"hotSpot,omitempty"`
	Privacy                *privacyDTO              `json:"privacy,omitempty"`
	PinCodeDi              *boolParam               `json:"pinCodeDi,omitempty"`
	QrDi                   *boolParam               `json:"qrDi,omitempty"`
	DriverIdentification   *driverIdentificationDTO `json:"driverIdentification,omitempty"`
	VirtualIgnition        *boolParam               `json:"virtualIgnition,omitempty"`
	ScreenTimeout          *intParam                `json:"screenTimeout,omitempty"`
	PassengerLimit         *intParam                `json:"passengerLimit,omitempty"`
	WakeupMsg              *wakeupParam             `json:"wakeupMsg,omitempty"`
	LedEnabled             *boolParam               `json:"ledEnabled,omitempty"`
	SetTimezoneByCloud     *boolParam               `json:"setTimezoneByCloud,omitempty"`
}

type standbyParam struct {
	// Timeout is in minutes, up to 24 hours.
	Timeout *int `json:"timeout"`
}

type hotSpotParam struct {
	InternetAccess *bool `json:"internetAccess"`
	HotspotEnabled *bool `json:"hotspotEnabled,omitempty"`
}

type wakeupParam struct {
	Enabled *bool `json:"enabled"`
	Timeout *int  `json:"timeout,omitempty"`
}

// driverIdentificationDTO switches driver identification (value, on by
// default when the object is given) and its check-in prompt.
type driverIdentificationDTO struct {
	Value                       *bool `json:"value,omitempty"`
	DriverPrompt                *bool `json:"driverPrompt,omitempty"`
	AudioAlert                  *bool `json:"audioAlert,omitempty"`
	DriverPromptDurationSeconds *int  `json:"driverPromptDurationSeconds,omitempty"`
}

// privacyDTO is the privacy object of the device configuration.
type privacyDTO struct {
	RecordingEnabled  *bool              `json:"recordingEnabled,omitempty"`
	GPSEnabled        *bool              `json:"gpsEnabled,omitempty"`
	MvaiEnabled       *bool              `json:"mvaiEnabled,omitempty"`
	LiveStreamEnabled *bool              `json:"liveStreamEnabled,omitempty"`
	AllEventsEnabled  *bool              `json:"allEventsEnabled,omitempty"`
	Cameras           []cameraPrivacyDTO `json:"cameras,omitempty"`
}

type cameraPrivacyDTO struct {
	CameraID         *int  `json:"cameraId"`
	RecordingEnabled *bool `json:"recordingEnabled,omitempty"`
	EventsEnabled    *bool `json:"eventsEnabled,omitempty"`
}

// Ranges of the device configuration parameters.
const (
	minBrightness, maxBrightness         = 0, 255
	minPromptSeconds, maxPromptSeconds   = 10, 60
	minStandbyMinutes, maxStandbyMinutes = 1, 24 * 60
	minScreenTimeout, maxScreenTimeout   = 10, 300
	minPassengers, maxPassengers         = 1, 4
	minWakeupSeconds, maxWakeupSeconds   = 1, 300
)

func rangeRule(lo, hi int) string { return fmt.Sprintf("must be an integer from %d to %d", lo, hi) }

// setBool copies a named boolean parameter.
func setBool(dst *bool, p *boolParam, field string) error {
	if p == nil {
		return nil
	}
	if p.Value == nil {
		return badField(field+".value", "is required")
	}
	*dst = *p.Value
	return nil
}

// setInt copies a named integer parameter within lo and hi.
func setInt(dst *int, v *int, field string, lo, hi int) error {
	if v == nil {
		return badField(field, "is required")
	}
	if *v < lo || *v > hi {
		return badField(field, rangeRule(lo, hi))
	}
	*dst = *v
	return nil
}

// setEnum copies a named string parameter that must be one of values.
func setEnum(dst *string, p *stringParam, field string, values ...string) error {
	if p == nil {
		return nil
	}
	if p.Value == nil {
		return badField(field+".value", "is required")
	}
	if !slices.Contains(values, *p.Value) {
		return badField(field+".value", fmt.Sprintf("must be one of %v", values))
	}
	*dst = *p.Value
	return nil
}

// apply writes the named parameters of d over cfg and priv, then checks
// the rules that join several parameters. PUT applies it over the
// defaults (what is not named is reset), POST over the current values.
func (d *deviceConfigDTO) apply(cfg *store.DeviceConfig, priv *store.PrivacyConfig) error {
	bools := []struct {
		dst   *bool
		p     *boolParam
		field string
	}{
		{&cfg.Adas, d.Adas, "adas"}, {&cfg.DistractedDriver, d.DistractedDriver, "distractedDriver"},
		{&cfg.LiveVideo, d.LiveVideo, "liveVideo"}, {&cfg.DriverCamera, d.DriverCamera, "driverCamera"},
		{&cfg.TextOverlay, d.TextOverlay, "textOverlay"},
		{&cfg.InCabinCameraRecording, d.InCabinCameraRecording, "inCabinCameraRecording"},
		{&cfg.AudioAlarms, d.AudioAlarms, "audioAlarms"}, {&cfg.NotifyLiveStreaming, d.NotifyLiveStreaming, "notifyLiveStreaming"},
		{&cfg.VoiceRecording, d.VoiceRecording, "voiceRecording"}, {&cfg.PinCodeDi, d.PinCodeDi, "pinCodeDi"},
		{&cfg.QrDi, d.QrDi, "qrDi"}, {&cfg.VirtualIgnition, d.VirtualIgnition, "virtualIgnition"},
		{&cfg.LEDEnabled, d.LedEnabled, "ledEnabled"}, {&cfg.SetTimezoneByCloud, d.SetTimezoneByCloud, "setTimezoneByCloud"},
	}
	for _, b := range bools {
		if err := setBool(b.dst, b.p, b.field); err != nil {
			return err
		}
	}
	if err := setEnum(&cfg.DriverPosition, d.DriverPosition, "driverPosition", "left", "right"); err != nil {
		return err
	}
	if err := setEnum(&cfg.SpeedUnits, d.SpeedUnits, "speedUnits", "mph", "kmh"); err != nil {
		return err
	}
	if err := setEnum(&cfg.DateTimeUnits, d.DateTimeUnits, "dateTimeUnits", "us", "eu"); err != nil {
		return err
	}
	ints := []struct {
		dst    *int
		p      *intParam
		field  string
		lo, hi int
	}{
		{&cfg.Brightness, d.Brightness, "brightness", minBrightness, maxBrightness},
		{&cfg.ScreenTimeoutSeconds, d.ScreenTimeout, "screenTimeout", minScreenTimeout, maxScreenTimeout},
		{&cfg.PassengerLimit, d.PassengerLimit, "passengerLimit", minPassengers, maxPassengers},
	}
	for _, n := range ints {
		if n.p == nil {
			continue
		}
		if err := setInt(n.dst, n.p.Value, n.field+".value", n.lo, n.hi); err != nil {
			return err
		}
	}
	if d.Standby != nil {
		if err := setInt(&cfg.StandbyMinutes, d.Standby.Timeout, "standby.timeout", minStandbyMinutes, maxStandbyMinutes); err != nil {
			return err
		}
	}
	if h := d.HotSpot; h != nil {
		if h.InternetAccess == nil {
			return badField("hotSpot.internetAccess", "is required")
		}
		cfg.InternetAccess = *h.InternetAccess
		if h.HotspotEnabled != nil {
			cfg.HotspotEnabled = *h.HotspotEnabled
		}
	}
	if w := d.WakeupMsg; w != nil {
		if w.Enabled == nil {
			return badField("wakeupMsg.enabled", "is required")
		}
		cfg.WakeupMessage = *w.Enabled
		if w.Timeout != nil {
			if err := setInt(&cfg.WakeupMessageSeconds, w.Timeout, "wakeupMsg.timeout", minWakeupSeconds, maxWakeupSeconds); err != nil {
				return err
			}
		}
	}
	if err := d.applyDriverIdentification(cfg); err != nil {
		return err
	}
	if d.Privacy != nil {
		if err := d.Privacy.apply(priv); err != nil {
			return err
		}
	}
	return nil
}

// applyDriverIdentification applies the driver identification parameters
// and checks their rules: pinCodeDi and qrDi not both on,
// driverIdentification only with one of them, driverPrompt only with
// driverIdentification, driverPromptDurationSeconds from 10 to 60 and
// required with driverPrompt (and not sent without it), audioAlert only
// with driverPrompt.
func (d *deviceConfigDTO) applyDriverIdentification(cfg *store.DeviceConfig) error {
	di := d.DriverIdentification
	if di != nil {
		cfg.DriverIdentification = di.Value == nil || *di.Value
		if di.DriverPrompt != nil {
			cfg.DriverPrompt = *di.DriverPrompt
		}
		if di.AudioAlert != nil {
			cfg.AudioAlert = *di.AudioAlert
		}
		if v := di.DriverPromptDurationSeconds; v != nil {
			if *v < minPromptSeconds || *v > maxPromptSeconds {
				return badField("driverIdentification.driverPromptDurationSeconds", rangeRule(minPromptSeconds, maxPromptSeconds))
			}
			cfg.DriverPromptDurationSeconds = *v
		}
	}
	if di != nil && !cfg.DriverIdentification && di.DriverPrompt == nil {
		cfg.DriverPrompt = false
	}
	audioNamed := di != nil && di.AudioAlert != nil
	durationNamed := di != nil && di.DriverPromptDurationSeconds != nil
	switch {
	case cfg.PinCodeDi && cfg.QrDi:
		return badField("pinCodeDi", "and qrDi cannot both be enabled: choose one way to identify drivers")
	case cfg.DriverIdentification && !cfg.PinCodeDi && !cfg.QrDi:
		return badField("driverIdentification", "can be enabled only when pinCodeDi or qrDi is enabled")
	case cfg.DriverPrompt && !cfg.DriverIdentification:
		return badField("driverIdentification.driverPrompt", "can be enabled only with driver identification")
	case !cfg.DriverPrompt && durationNamed:
		return badField("driverIdentification.driverPromptDurationSeconds", "is allowed only when driverPrompt is enabled")
	case !cfg.DriverPrompt && audioNamed && cfg.AudioAlert:
		return badField("driverIdentification.audioAlert", "applies only when driverPrompt is enabled")
	case cfg.DriverPrompt && cfg.DriverPromptDurationSeconds == 0:
		return badField("driverIdentification.driverPromptDurationSeconds", "is required when driverPrompt is enabled ("+
			rangeRule(minPromptSeconds, maxPromptSeconds)+")")
	}
	if !cfg.DriverPrompt {
		// What only matters with the prompt does not outlive it.
		cfg.AudioAlert, cfg.DriverPromptDurationSeconds = false, 0
	}
	return nil
}

// apply writes the named privacy members over priv.
func (p *privacyDTO) apply(priv *store.PrivacyConfig) error {
	for _, b := range []struct {
		dst *bool
		v   *bool
	}{
		{&priv.RecordingEnabled, p.RecordingEnabled}, {&priv.GPSEnabled, p.GPSEnabled},
		{&priv.MvaiEnabled, p.MvaiEnabled}, {&priv.LiveStreamEnabled, p.LiveStreamEnabled},
		{&priv.AllEventsEnabled, p.AllEventsEnabled},
	} {
		if b.v != nil {
			*b.dst = *b.v
		}
	}
	seen := map[int]bool{}
	for i, cam := range p.Cameras {
		field := fmt.Sprintf("privacy.cameras[%d].cameraId", i)
		switch {
		case cam.CameraID == nil:
			return badField(field, "is required")
		case !store.ValidCameraID(*cam.CameraID):
			return badField(field, store.RuleCameraID)
		case seen[*cam.CameraID]:
			return badField(field, fmt.Sprintf("names camera %d twice", *cam.CameraID))
		}
		id := *cam.CameraID
		seen[id] = true
		if cam.RecordingEnabled != nil {
			if priv.CameraRecording == nil {
				priv.CameraRecording = map[int]bool{}
			}
			priv.CameraRecording[id] = *cam.RecordingEnabled
		}
		if cam.EventsEnabled != nil {
			if priv.Cameras == nil {
				priv.Cameras = map[int]bool{}
			}
			priv.Cameras[id] = *cam.EventsEnabled
		}
	}
	return nil
}

// copyPrivacy returns a copy of p that shares no map with it.
func copyPrivacy(p store.PrivacyConfig) store.PrivacyConfig {
	p.Cameras, p.CameraRecording = maps.Clone(p.Cameras), maps.Clone(p.CameraRecording)
	return p
}

func boolValue(v bool) *boolParam       { return &boolParam{Value: &v} }
func intValue(v int) *intParam          { return &intParam{Value: &v} }
func stringValue(v string) *stringParam { return &stringParam{Value: &v} }
func ptrOf[T any](v T) *T               { return &v }

// toDeviceConfigDTO renders a configuration with every parameter named.
func toDeviceConfigDTO(cfg store.DeviceConfig, priv store.PrivacyConfig) deviceConfigDTO {
	out := deviceConfigDTO{
		Adas: boolValue(cfg.Adas), DistractedDriver: boolValue(cfg.DistractedDriver), LiveVideo: boolValue(cfg.LiveVideo),
		DriverCamera: boolValue(cfg.DriverCamera), TextOverlay: boolValue(cfg.TextOverlay),
		InCabinCameraRecording: boolValue(cfg.InCabinCameraRecording), DriverPosition: stringValue(cfg.DriverPosition),
		SpeedUnits: stringValue(cfg.SpeedUnits), AudioAlarms: boolValue(cfg.AudioAlarms), NotifyLiveStreaming: boolValue(cfg.NotifyLiveStreaming),
		Brightness: intValue(cfg.Brightness), DateTimeUnits: stringValue(cfg.DateTimeUnits), VoiceRecording: boolValue(cfg.VoiceRecording),
		Standby:   &standbyParam{Timeout: ptrOf(cfg.StandbyMinutes)},
		HotSpot:   &hotSpotParam{InternetAccess: ptrOf(cfg.InternetAccess), HotspotEnabled: ptrOf(cfg.HotspotEnabled)},
		PinCodeDi: boolValue(cfg.PinCodeDi), QrDi: boolValue(cfg.QrDi),
		DriverIdentification: &driverIdentificationDTO{Value: ptrOf(cfg.DriverIdentification),
			DriverPrompt: ptrOf(cfg.DriverPrompt), AudioAlert: ptrOf(cfg.AudioAlert)},
		VirtualIgnition: boolValue(cfg.VirtualIgnition), ScreenTimeout: intValue(cfg.ScreenTimeoutSeconds),
		PassengerLimit: intValue(cfg.PassengerLimit),
		WakeupMsg:      &wakeupParam{Enabled: ptrOf(cfg.WakeupMessage), Timeout: ptrOf(cfg.WakeupMessageSeconds)},
		LedEnabled:     boolValue(cfg.LEDEnabled), SetTimezoneByCloud: boolValue(cfg.SetTimezoneByCloud),
		Privacy: &privacyDTO{RecordingEnabled: ptrOf(priv.RecordingEnabled), GPSEnabled: ptrOf(priv.GPSEnabled),
			MvaiEnabled: ptrOf(priv.MvaiEnabled), LiveStreamEnabled: ptrOf(priv.LiveStreamEnabled),
			AllEventsEnabled: ptrOf(priv.AllEventsEnabled), Cameras: []cameraPrivacyDTO{}},
	}
	if cfg.DriverPrompt {
		out.DriverIdentification.DriverPromptDurationSeconds = ptrOf(cfg.DriverPromptDurationSeconds)
	}
	ids := slices.Sorted(maps.Keys(priv.Cameras))
	for id := range priv.CameraRecording {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		rec, ok := priv.CameraRecording[id]
		ev, ok2 := priv.Cameras[id]
		out.Privacy.Cameras = append(out.Privacy.Cameras, cameraPrivacyDTO{CameraID: ptrOf(id),
			RecordingEnabled: ptrOf(rec || !ok), EventsEnabled: ptrOf(ev || !ok2)})
	}
	return out
}

// configMetadata tells where a configuration answer comes from.
type configMetadata struct {
	// Source is always cloud: the answer is the configuration the cloud
	// wants the device to run.
	Source string `json:"source"`
	// Status is the device's connection: online, standby or offline.
	Status string `json:"status"`
	// Time is when the configuration last changed.
	Time string `json:"time,omitempty"`
}

type configBody struct {
	Data      any            `json:"data"`
	Metadata  configMetadata `json:"metadata"`
	RequestID string         `json:"requestId"`
}

func (s *Server) configMetadata(c *gin.Context, imei string, updated time.Time) configMetadata {
	m := configMetadata{Source: "cloud", Status: ConnectionOffline, Time: isoTime(updated)}
	if s.online(imei) {
		m.Status = ConnectionOnline
		if s.presence != nil {
			s.view(c, func(tx *store.Tx) error {
				if pc, found := s.presence.Presence(tx, imei); found && pc.Status == ConnectionStandby {
					m.Status = ConnectionStandby
				}
				return nil
			})
		}
	}
	return m
}

// okConfig answers a device's configuration with its metadata.
func okConfig(c *gin.Context, data any, m configMetadata) error {
	c.JSON(http.StatusOK, configBody{Data: data, Metadata: m, RequestID: requestID(c)})
	return nil
}
