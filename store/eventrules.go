package store

// The event rules that decide whether an event is created and what it
// carries, given a device's effective settings.

// Event kinds in API syntax, for the rules that name a kind.
const (
	EventAcceleration         = "acceleration"
	EventAccident             = "accident"
	EventButton               = "button"
	EventCellPhoneUse         = "cellPhoneUse"
	EventCellPhoneUseBeep     = "cellPhoneUseBeep"
	EventDeceleration         = "deceleration"
	EventDeviceActivation     = "deviceActivation"
	EventDistractedDriving    = "distractedDriving"
	EventDistractedDriverBeep = "distractedDriverBeep"
	EventDriverCheckIn        = "driverCheckIn"
	EventDriverCheckOut       = "driverCheckOut"
	EventDriverUnbelted       = "driverUnbelted"
	EventDriverUnbeltedBeep   = "driverUnbeltedBeep"
	EventStandbyEnter         = "standbyEnter"
	EventStandbyExit          = "standbyExit"
	EventGeoFence             = "geoFence"
	EventFoodDrink            = "foodDrink"
	EventFoodDrinkBeep        = "foodDrinkBeep"
	EventGsensorHigh          = "gsensorHigh"
	EventGsensorRegular       = "gsensorRegular"
	EventLaneWeaving          = "laneWeaving"
	EventNoCheckIn            = "noCheckIn"
	EventObstruction          = "obstruction"
	EventPassengerUnbelted    = "passengerUnbelted"
	EventPossibleFatigue      = "possibleFatigue"
	EventPowerDisconnectAlarm = "powerDisconnectAlarm"
	EventAccOff               = "accOff"
	EventAccOn                = "accOn"
	EventQRCode               = "qrCode"
	EventSDCardFormatted      = "sdCardFormatted"
	EventSmoking              = "smoking"
	EventSmokingBeep          = "smokingBeep"
	EventSpeedLimit           = "speedLimit"
	EventTailgating           = "tailgating"
	EventCoverOpened          = "coverOpened"
	EventJolt                 = "jolt"
	EventSharpTurnLeft        = "sharpTurnLeft"
	EventSharpRightTurn       = "sharpRightTurn"
	EventVirtual              = "virtualEvent"
	EventWrongPinCode         = "wrongPinCode"
)

// mvaiDetections are the camera detections that count as MV+AI events
// besides the in-cabin kinds the catalogue marks MVAI: the ADAS detections
// (tailgating, laneWeaving) and possibleFatigue, which is a distracted
// driving detection.
var mvaiDetections = map[string]bool{EventTailgating: true, EventLaneWeaving: true, EventPossibleFatigue: true}

// IsMVAIEvent reports whether an API-syntax event type is an MV+AI event:
// distractedDriving, cellPhoneUse, smoking, foodDrink, driverUnbelted,
// passengerUnbelted, obstruction, tailgating, laneWeaving, possibleFatigue
// and the beeps that precede them. MV+AI events follow privacy.mvaiEnabled
// and the MV+AI minimum speed.
func IsMVAIEvent(apiName string) bool {
	k, ok := LookupEvent(apiName)
	if !ok {
		return false
	}
	if main, beep := beepMain[k.API]; beep {
		return IsMVAIEvent(main)
	}
	return k.MVAI || mvaiDetections[k.API]
}

// beepMain maps each beep to the event it precedes; a beep is off when its
// main event is.
var beepMain = map[string]string{
	EventCellPhoneUseBeep:     EventCellPhoneUse,
	EventDistractedDriverBeep: EventDistractedDriving,
	EventDriverUnbeltedBeep:   EventDriverUnbelted,
	EventFoodDrinkBeep:        EventFoodDrink,
	EventSmokingBeep:          EventSmoking,
}

// defaultSeverity is the severity of a kind when the device reports none.
var defaultSeverity = map[string]int{
	EventAccident: SeverityHigh, EventGsensorHigh: SeverityHigh, EventPossibleFatigue: SeverityHigh,
	EventDistractedDriving: SeverityHigh, EventCellPhoneUse: SeverityHigh, EventTailgating: SeverityHigh,
	EventCoverOpened: SeverityHigh, EventPowerDisconnectAlarm: SeverityHigh,

	EventAcceleration: SeverityMedium, EventDeceleration: SeverityMedium, EventSharpTurnLeft: SeverityMedium,
	EventSharpRightTurn: SeverityMedium, EventGsensorRegular: SeverityMedium, EventSpeedLimit: SeverityMedium,
	EventLaneWeaving: SeverityMedium, EventSmoking: SeverityMedium, EventFoodDrink: SeverityMedium,
	EventDriverUnbelted: SeverityMedium, EventPassengerUnbelted: SeverityMedium, EventObstruction: SeverityMedium,
	EventButton: SeverityMedium, EventJolt: SeverityMedium, EventNoCheckIn: SeverityMedium,
	EventWrongPinCode: SeverityMedium,
}

// DefaultSeverity returns the severity an event of apiName gets when none is
// reported: high for collisions, fatigue, phone use, distraction, tailgating
// and tampering; medium for other driving behaviour; low for the rest
// (beeps, power, standby, check-in, QR code, geofence, virtual events).
func DefaultSeverity(apiName string) int {
	if s, ok := defaultSeverity[apiName]; ok {
		return s
	}
	return SeverityLow
}

// Reasons an ingested event is dropped rather than stored. The device's
// message is still acknowledged: the event is suppressed by configuration.
const (
	DropEventDisabled   = "disabled in the event configuration"
	DropPrivacyEvents   = "privacy.allEventsEnabled is false"
	DropMVAIDisabled    = "privacy.mvaiEnabled is false"
	DropMVAIMinSpeed    = "the MV+AI minimum speed is below 5 km/h"
	DropPrivacyMode     = "privacy mode is on and keeps these events off"
	DropUnknownGeofence = "the geofence is not configured on the device"
	DropEnteredInside   = "entered without the vehicle being outside the geofence before"
)

// MinMVAISpeedKmh is the lowest MV+AI minimum speed that still creates MV+AI events.
const MinMVAISpeedKmh = 5

// EventSuppression returns why an event of kind would not be created on a
// device with settings eff, or "" when it would.
func EventSuppression(kind EventKind, eff *Effective) string {
	if !eff.Privacy.AllEventsEnabled {
		return DropPrivacyEvents
	}
	if !eff.Events.Setting(kind.API, eff.Device.AudioAlarms).Enabled {
		return DropEventDisabled
	}
	if main, ok := beepMain[kind.API]; ok && !eff.Events.Setting(main, eff.Device.AudioAlarms).Enabled {
		return DropEventDisabled
	}
	if IsMVAIEvent(kind.API) {
		if !eff.Privacy.MvaiEnabled {
			return DropMVAIDisabled
		}
		if mvaiMinSpeed(kind, eff) < MinMVAISpeedKmh {
			return DropMVAIMinSpeed
		}
	}
	if inPrivacyMode(eff) {
		if allowed, governed := privacyModeEvents(kind, eff.PrivacyModeConfig); governed && !allowed {
			return DropPrivacyMode
		}
	}
	return ""
}

// mvaiMinSpeed is the MV+AI minimum speed that applies to kind: its own
// (or its main event's, for a beep) when the event settings give one, else
// the device-wide MV+AI minimum speed.
func mvaiMinSpeed(kind EventKind, eff *Effective) int {
	name := kind.API
	if main, ok := beepMain[name]; ok {
		name = main
	}
	if k, ok := LookupEvent(name); ok && k.MVAI {
		return eff.Event(name).MinimumSpeedKmh
	}
	return eff.Events.MvaiMinSpeedKmh
}

// inPrivacyMode reports whether privacy mode governs the device now.
func inPrivacyMode(eff *Effective) bool {
	return eff.PrivacyModeSet && eff.PrivacyMode == PrivacyModeOn
}

// InPrivacyMode reports whether privacy mode governs the device now: then
// PrivacyModeConfig says what stays enabled.
func (e *Effective) InPrivacyMode() bool { return inPrivacyMode(e) }

// GPSAllowed reports whether a device with settings eff sends GPS to the
// cloud: its privacy gpsEnabled, and while privacy mode is on, the mode's
// gpsTracking. While it does not, the cloud stores none of its GPS samples
// (a device that sends some anyway has them acknowledged and dropped) and
// its events carry no location.
func GPSAllowed(eff *Effective) bool {
	return eff.Privacy.GPSEnabled && (!inPrivacyMode(eff) || eff.PrivacyModeConfig.GPSTracking)
}

// privacyModeEvents says whether privacy mode config c keeps events of
// kind, and whether c governs kind at all. The groups are those of the
// privacy-mode configuration: in-cabin MV+AI events, ADAS (road and
// auxiliary) events, acceleration, g-sensor, virtual and other events, and
// the in-cabin beeps. Device events outside every group (power, standby,
// tamper, SD card) are not governed.
func privacyModeEvents(kind EventKind, c PrivacyModeConfig) (allowed, governed bool) {
	switch kind.API {
	case EventDistractedDriving, EventSmoking, EventFoodDrink, EventCellPhoneUse, EventDriverUnbelted,
		EventObstruction, EventPossibleFatigue, EventPassengerUnbelted:
		return c.CabinEvents, true
	case EventTailgating, EventLaneWeaving:
		return c.RoadAndAuxEvents, true
	case EventDeceleration, EventAcceleration, EventSharpTurnLeft, EventSharpRightTurn:
		return c.AccelerationEvents, true
	case EventJolt, EventAccident, EventGsensorRegular, EventGsensorHigh:
		return c.GSensorEvents, true
	case EventVirtual:
		return c.VirtualEvent, true
	case EventButton, EventSpeedLimit, EventGeoFence, EventWrongPinCode, EventQRCode, EventDriverCheckIn,
		EventDriverCheckOut, EventNoCheckIn:
		return c.OtherEvents, true
	}
	if kind.Beep {
		return c.CabinBeepAlerts, true
	}
	return true, false
}

// CameraAllowed reports whether the privacy flags let camera id's media out.
func CameraAllowed(p PrivacyConfig, camera int) bool {
	on, set := p.Cameras[camera]
	return !set || on
}

// MediaAllowed reports whether a device with settings eff may attach the
// media of camera to events: its per-camera privacy flag, and while privacy
// mode is on, the in-cabin or road-and-auxiliary lens video switch.
func MediaAllowed(eff *Effective, camera int) bool {
	if !CameraAllowed(eff.Privacy, camera) {
		return false
	}
	if inPrivacyMode(eff) {
		if camera == 2 {
			return eff.PrivacyModeConfig.CabinLensVideo
		}
		return eff.PrivacyModeConfig.RoadAndAuxLensVideo
	}
	return true
}

// ValidCameraID reports whether id names a camera: 1 road-facing, 2 in-cabin,
// 50 and above auxiliary.
func ValidCameraID(id int) bool { return id == 1 || id == 2 || id >= 50 }

// ValidFileID reports whether id can name a media file: 1 to 128 letters,
// digits, '.', '_' or '-'.
func ValidFileID(id string) bool {
	if id == "" || len(id) > 128 || id == "." || id == ".." {
		return false
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
