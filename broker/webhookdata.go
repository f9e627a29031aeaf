package broker

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/fleetcam/fleetcam/store"
)

// The payloads of the messages the broker emits are the data objects of
// the webhooks they become (cloudapi/webhooks delivers them as they are).

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
