package store

import "time"

// The facts messages carry. Each is what the webhook of its message needs,
// as it was when the message was recorded: a webhook tells what happened at
// that moment, so a driver renamed or an alarm commented on later does not
// change the body of a message already recorded, nor of its redelivery.
// That is why a fact copies the values (names, comments, files) rather
// than pointing at records that may change or go. The facts are the
// store's own records; the webhook form, field names and all, is rendered
// by cloudapi/webhooks alone.

// EventFact is an event as it stood when its message was recorded.
type EventFact struct {
	ID int64 `json:"id"`
	// Type is the event type in API syntax.
	Type     string      `json:"type"`
	Time     time.Time   `json:"time"`
	Lat      float64     `json:"lat"`
	Lon      float64     `json:"lon"`
	Alt      float64     `json:"alt"`
	Speed    float64     `json:"speed"`
	Metadata string      `json:"metadata,omitempty"`
	Severity int         `json:"severity"`
	Files    []EventFile `json:"files,omitempty"`
	SDCard   *SDCardInfo `json:"sdCard,omitempty"`
	// GeoFence is set for geoFence events.
	GeoFence *GeoFenceFact `json:"geoFence,omitempty"`
	// Driver is set when the event has a driver.
	Driver *EventDriver `json:"driver,omitempty"`
}

// GeoFenceFact is the geofence a geoFence event crossed, and how.
type GeoFenceFact struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Path string `json:"path"` // GeofenceEntered or GeofenceExited
}

// EventDriver is the driver of an event: its id always, its names when the
// driver record was found.
type EventDriver struct {
	ID           int64  `json:"id"`
	ThirdPartyID string `json:"thirdPartyId,omitempty"`
	FirstName    string `json:"firstName,omitempty"`
	LastName     string `json:"lastName,omitempty"`
}

// ActivationFact is a device's activation: the deviceActivation event it
// created, 0 when the device's settings suppressed the event.
type ActivationFact struct {
	EventID int64 `json:"eventId"`
}

// PresenceFact is a change of a device's presence (PresenceOnline, ...).
type PresenceFact struct {
	Status   string `json:"status"`
	Previous string `json:"previous"`
}

// RemovedFact is a device removed from its organization, with the name it had.
type RemovedFact struct {
	Name string `json:"name"`
}

// AlarmFact is an alarm as it stood when its message was recorded, with the
// names of its organization and partner then.
type AlarmFact struct {
	Alarm            Alarm  `json:"alarm"`
	OrganizationName string `json:"organizationName"`
	PartnerName      string `json:"partnerName"`
}

// AuxCameraFact is an auxiliary camera that connected, disconnected, was
// paired or unpaired (Status: AuxConnected, ...).
type AuxCameraFact struct {
	Camera AuxCamera `json:"camera"`
	Status string    `json:"status"`
}

// AuxSearchFact is the auxiliary cameras a device found in range.
type AuxSearchFact struct {
	Cameras []AuxCamera `json:"cameras"`
}

// PrivacyFact is a change of a device's privacy mode or of what privacy
// mode keeps enabled.
type PrivacyFact struct {
	// Change is "mode" for a privacy-mode switch, "config" for a change of
	// what privacy mode keeps enabled, "applied" when a device that was
	// offline confirms the switch after reconnecting.
	Change string             `json:"change"`
	Before string             `json:"before,omitempty"`
	After  string             `json:"after,omitempty"`
	Config *PrivacyModeConfig `json:"config,omitempty"`
	// InitiatedBy is the user who made the change, 0 for none.
	InitiatedBy int64 `json:"initiatedBy,omitempty"`
	// Pending says the device was offline and applies the change when it reconnects.
	Pending bool `json:"pending,omitempty"`
}

// eventFact records e as its message tells it.
func (tx *Tx) eventFact(e *Event) (*EventFact, error) {
	f := &EventFact{ID: e.ID, Type: e.Type, Time: e.Time, Lat: e.Lat, Lon: e.Lon, Alt: e.Alt, Speed: e.Speed,
		Metadata: e.Metadata, Severity: e.Severity, Files: e.Files, SDCard: e.SDCard}
	if e.Type == EventGeoFence {
		f.GeoFence = &GeoFenceFact{ID: e.GeoFenceID, Name: e.GeoFenceName, Path: e.GeoFencePath}
	}
	if e.DriverID != 0 {
		f.Driver = &EventDriver{ID: e.DriverID}
		if d, err := tx.Driver(e.DriverID); err == nil {
			f.Driver.ThirdPartyID, f.Driver.FirstName, f.Driver.LastName = d.ThirdPartyID, d.FirstName, d.LastName
		} else if !isNotFound(err) {
			return nil, err
		}
	}
	return f, nil
}

func allTrue(v []bool) bool {
	for _, b := range v {
		if !b {
			return false
		}
	}
	return true
}
