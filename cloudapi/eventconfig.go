package cloudapi

import (
	"fmt"
	"math"
	"slices"

	"github.com/fleetcam/fleetcam/store"
)

// Event configuration: which event types a device creates, with what media
// and alerts, and the thresholds of the events that have them. The body
// follows the reference contract: {vehicleType, events: [{eventType,
// dataType, …}]}. A replacing write (PUT, and the organization POST) lists
// the enabled events: a type it does not list is disabled. The organization
// PATCH changes only the events it lists (an item may say "enabled": false).

// eventConfigDTO is the event configuration in requests and responses.
type eventConfigDTO struct {
	VehicleType *string        `json:"vehicleType"`
	Events      []eventItemDTO `json:"events"`
}

// eventItemDTO is the settings of one event type.
type eventItemDTO struct {
	EventType string `json:"eventType"`
	DataType  string `json:"dataType"`
	// Enabled is on unless the item says otherwise; only PATCH needs it.
	Enabled         *bool           `json:"enabled,omitempty"`
	SpeedLimit      *float64        `json:"speedLimit,omitempty"`
	MinimumSpeed    *int            `json:"minimumSpeed,omitempty"`
	NumberOfBeeps   *int            `json:"numberOfBeeps,omitempty"`
	Weight          *int            `json:"weight,omitempty"`
	Config          *laneWeavingDTO `json:"config,omitempty"`
	DrivingDuration *float64        `json:"drivingDuration,omitempty"`
	VisualAlert     *bool           `json:"visualAlert,omitempty"`
	AudioAlert      *bool           `json:"audioAlert,omitempty"`
}

// laneWeavingDTO is the config member of a laneWeaving item.
type laneWeavingDTO struct {
	LaneWeavingTimes           *int `json:"laneWeavingTimes,omitempty"`
	LaneWeavingDurationSeconds *int `json:"laneWeavingDurationSeconds,omitempty"`
}

// Ranges of the event configuration parameters.
const (
	minLaneWeavingTimes, maxLaneWeavingTimes     = 2, 10
	minLaneWeavingSeconds, maxLaneWeavingSeconds = 5, 60
	minDrivingHours, maxDrivingHours             = 0, 20
	minMvaiSpeed, maxMvaiSpeed                   = 0, 180
	minSpeedLimit, maxSpeedLimit                 = 1, 300
	minBeeps, maxBeeps                           = 1, 6
	minWeight, maxWeight                         = 0, 5
)

var vehicleTypes = []string{store.VehiclePrivate, store.VehicleVan, store.VehicleTrailer}

// replacedEvents builds the configuration a replacing write asks for: every
// event type disabled except those listed, thresholds at their defaults
// unless the listed items set them.
func (d *eventConfigDTO) replacedEvents() (store.EventConfig, error) {
	cfg := store.DefaultEventConfig()
	if d.VehicleType == nil {
		return cfg, badField("vehicleType", fmt.Sprintf("is required (one of %v)", vehicleTypes))
	}
	if d.Events == nil {
		return cfg, badField("events", "is required: list the enabled events (an empty list disables all)")
	}
	cfg.Events = map[string]store.EventSetting{}
	for _, k := range store.EventKinds() {
		cfg.Events[k.API] = store.EventSetting{Enabled: false}
	}
	return cfg, d.applyTo(&cfg)
}

// patchedEvents applies a PATCH over cfg: the listed events change, the
// others stay.
func (d *eventConfigDTO) patchedEvents(cfg store.EventConfig) (store.EventConfig, error) {
	cfg = cfg.Clone()
	if d.Events == nil {
		return cfg, badField("events", "is required")
	}
	return cfg, d.applyTo(&cfg)
}

// applyTo validates the body and writes what it names into cfg.
func (d *eventConfigDTO) applyTo(cfg *store.EventConfig) error {
	if d.VehicleType != nil {
		if !slices.Contains(vehicleTypes, *d.VehicleType) {
			return badField("vehicleType", fmt.Sprintf("must be one of %v", vehicleTypes))
		}
		cfg.VehicleType = *d.VehicleType
	}
	if cfg.Events == nil {
		cfg.Events = map[string]store.EventSetting{}
	}
	seen := map[string]bool{}
	for i := range d.Events {
		if err := d.Events[i].applyTo(cfg, fmt.Sprintf("events[%d]", i), seen); err != nil {
			return err
		}
	}
	return nil
}

// applyTo validates one item and writes it into cfg.
func (it *eventItemDTO) applyTo(cfg *store.EventConfig, field string, seen map[string]bool) error {
	kind, found := store.LookupEvent(it.EventType)
	switch {
	case it.EventType == "":
		return badField(field+".eventType", "is required")
	case !found:
		return badField(field+".eventType", fmt.Sprintf("%q is not an event type (use the API syntax names, e.g. cellPhoneUse)", it.EventType))
	case seen[kind.API]:
		return badField(field+".eventType", fmt.Sprintf("lists %s twice", kind.API))
	case it.DataType == "":
		return badField(field+".dataType", "is required (none, snapshot or video)")
	case !slices.Contains([]string{store.DataNone, store.DataSnapshot, store.DataVideo}, it.DataType):
		return badField(field+".dataType", "must be none, snapshot or video")
	case !kind.HasMedia && it.DataType != store.DataNone:
		return badField(field+".dataType", fmt.Sprintf("must be none: %s events carry no media", kind.API))
	}
	seen[kind.API] = true
	s := cfg.Events[kind.API]
	s.Enabled = it.Enabled == nil || *it.Enabled
	s.DataType = it.DataType
	if it.VisualAlert != nil {
		s.VisualAlert = ptrOf(*it.VisualAlert)
	}
	if it.AudioAlert != nil {
		s.AudioAlert = ptrOf(*it.AudioAlert)
	}
	only := func(member, kinds string) error {
		return badField(field+"."+member, "applies only to "+kinds)
	}
	if it.MinimumSpeed != nil {
		if !kind.MVAI {
			return only("minimumSpeed", "MV+AI events")
		}
		if *it.MinimumSpeed < minMvaiSpeed || *it.MinimumSpeed > maxMvaiSpeed {
			return badField(field+".minimumSpeed", rangeRule(minMvaiSpeed, maxMvaiSpeed)+" (km/h; below 5 no event is created)")
		}
		s.MinimumSpeedKmh = ptrOf(*it.MinimumSpeed)
	}
	if it.NumberOfBeeps != nil {
		if !kind.MVAI {
			return only("numberOfBeeps", "MV+AI events")
		}
		if *it.NumberOfBeeps < minBeeps || *it.NumberOfBeeps > maxBeeps {
			return badField(field+".numberOfBeeps", rangeRule(minBeeps, maxBeeps))
		}
		s.NumberOfBeeps = *it.NumberOfBeeps
	}
	if it.Weight != nil {
		if *it.Weight < minWeight || *it.Weight > maxWeight {
			return badField(field+".weight", rangeRule(minWeight, maxWeight))
		}
		s.Weight = *it.Weight
	}
	if it.Config != nil {
		if kind.API != "laneWeaving" {
			return only("config", "laneWeaving")
		}
		if v := it.Config.LaneWeavingTimes; v != nil {
			if err := setInt(&cfg.LaneWeavingTimes, v, field+".config.laneWeavingTimes", minLaneWeavingTimes, maxLaneWeavingTimes); err != nil {
				return err
			}
		}
		if v := it.Config.LaneWeavingDurationSeconds; v != nil {
			if err := setInt(&cfg.LaneWeavingDurationSeconds, v, field+".config.laneWeavingDurationSeconds",
				minLaneWeavingSeconds, maxLaneWeavingSeconds); err != nil {
				return err
			}
		}
	}
	if it.DrivingDuration != nil {
		if kind.API != "possibleFatigue" {
			return only("drivingDuration", "possibleFatigue")
		}
		h := *it.DrivingDuration
		if h != math.Trunc(h) || h < minDrivingHours || h > maxDrivingHours {
			return badField(field+".drivingDuration", fmt.Sprintf("must be a whole number of hours from %d to %d", minDrivingHours, maxDrivingHours))
		}
		cfg.DrivingDurationHours = int(h)
	}
	if it.SpeedLimit != nil {
		if kind.API != "speedLimit" {
			return only("speedLimit", "speedLimit")
		}
		v := *it.SpeedLimit
		if v != math.Trunc(v) || v < minSpeedLimit || v > maxSpeedLimit {
			return badField(field+".speedLimit", fmt.Sprintf("must be a whole number of km/h from %d to %d", minSpeedLimit, maxSpeedLimit))
		}
		cfg.SpeedLimitKmh = int(v)
	}
	if kind.API == "speedLimit" && s.Enabled && cfg.SpeedLimitKmh == 0 {
		return badField(field+".speedLimit", "is required for speedLimit events")
	}
	cfg.Events[kind.API] = s
	return nil
}

// toEventConfigDTO renders the enabled events of cfg with every default
// filled in; audioAlarms is the device configuration's switch that audio
// alerts follow by default.
func toEventConfigDTO(cfg store.EventConfig, audioAlarms bool) eventConfigDTO {
	out := eventConfigDTO{VehicleType: ptrOf(cfg.VehicleType), Events: []eventItemDTO{}}
	for _, k := range store.EventKinds() {
		r := cfg.Setting(k.API, audioAlarms)
		if !r.Enabled {
			continue
		}
		it := eventItemDTO{EventType: k.API, DataType: r.DataType, VisualAlert: ptrOf(r.VisualAlert), AudioAlert: ptrOf(r.AudioAlert)}
		if k.MVAI {
			it.MinimumSpeed = ptrOf(r.MinimumSpeedKmh)
		}
		if r.NumberOfBeeps > 0 {
			it.NumberOfBeeps = ptrOf(r.NumberOfBeeps)
		}
		if r.Weight > 0 {
			it.Weight = ptrOf(r.Weight)
		}
		switch k.API {
		case "laneWeaving":
			it.Config = &laneWeavingDTO{LaneWeavingTimes: ptrOf(cfg.LaneWeavingTimes),
				LaneWeavingDurationSeconds: ptrOf(cfg.LaneWeavingDurationSeconds)}
		case "possibleFatigue":
			it.DrivingDuration = ptrOf(float64(cfg.DrivingDurationHours))
		case "speedLimit":
			if cfg.SpeedLimitKmh > 0 {
				it.SpeedLimit = ptrOf(float64(cfg.SpeedLimitKmh))
			}
		}
		out.Events = append(out.Events, it)
	}
	return out
}
