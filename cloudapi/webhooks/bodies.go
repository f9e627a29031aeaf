package webhooks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/fleetcam/fleetcam/cloudapi/apiform"
	"github.com/fleetcam/fleetcam/store"
)

// Webhook bodies. The store records what happened as typed facts
// (store/messagefacts.go); this file is the one place that renders them in
// webhook form, at fan-out, into the data object of the envelope. A fact is
// a snapshot of its moment, so the body does not depend on when fan-out
// runs. A message recorded before facts were typed carries its data object
// already rendered (Message.Payload) and is sent as it is.

// renderData renders the data object of m's webhook.
func renderData(m *store.Message) (json.RawMessage, error) {
	var data any
	switch {
	case m.Event != nil:
		data = eventData(m.IMEI, m.Event)
	case m.GPS != nil:
		data = gpsData(m.IMEI, m.GPS)
	case m.Activation != nil:
		data = activationData{EventType: store.EventDeviceActivation, ID: m.Activation.EventID,
			OrganizationID: m.OrganizationID, SerialNumber: m.IMEI, Time: m.Time.Unix()}
	case m.Presence != nil:
		data = presenceData{PreviousStatus: m.Presence.Previous, SerialNumber: m.IMEI, Status: m.Presence.Status, Time: m.Time.Unix()}
	case m.Removed != nil:
		data = removedData{Name: m.Removed.Name, SerialNumber: m.IMEI, Time: m.Time.Unix()}
	case m.Alarm != nil:
		data = alarmBody(m.SubType, m.Alarm)
	case m.AuxCamera != nil:
		c := m.AuxCamera.Camera
		data = auxCameraData{Type: m.SubType, SerialNumber: m.IMEI, IMEI: m.IMEI, CameraID: c.CameraID,
			CameraSerialNumber: c.SerialNumber, ConnectionType: c.Kind, Status: m.AuxCamera.Status, Timestamp: m.Time.Unix()}
	case m.AuxSearch != nil:
		cams := []auxCamera{}
		for _, c := range m.AuxSearch.Cameras {
			cams = append(cams, auxCamera{CameraID: c.CameraID, SerialNumber: c.SerialNumber, SSID: c.SSID, Kind: c.Kind,
				Paired: c.Paired, Connected: c.Connected, PairedAt: apiform.Time(c.PairedAt), ChangedAt: apiform.Time(c.ChangedAt)})
		}
		data = auxSearchData{Type: m.SubType, SerialNumber: m.IMEI, IMEI: m.IMEI, Status: "searchCompleted",
			Cameras: cams, Timestamp: m.Time.Unix()}
	case m.Privacy != nil:
		p := m.Privacy
		data = privacyData{SerialNumber: m.IMEI, Change: p.Change, Before: p.Before, After: p.After, Config: p.Config,
			Time: m.Time.Unix(), InitiatedBy: p.InitiatedBy, Pending: p.Pending}
	case len(m.Payload) > 0:
		return m.Payload, nil
	default:
		return json.RawMessage("{}"), nil
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("webhooks: render %s message %d: %w", m.Kind, m.Seq, err)
	}
	return raw, nil
}

// eventType is the webhook syntax of the event type of m, an event or
// mediaAvailable message, "" for any other.
func eventType(m *store.Message) string {
	if m.Event != nil {
		return webhookEventType(m.Event.Type)
	}
	if m.Kind != store.MessageEvent && m.Kind != store.MessageMediaUploaded {
		return ""
	}
	var ev struct {
		EventType string `json:"eventType"`
	}
	json.Unmarshal(m.Payload, &ev)
	return ev.EventType
}

// webhookEventType spells an event type (API syntax) as webhooks do.
func webhookEventType(apiType string) string {
	if k, ok := store.LookupEvent(apiType); ok {
		return k.Webhook
	}
	return ""
}

// eventFile is a file in the webhook form: file is the file id.
type eventFile struct {
	CameraID int    `json:"cameraId"`
	File     string `json:"file"`
	FileType string `json:"fileType"`
}

// eventOther carries the geofence of a geoFence event.
type eventOther struct {
	GeofencePath string `json:"geofence_path"`
	GeofenceID   int64  `json:"geofence_id"`
	GeofenceName string `json:"geofence_name"`
}

// eventDriver is the driver member of an event webhook.
type eventDriver struct {
	ID                 string `json:"id"`
	DriverThirdPartyID string `json:"driverThirdPartyId,omitempty"`
	FirstName          string `json:"firstName,omitempty"`
	LastName           string `json:"lastName,omitempty"`
}

// eventBody is the data object of an event webhook, and of the
// mediaAvailable follow-up (the envelope carries the flag).
type eventBody struct {
	ID           int64             `json:"id"`
	SerialNumber string            `json:"serialNumber"`
	EventType    string            `json:"eventType"`
	Time         int64             `json:"time"`
	Lat          float64           `json:"lat"`
	Lon          float64           `json:"lon"`
	Alt          float64           `json:"alt"`
	Speed        float64           `json:"speed"`
	Metadata     string            `json:"metadata"`
	Severity     int               `json:"severity"`
	Other        *eventOther       `json:"other,omitempty"`
	Files        []eventFile       `json:"files"`
	SDCard       *store.SDCardInfo `json:"sdCard,omitempty"`
	Driver       *eventDriver      `json:"driver"`
}

func eventData(imei string, e *store.EventFact) eventBody {
	d := eventBody{ID: e.ID, SerialNumber: imei, EventType: webhookEventType(e.Type), Time: e.Time.Unix(),
		Lat: e.Lat, Lon: e.Lon, Alt: e.Alt, Speed: e.Speed, Metadata: e.Metadata, Severity: e.Severity,
		SDCard: e.SDCard, Files: []eventFile{}}
	if g := e.GeoFence; g != nil {
		d.Other = &eventOther{GeofencePath: g.Path, GeofenceID: g.ID, GeofenceName: g.Name}
	}
	for _, f := range e.Files {
		d.Files = append(d.Files, eventFile{CameraID: f.CameraID, File: f.FileID, FileType: f.FileType})
	}
	if dr := e.Driver; dr != nil {
		d.Driver = &eventDriver{ID: strconv.FormatInt(dr.ID, 10), DriverThirdPartyID: dr.ThirdPartyID,
			FirstName: dr.FirstName, LastName: dr.LastName}
	}
	return d
}

// gpsBody is the data of a GPS webhook: the samples one message brought.
type gpsBody struct {
	// ID is alphanumeric (a breaking change of the reference platform).
	ID           string     `json:"id"`
	SerialNumber string     `json:"serialNumber"`
	GPS          []gpsPoint `json:"gps"`
}

type gpsPoint struct {
	Time     int64   `json:"time"` // unix seconds
	Lat      float64 `json:"lat"`
	Lon      float64 `json:"lon"`
	Alt      float64 `json:"alt"`
	Speed    float64 `json:"speed"` // km/h
	Accuracy float64 `json:"accuracy"`
	Heading  float64 `json:"heading,omitempty"`
}

// gpsData renders GPS samples; the id is derived from the device, the first
// sample's time and the count, so it is the same at every rendering.
func gpsData(imei string, points []store.GPSPoint) gpsBody {
	w := gpsBody{SerialNumber: imei}
	if len(points) > 0 {
		first := points[0].Time.UnixMilli()
		sum := sha256.Sum256([]byte(imei + ":" + strconv.FormatInt(first, 10) + ":" + strconv.Itoa(len(points))))
		w.ID = hex.EncodeToString(sum[:10])
	}
	for _, p := range points {
		w.GPS = append(w.GPS, gpsPoint{Time: p.Time.Unix(), Lat: p.Lat, Lon: p.Lon, Alt: p.Alt,
			Speed: p.Speed, Accuracy: p.Accuracy, Heading: p.Heading})
	}
	return w
}

// activationData is the data of a deviceActivation activation webhook.
type activationData struct {
	EventType      string `json:"eventType"`
	ID             int64  `json:"id"`
	OrganizationID int64  `json:"organizationId"`
	SerialNumber   string `json:"serialNumber"`
	Time           int64  `json:"time"`
}

// presenceData is the data of a deviceStatus system message.
type presenceData struct {
	PreviousStatus string `json:"previousStatus"`
	SerialNumber   string `json:"serialNumber"`
	Status         string `json:"status"`
	Time           int64  `json:"time"`
}

// removedData is the data of a deviceRemoved system message.
type removedData struct {
	Name         string `json:"name"`
	SerialNumber string `json:"serialNumber"`
	Time         int64  `json:"time"`
}

// alarmData is the data object of an alarm webhook.
type alarmData struct {
	// Event is "created" or "closed".
	Event                   string                 `json:"event"`
	ID                      int64                  `json:"id"`
	SerialNumber            string                 `json:"serialNumber"`
	IMEI                    string                 `json:"imei"`
	AlarmDefinitionID       int64                  `json:"alarmDefinitionId"`
	AlarmDefinitionName     string                 `json:"alarmDefinitionName"`
	AlarmDefinitionSeverity int                    `json:"alarmDefinitionSeverity"`
	Details                 string                 `json:"details"`
	OrganizationID          int64                  `json:"organizationId"`
	OrganizationName        string                 `json:"organizationName"`
	PartnerID               int64                  `json:"partnerId"`
	PartnerName             string                 `json:"partnerName"`
	Open                    bool                   `json:"isOpen"`
	Simulated               bool                   `json:"isSimulated"`
	CreatedAt               string                 `json:"createdAt"`
	LastCloseAt             string                 `json:"lastCloseAt,omitempty"`
	Comments                []apiform.AlarmComment `json:"comments"`
}

func alarmBody(event string, f *store.AlarmFact) alarmData {
	a := &f.Alarm
	def, _ := store.AlarmDefinitionByID(a.AlarmDefinitionID)
	d := alarmData{Event: event, ID: a.ID, SerialNumber: a.IMEI, IMEI: a.IMEI, AlarmDefinitionID: def.ID,
		AlarmDefinitionName: def.Name, AlarmDefinitionSeverity: def.Severity, Details: a.Details,
		OrganizationID: a.OrganizationID, OrganizationName: f.OrganizationName, PartnerID: a.PartnerID,
		PartnerName: f.PartnerName, Open: a.Open, Simulated: a.Simulated, CreatedAt: apiform.Time(a.CreatedAt),
		LastCloseAt: apiform.Time(a.LastCloseAt)}
	if a.Comments != nil {
		d.Comments = []apiform.AlarmComment{}
	}
	for _, c := range a.Comments {
		d.Comments = append(d.Comments, apiform.NewAlarmComment(c))
	}
	return d
}

// auxCameraData is the data of an auxiliary camera system or activation message.
type auxCameraData struct {
	Type               string `json:"type"`
	SerialNumber       string `json:"serialNumber"`
	IMEI               string `json:"imei"`
	CameraID           int    `json:"cameraId"`
	CameraSerialNumber string `json:"cameraSerialNumber,omitempty"`
	ConnectionType     string `json:"connectionType,omitempty"`
	Status             string `json:"status"`
	Timestamp          int64  `json:"timestamp"` // unix seconds
}

// auxSearchData is the data of the system message sent when a device
// finished searching for auxiliary cameras.
type auxSearchData struct {
	Type         string      `json:"type"`
	SerialNumber string      `json:"serialNumber"`
	IMEI         string      `json:"imei"`
	Status       string      `json:"status"` // searchCompleted
	Cameras      []auxCamera `json:"cameras"`
	Timestamp    int64       `json:"timestamp"`
}

// auxCamera is a camera of the search result, its times in the API's form.
type auxCamera struct {
	CameraID     int    `json:"cameraId"`
	SerialNumber string `json:"serialNumber,omitempty"`
	SSID         string `json:"ssid,omitempty"`
	Kind         string `json:"kind,omitempty"` // wired or wifi
	Paired       bool   `json:"paired"`
	Connected    bool   `json:"connected"`
	PairedAt     string `json:"pairedAt,omitempty"`
	ChangedAt    string `json:"changedAt,omitempty"`
}

// privacyData is the data of a privacyMode system message.
type privacyData struct {
	SerialNumber string                   `json:"serialNumber"`
	Change       string                   `json:"change"`
	Before       string                   `json:"before,omitempty"`
	After        string                   `json:"after,omitempty"`
	Config       *store.PrivacyModeConfig `json:"privacyConfig,omitempty"`
	// Time is when the change was made, in unix seconds.
	Time        int64 `json:"time"`
	InitiatedBy int64 `json:"initiatedBy,omitempty"`
	// Pending says the device was offline and applies the change when it reconnects.
	Pending bool `json:"pending"`
}
