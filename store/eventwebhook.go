package store

// EventWebhookFile is a file in the webhook form: file is the file id.
type EventWebhookFile struct {
	CameraID int    `json:"cameraId"`
	File     string `json:"file"`
	FileType string `json:"fileType"`
}

// EventWebhookOther carries the geofence of a geoFence event in webhooks.
type EventWebhookOther struct {
	GeofencePath string `json:"geofence_path"`
	GeofenceID   int64  `json:"geofence_id"`
	GeofenceName string `json:"geofence_name"`
}

// EventWebhookData is the data object of an event webhook, and of the
// mediaAvailable follow-up (a MessageMediaUploaded message; the webhook
// envelope carries the flag).
type EventWebhookData struct {
	ID           int64              `json:"id"`
	SerialNumber string             `json:"serialNumber"`
	EventType    string             `json:"eventType"`
	Time         int64              `json:"time"`
	Lat          float64            `json:"lat"`
	Lon          float64            `json:"lon"`
	Alt          float64            `json:"alt"`
	Speed        float64            `json:"speed"`
	Metadata     string             `json:"metadata"`
	Severity     int                `json:"severity"`
	Other        *EventWebhookOther `json:"other,omitempty"`
	Files        []EventWebhookFile `json:"files"`
	SDCard       *SDCardInfo        `json:"sdCard,omitempty"`
	Driver       any                `json:"driver"`
}

// EventWebhookData renders e in the webhook form.
func (tx *Tx) EventWebhookData(e *Event) (*EventWebhookData, error) {
	d := &EventWebhookData{ID: e.ID, SerialNumber: e.IMEI, EventType: e.Kind().Webhook, Time: e.Time.Unix(),
		Lat: e.Lat, Lon: e.Lon, Alt: e.Alt, Speed: e.Speed, Metadata: e.Metadata, Severity: e.Severity,
		SDCard: e.SDCard, Files: []EventWebhookFile{}}
	if e.Type == EventGeoFence {
		d.Other = &EventWebhookOther{GeofencePath: e.GeoFencePath, GeofenceID: e.GeoFenceID, GeofenceName: e.GeoFenceName}
	}
	for _, f := range e.Files {
		d.Files = append(d.Files, EventWebhookFile{CameraID: f.CameraID, File: f.FileID, FileType: f.FileType})
	}
	if e.DriverID != 0 {
		info, err := eventDriverWebhook(tx, e.DriverID)
		if err != nil {
			return nil, err
		}
		d.Driver = info
	}
	return d, nil
}

func allTrue(v []bool) bool {
	for _, b := range v {
		if !b {
			return false
		}
	}
	return true
}
