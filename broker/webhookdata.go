package broker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// The payloads of the messages the broker emits are the data objects of
// the webhooks they become (cloudapi/webhooks delivers them as they are).

// EventWebhook is the data of an event webhook (SPEC "Event (webhook form)").
type EventWebhook struct {
	ID           int64   `json:"id"`
	SerialNumber string  `json:"serialNumber"`
	EventType    string  `json:"eventType"` // webhook syntax
	Time         int64   `json:"time"`      // unix seconds
	Lat          float64 `json:"lat"`
	Lon          float64 `json:"lon"`
	Alt          float64 `json:"alt"`
	Speed        float64 `json:"speed"` // km/h
	Accuracy     float64 `json:"accuracy,omitempty"`
	Severity     int     `json:"severity,omitempty"`
	// Metadata is the serialized array of accelerometer samples (or the
	// scanned code of a qrCode event).
	Metadata string         `json:"metadata"`
	Other    map[string]any `json:"other,omitempty"`
	Files    []WebhookFile  `json:"files"`
	DriverID int64          `json:"driverId,omitempty"`
}

// WebhookFile names one camera file of an event.
type WebhookFile struct {
	CameraID int    `json:"cameraId"`
	File     string `json:"file"`
	FileType string `json:"fileType"`
}

// NewEventWebhook renders the webhook data of stored event e as the device sent it (ev).
func NewEventWebhook(e *store.Event, ev protocol.Event) EventWebhook {
	w := EventWebhook{ID: e.ID, SerialNumber: e.IMEI, EventType: e.Type, Time: e.Time.Unix(),
		Lat: e.Lat, Lon: e.Lon, Alt: e.Alt, Speed: e.Speed, Accuracy: e.Accuracy, Severity: e.Severity,
		Metadata: "[]", Files: []WebhookFile{}, DriverID: ev.DriverID}
	if k, ok := store.LookupEvent(e.Type); ok {
		w.EventType = k.Webhook
	}
	switch {
	case ev.QRCode != "":
		w.Metadata = ev.QRCode
	case len(ev.Samples) > 0:
		raw, _ := json.Marshal(ev.Samples)
		w.Metadata = string(raw)
	}
	if ev.GeoFenceID != 0 {
		w.Other = map[string]any{"geofence_id": ev.GeoFenceID, "geofence_path": ev.GeoFencePath}
	}
	if ev.SDCard != nil {
		w.Other = map[string]any{"sdCardUuid": ev.SDCard.UUID, "sdCardManufacturer": ev.SDCard.Manufacturer}
	}
	for _, f := range ev.Files {
		w.Files = append(w.Files, WebhookFile{CameraID: f.CameraID, File: f.FileID, FileType: f.FileType})
	}
	return w
}

// gpsWebhook is the data of a GPS webhook: the samples one message brought.
type gpsWebhook struct {
	// ID is alphanumeric (a breaking change of the reference platform).
	ID           string            `json:"id"`
	SerialNumber string            `json:"serialNumber"`
	GPS          []gpsWebhookPoint `json:"gps"`
}

type gpsWebhookPoint struct {
	Time     int64   `json:"time"` // unix seconds
	Lat      float64 `json:"lat"`
	Lon      float64 `json:"lon"`
	Alt      float64 `json:"alt"`
	Speed    float64 `json:"speed"` // km/h
	Accuracy float64 `json:"accuracy"`
	Heading  float64 `json:"heading,omitempty"`
}

func newGPSWebhook(imei string, points []store.GPSPoint) gpsWebhook {
	first := points[0].Time.UnixMilli()
	sum := sha256.Sum256([]byte(imei + ":" + strconv.FormatInt(first, 10) + ":" + strconv.Itoa(len(points))))
	w := gpsWebhook{ID: hex.EncodeToString(sum[:10]), SerialNumber: imei}
	for _, p := range points {
		w.GPS = append(w.GPS, gpsWebhookPoint{Time: p.Time.Unix(), Lat: p.Lat, Lon: p.Lon, Alt: p.Alt,
			Speed: p.Speed, Accuracy: p.Accuracy, Heading: p.Heading})
	}
	return w
}
