package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Event is a driving or device event as ingested from a device (or created
// by the cloud, such as deviceActivation). DeviceEventID is the device's own
// id for it, which makes a redelivered event a no-op.
type Event struct {
	ID             int64     `json:"id"`
	IMEI           string    `json:"imei"`
	OrganizationID int64     `json:"organizationId"`
	PartnerID      int64     `json:"partnerId,omitempty"`
	Type           string    `json:"eventType"`
	Time           time.Time `json:"time"`
	Lat            float64   `json:"lat"`
	Lon            float64   `json:"lon"`
	Alt            float64   `json:"alt,omitempty"`
	Speed          float64   `json:"speed"` // km/h
	Accuracy       float64   `json:"accuracy,omitempty"`
	Severity       int       `json:"severity,omitempty"`
	DeviceEventID  string    `json:"deviceEventId,omitempty"`
	// Raw is the payload as the device sent it.
	Raw       json.RawMessage `json:"raw,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
}

var (
	bucketEvents         = []byte("events")
	bucketEventDeviceIDs = []byte("event_device_ids")
	bucketDeviceEvents   = []byte("device_events")
)

func init() {
	registerBuckets(string(bucketEvents), string(bucketEventDeviceIDs), string(bucketDeviceEvents))
}

func deviceEventKey(imei string, t time.Time, id int64) []byte {
	return append(append(compositeKey(imei, ""), itob(max(t.UnixMilli(), 0))...), itob(id)...)
}

// AddEvent stores e with the next event id. When the device already sent an
// event with the same DeviceEventID, nothing is written, e is filled with
// the stored event and created is false.
func (tx *Tx) AddEvent(e *Event) (created bool, err error) {
	switch {
	case e.IMEI == "":
		return false, fmt.Errorf("event imei must not be empty: %w", ErrInvalid)
	case e.Type == "":
		return false, fmt.Errorf("event type must not be empty: %w", ErrInvalid)
	case e.Time.IsZero():
		return false, fmt.Errorf("event time must be set: %w", ErrInvalid)
	case math.IsNaN(e.Lat) || e.Lat < -90 || e.Lat > 90:
		return false, fmt.Errorf("event lat must be from -90 to 90: %w", ErrInvalid)
	case math.IsNaN(e.Lon) || e.Lon < -180 || e.Lon > 180:
		return false, fmt.Errorf("event lon must be from -180 to 180: %w", ErrInvalid)
	}
	var dedupe []byte
	if e.DeviceEventID != "" {
		dedupe = compositeKey(e.IMEI, e.DeviceEventID)
		if id := tx.bucket(bucketEventDeviceIDs).Get(dedupe); id != nil {
			prev, err := tx.Event(btoi(id))
			if err != nil {
				return false, err
			}
			*e = *prev
			return false, nil
		}
	}
	id, err := tx.nextID(bucketEvents)
	if err != nil {
		return false, err
	}
	e.ID, e.CreatedAt = id, tx.now
	if err := putJSON(tx.bucket(bucketEvents), itob(id), e); err != nil {
		return false, err
	}
	if dedupe != nil {
		if err := tx.bucket(bucketEventDeviceIDs).Put(dedupe, itob(id)); err != nil {
			return false, err
		}
	}
	return true, tx.bucket(bucketDeviceEvents).Put(deviceEventKey(e.IMEI, e.Time, id), nil)
}

// Event returns the event with id.
func (tx *Tx) Event(id int64) (*Event, error) {
	var e Event
	if err := getJSON(tx.bucket(bucketEvents), itob(id), &e); err != nil {
		return nil, fmt.Errorf("event %d: %w", id, err)
	}
	return &e, nil
}

// DeviceEvents returns the events of imei with a time from start to end
// inclusive, oldest first, the requested page of them and their total count.
func (tx *Tx) DeviceEvents(imei string, start, end time.Time, p Page) ([]Event, int, error) {
	prefix := compositeKey(imei, "")
	stop := append(append(compositeKey(imei, ""), itob(max(end.UnixMilli(), 0))...), bytes.Repeat([]byte{0xff}, 8)...)
	var all []Event
	c := tx.bucket(bucketDeviceEvents).Cursor()
	for k, _ := c.Seek(deviceEventKey(imei, start, 0)); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k, stop) <= 0; k, _ = c.Next() {
		e, err := tx.Event(btoi(k[len(k)-8:]))
		if err != nil {
			return nil, 0, err
		}
		all = append(all, *e)
	}
	page, total := Paginate(all, p)
	return page, total, nil
}
