package store

import "slices"

// EventKind is one kind of event fleetcam knows: how the API and webhooks
// spell it and what it may carry. The catalogue below is the one table of
// event kinds; the API validates event-type names against it, the broker
// checks device events against it and webhooks render the webhook syntax
// from it.
type EventKind struct {
	// API is the API syntax, used in API requests and responses and on the
	// device wire contract.
	API string
	// Webhook is the webhook syntax, used as eventType in webhook payloads.
	Webhook string
	// Name is the human name.
	Name string
	// Beep marks an in-cabin warning that precedes a main event (two
	// cellPhoneUseBeep before one cellPhoneUse). Beeps are available only
	// through the API and never upload media.
	Beep bool
	// HasMedia reports whether the event can carry a snapshot or a video.
	// Power on and off are text only, and beeps have no media.
	HasMedia bool
	// MVAI marks the in-cabin machine-vision (MV+AI) events, to which the
	// minimum-speed and number-of-beeps settings apply.
	MVAI bool
	// Aliases are other names callers use for the same kind; the API accepts
	// them and answers with API.
	Aliases []string
}

// eventCatalogue lists every event kind, in the order the API lists them
// (an event configuration's events, for one).
var eventCatalogue = []EventKind{
	{API: "acceleration", Webhook: "acceleration", Name: "Acceleration", HasMedia: true},
	{API: "accident", Webhook: "accident", Name: "Possible accident", HasMedia: true, Aliases: []string{"possibleAccident"}},
	{API: "button", Webhook: "button", Name: "Button pressed", HasMedia: true},
	{API: "cellPhoneUse", Webhook: "cellPhoneUse", Name: "Cell phone use", HasMedia: true, MVAI: true},
	{API: "cellPhoneUseBeep", Webhook: "cell_phone_use_beep", Name: "Cell phone use alert", Beep: true},
	{API: "deceleration", Webhook: "de_acceleration", Name: "De-acceleration", HasMedia: true},
	{API: "deviceActivation", Webhook: "deviceActivation", Name: "Device activation", HasMedia: true},
	{API: "distractedDriving", Webhook: "distracted_driving", Name: "Distracted driving", HasMedia: true, MVAI: true},
	{API: "distractedDriverBeep", Webhook: "distracted_driver_beep", Name: "Distracted driving alert", Beep: true},
	{API: "driverCheckIn", Webhook: "drivercheckin", Name: "Driver check-in", HasMedia: true},
	{API: "driverCheckOut", Webhook: "drivercheckout", Name: "Driver check-out", HasMedia: true},
	{API: "driverUnbelted", Webhook: "driverUnbelted", Name: "Driver unbelted", HasMedia: true, MVAI: true},
	{API: "driverUnbeltedBeep", Webhook: "driver_unbelted_beep", Name: "Driver unbelted alert", Beep: true},
	{API: "standbyEnter", Webhook: "standby_enter", Name: "Entering standby", HasMedia: true},
	{API: "standbyExit", Webhook: "standby_exit", Name: "Exiting standby", HasMedia: true},
	{API: "geoFence", Webhook: "GeoFence", Name: "Fence", HasMedia: true},
	{API: "foodDrink", Webhook: "foodDrink", Name: "Food and drink", HasMedia: true, MVAI: true},
	{API: "foodDrinkBeep", Webhook: "food_drink_beep", Name: "Food and drink alert", Beep: true},
	{API: "gsensorHigh", Webhook: "gsensor_high", Name: "GSensor high", HasMedia: true},
	{API: "gsensorRegular", Webhook: "gsensor_regular", Name: "GSensor regular", HasMedia: true},
	{API: "laneWeaving", Webhook: "lane_weaving", Name: "Lane weaving", HasMedia: true},
	{API: "noCheckIn", Webhook: "nocheckin", Name: "No check-in", HasMedia: true},
	{API: "obstruction", Webhook: "obstruction", Name: "Obstruction", HasMedia: true, MVAI: true},
	{API: "passengerUnbelted", Webhook: "passenger_unbelted", Name: "Passenger unbelted", HasMedia: true, MVAI: true},
	{API: "possibleFatigue", Webhook: "possibleFatigue", Name: "Possible fatigue", HasMedia: true},
	{API: "powerDisconnectAlarm", Webhook: "power_disconnect_alarm", Name: "Power disconnect", HasMedia: true},
	{API: "accOff", Webhook: "acc_off", Name: "Power off"},
	{API: "accOn", Webhook: "acc_on", Name: "Power on"},
	{API: "qrCode", Webhook: "qr_code", Name: "QR code", HasMedia: true},
	{API: "sdCardFormatted", Webhook: "sd_card_formatted", Name: "SD card formatted", HasMedia: true},
	{API: "smoking", Webhook: "smoking", Name: "Smoking", HasMedia: true, MVAI: true},
	{API: "smokingBeep", Webhook: "smoking_beep", Name: "Smoking alert", Beep: true},
	{API: "speedLimit", Webhook: "SpeedLimit", Name: "Speed limit", HasMedia: true},
	{API: "tailgating", Webhook: "tailgating", Name: "Tailgating", HasMedia: true},
	{API: "coverOpened", Webhook: "cover_opened", Name: "Tamper", HasMedia: true},
	{API: "jolt", Webhook: "jolt", Name: "Vibration", HasMedia: true},
	{API: "sharpTurnLeft", Webhook: "sharp_turn_left", Name: "Violent left turn", HasMedia: true},
	{API: "sharpRightTurn", Webhook: "sharp_turn_right", Name: "Violent right turn", HasMedia: true, Aliases: []string{"sharpTurnRight"}},
	{API: "virtualEvent", Webhook: "virtual_event", Name: "Virtual event", HasMedia: true},
	{API: "wrongPinCode", Webhook: "wrong_pin_code", Name: "Wrong PIN code", HasMedia: true},
}

// eventsByAPI indexes the catalogue by API name (and alias), built once
// from it.
var eventsByAPI = indexEventCatalogue()

// indexEventCatalogue maps each API name and alias of the catalogue to its
// position.
func indexEventCatalogue() map[string]int {
	byAPI := map[string]int{}
	for i, k := range eventCatalogue {
		byAPI[k.API] = i
		for _, a := range k.Aliases {
			byAPI[a] = i
		}
	}
	return byAPI
}

// EventKinds returns the catalogue, in its order.
func EventKinds() []EventKind {
	out := slices.Clone(eventCatalogue)
	for i := range out {
		out[i].Aliases = slices.Clone(out[i].Aliases)
	}
	return out
}

// LookupEvent finds an event kind by its API syntax or one of its aliases.
func LookupEvent(name string) (EventKind, bool) {
	i, ok := eventsByAPI[name]
	if !ok {
		return EventKind{}, false
	}
	return eventCatalogue[i], true
}

// DefaultDataType is the media an event kind carries when its settings do
// not say: a video when it can carry media, none otherwise.
func (k EventKind) DefaultDataType() string {
	if k.HasMedia {
		return DataVideo
	}
	return DataNone
}

// Media attached to an event.
const (
	DataNone     = "none"
	DataSnapshot = "snapshot"
	DataVideo    = "video"
)
