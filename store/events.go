package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
)

// Event review statuses.
const (
	EventStatusNew      = "new"
	EventStatusResolved = "resolved"
)

// Event severities: 1 high, 2 medium, 3 low.
const (
	SeverityHigh   = 1
	SeverityMedium = 2
	SeverityLow    = 3
)

// Camera file types.
const (
	FileVideo    = "video"
	FileSnapshot = "snapshot"
)

// Geofence crossing directions of a geoFence event.
const (
	GeofenceEntered = "entered"
	GeofenceExited  = "exited"
)

// EventFile is a camera file recorded for an event.
type EventFile struct {
	CameraID int    `json:"cameraId"`
	FileID   string `json:"fileId"`
	FileType string `json:"fileType"`
}

// MetadataSample is one accelerometer sample of an event: x, y, z in m/s²,
// time in unix seconds and speed in m/s.
type MetadataSample struct {
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	Z     float64 `json:"z"`
	Time  int64   `json:"time"`
	Speed float64 `json:"speed"`
}

// SDCardInfo is the card an sdCardFormatted event reports.
type SDCardInfo struct {
	UUID         string `json:"uuid"`
	Manufacturer string `json:"manufacturer"`
}

// EventComment is a reviewer's note on an event.
type EventComment struct {
	ID      int64  `json:"id"`
	Comment string `json:"comment"`
	// CreatedByAudienceName is "partner" or "organization".
	CreatedByAudienceName string    `json:"createdByAudienceName"`
	CreatedByID           int64     `json:"createdById"`
	CreatedByEmail        string    `json:"createdByEmail,omitempty"`
	CreatedAt             time.Time `json:"createdAt"`
}

// Event is a driving or device event, reported by a device or created by
// the cloud (virtual events, speed limit). IDs are integers in creation order.
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
	Severity       int       `json:"severity"`
	Status         string    `json:"status"`
	// Metadata is the API's metadata string: the serialized samples, the
	// scanned QR code, or a virtual event's caller-supplied text.
	Metadata     string      `json:"metadata,omitempty"`
	Files        []EventFile `json:"files,omitempty"`
	GeoFenceID   int64       `json:"geoFenceId,omitempty"`
	GeoFencePath string      `json:"geoFencePath,omitempty"`
	GeoFenceName string      `json:"geoFenceName,omitempty"`
	SDCard       *SDCardInfo `json:"sdCard,omitempty"`
	// DriverID is the driver checked in when the event happened (0: none known).
	DriverID int64 `json:"driverId,omitempty"`
	// CameraID names the auxiliary camera of a camera-specific event.
	CameraID int `json:"cameraId,omitempty"`
	// DeviceEventID is the device's own id; a redelivery with the same id is stored once.
	DeviceEventID string         `json:"deviceEventId,omitempty"`
	Comments      []EventComment `json:"comments,omitempty"`
	// MediaNotified is set once the mediaAvailable message went out.
	MediaNotified bool `json:"mediaNotified,omitempty"`
	// Ownership is the device's ownership the event was recorded for (ownership.go).
	Ownership int64     `json:"ownership,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Kind returns the catalogue entry of the event's type.
func (e *Event) Kind() EventKind {
	k, _ := LookupEvent(e.Type)
	return k
}

// EventInput is an event to ingest: what a device reported or what the
// cloud creates.
type EventInput struct {
	// DeviceEventID makes ingest idempotent per device; empty for events
	// the cloud creates once (virtual events).
	DeviceEventID string
	Type          string
	Time          time.Time
	Lat, Lon, Alt float64
	Speed         float64 // km/h
	Accuracy      float64
	// Severity 1–3; 0 takes the kind's default.
	Severity int
	Samples  []MetadataSample
	// Metadata is free text (virtual events); samples and QR codes fill it otherwise.
	Metadata string
	Files    []EventFile
	QRCode   string
	// PinCode is the PIN a driverCheckIn carries, for the driver state
	// machine (ApplyDriverEvent); it is a secret and never stored.
	PinCode      string
	GeoFenceID   int64
	GeoFencePath string
	SDCard       *SDCardInfo
	DriverID     int64
	CameraID     int
	// PositionFromGPS fills the position from the device's GPS at the
	// event's time (events the cloud creates for a device).
	PositionFromGPS bool
	// MediaRequested says the cloud already asked the device for the files
	// (a virtual event's clip request), so no upload request is due.
	MediaRequested bool
}

// IngestResult says what IngestEvent did.
type IngestResult struct {
	// Event is the stored event: new, or the earlier copy of a redelivery.
	Event *Event
	// Created is false for a redelivery or a dropped event.
	Created bool
	// Dropped names the rule that suppressed the event (Drop* constants).
	Dropped string
}

func (in *EventInput) validate() error {
	bad := func(format string, a ...any) error {
		return Invalid("", "event "+format, a...)
	}
	switch {
	case in.Time.IsZero() || in.Time.Unix() <= 0 || !ValidDeviceTime(in.Time):
		return bad("time " + RuleDeviceTime)
	case math.IsNaN(in.Lat) || in.Lat < -90 || in.Lat > 90:
		return bad("lat must be from -90 to 90")
	case math.IsNaN(in.Lon) || in.Lon < -180 || in.Lon > 180:
		return bad("lon must be from -180 to 180")
	case math.IsNaN(in.Speed) || in.Speed < 0:
		return bad("speed must not be negative")
	case math.IsNaN(in.Accuracy) || in.Accuracy < 0:
		return bad("accuracy must not be negative")
	case in.Severity < 0 || in.Severity > 3:
		return bad("severity must be 1 (high), 2 (medium) or 3 (low)")
	case len(in.DeviceEventID) > 200:
		return bad("id must be at most 200 characters")
	}
	for i, smp := range in.Samples {
		if _, ok := UnixDeviceTime(smp.Time, time.Second); !ok {
			return bad("samples[%d].time (unix seconds) "+RuleDeviceTime, i)
		}
		if math.IsNaN(smp.Speed) || smp.Speed < 0 {
			return bad("samples[%d].speed must not be negative", i)
		}
	}
	for i, f := range in.Files {
		switch {
		case !ValidCameraID(f.CameraID):
			return bad("files[%d].cameraId "+RuleCameraID, i)
		case !ValidFileID(f.FileID):
			return bad("files[%d].fileId must be 1 to 128 letters, digits, '.', '_' or '-'", i)
		case f.FileType != FileVideo && f.FileType != FileSnapshot:
			return bad("files[%d].fileType must be video or snapshot", i)
		}
	}
	switch in.Type {
	case EventQRCode:
		if in.QRCode == "" {
			return bad("qrCode must carry the scanned code")
		}
	case EventSDCardFormatted:
		if in.SDCard == nil || in.SDCard.UUID == "" {
			return bad("sdCard.uuid must carry the new SD card's UUID")
		}
	case EventGeoFence:
		if in.GeoFenceID <= 0 {
			return bad("geoFenceId must name the geofence")
		}
		if in.GeoFencePath != GeofenceEntered && in.GeoFencePath != GeofenceExited {
			return bad("geoFencePath must be entered or exited")
		}
	}
	return nil
}

// IngestEvent applies every event rule and stores the event of dev that
// survives them, with its media references, in this transaction. It emits
// the event webhook message (not for beeps). A redelivery (same
// DeviceEventID) returns the stored event with Created false.
func (tx *Tx) IngestEvent(dev *Device, in EventInput) (IngestResult, error) {
	kind, ok := LookupEvent(in.Type)
	if !ok {
		return IngestResult{}, Invalid("", "event type %q is not an event kind of the catalogue", in.Type)
	}
	if err := in.validate(); err != nil {
		return IngestResult{}, err
	}
	if in.DeviceEventID != "" {
		// The device's ids are unique within one ownership only: a device
		// reset for its next owner may count from the start again.
		seen, err := tx.rec.EventDeviceIDs().Get(dev.IMEI, in.DeviceEventID)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return IngestResult{}, err
		case seen.Ownership == dev.Ownership:
			prev, err := tx.Event(seen.EventID)
			if err != nil {
				// Stored once and deleted since: the redelivery stays deleted.
				return IngestResult{}, nil
			}
			return IngestResult{Event: prev}, nil
		}
	}
	eff, err := tx.resolveSettings(dev)
	if err != nil {
		return IngestResult{}, err
	}
	if reason := EventSuppression(kind, eff); reason != "" {
		return IngestResult{Dropped: reason}, nil
	}
	e := &Event{
		IMEI: dev.IMEI, OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID, Type: kind.API,
		Time: in.Time.UTC().Truncate(time.Millisecond), Lat: in.Lat, Lon: in.Lon, Alt: in.Alt,
		Speed: in.Speed, Accuracy: in.Accuracy, Severity: in.Severity, Status: EventStatusNew,
		Metadata: in.Metadata, GeoFenceID: in.GeoFenceID, GeoFencePath: in.GeoFencePath,
		SDCard: in.SDCard, DriverID: in.DriverID, CameraID: in.CameraID, DeviceEventID: in.DeviceEventID,
		Ownership: dev.Ownership,
	}
	if e.Severity == 0 {
		e.Severity = DefaultSeverity(kind.API)
	}
	switch {
	case !GPSAllowed(eff):
		// GPS is off: the event is stored without a location, whatever the
		// device sent.
		e.Lat, e.Lon, e.Alt, e.Accuracy = 0, 0, 0, 0
	case in.PositionFromGPS:
		if fix, ok, err := tx.positionAt(dev, e.Time); err != nil {
			return IngestResult{}, err
		} else if ok {
			e.Lat, e.Lon, e.Alt, e.Speed, e.Accuracy = fix.Lat, fix.Lon, fix.Alt, fix.Speed, fix.Accuracy
		}
	}
	switch {
	case kind.API == EventQRCode:
		e.Metadata = in.QRCode
	case len(in.Samples) > 0:
		raw, err := json.Marshal(in.Samples)
		if err != nil {
			return IngestResult{}, fmt.Errorf("store: encode event samples: %w", err)
		}
		e.Metadata = string(raw)
	}
	if kind.API == EventGeoFence {
		fence, found := findGeofence(eff.Geofences, in.GeoFenceID)
		if !found {
			return IngestResult{Dropped: DropUnknownGeofence}, nil
		}
		e.GeoFenceName = fence.Name
		if in.GeoFencePath == GeofenceEntered {
			allowed, err := tx.enteredAllowed(dev.IMEI, fence.ID, e.Time)
			if err != nil {
				return IngestResult{}, err
			}
			if !allowed {
				return IngestResult{Dropped: DropEnteredInside}, nil
			}
		}
	}
	e.Files = eventFiles(kind, eff, in.Files)
	if e.DriverID, err = eventDriver(tx, dev, in.DriverID, e.Time); err != nil {
		return IngestResult{}, err
	}
	if err := tx.storeEvent(e); err != nil {
		return IngestResult{}, err
	}
	if in.DeviceEventID != "" {
		seen := EventDeviceID{IMEI: dev.IMEI, DeviceEventID: in.DeviceEventID, EventID: e.ID, Ownership: e.Ownership}
		if err := tx.rec.EventDeviceIDs().Put(seen); err != nil {
			return IngestResult{}, err
		}
	}
	if err := tx.refEventMedia(e, in.MediaRequested); err != nil {
		return IngestResult{}, err
	}
	if kind.Beep {
		return IngestResult{Event: e, Created: true}, nil
	}
	// What the webhooks are told of, the recipients are e-mailed.
	if err := tx.queueEventMail(e, eff); err != nil {
		return IngestResult{}, err
	}
	fact, err := tx.eventFact(e)
	if err != nil {
		return IngestResult{}, err
	}
	return IngestResult{Event: e, Created: true}, tx.Emit(Message{Kind: MessageEvent, OrganizationID: dev.OrganizationID,
		PartnerID: dev.PartnerID, IMEI: dev.IMEI, Time: e.Time, Event: fact})
}

// eventFiles keeps the files an event of kind may carry: none for beeps and
// text-only kinds, none of a camera whose privacy settings block its media,
// each file once.
func eventFiles(kind EventKind, eff *Effective, files []EventFile) []EventFile {
	if !kind.HasMedia || kind.Beep {
		return nil
	}
	var out []EventFile
	seen := map[EventFile]bool{}
	for _, f := range files {
		if !MediaAllowed(eff, f.CameraID) || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
	}
	return out
}

// storeEvent stores e as a new event, created now, under the next id.
func (tx *Tx) storeEvent(e *Event) error {
	e.CreatedAt = tx.now
	return tx.rec.Events().Insert(e)
}

// putEvent stores a change of e that leaves what the event queries select
// on as it is (review, media notification).
func (tx *Tx) putEvent(e *Event) error { return tx.rec.Events().Update(e) }

// Event returns the event with id.
func (tx *Tx) Event(id int64) (*Event, error) { return tx.rec.Events().Get(id) }

// DeleteEvent removes an event, its index entries and its references to
// media; a media file shared with other events stays for them.
func (tx *Tx) DeleteEvent(id int64) (*Event, error) {
	e, err := tx.Event(id)
	if err != nil {
		return nil, err
	}
	if err := tx.rec.Events().Delete(e); err != nil {
		return nil, err
	}
	if err := tx.unrefEventMedia(e); err != nil {
		return nil, err
	}
	return e, tx.Audit(AuditChange{Action: "event.delete", EntityType: "event", EntityID: strconv.FormatInt(id, 10),
		OrganizationID: e.OrganizationID, PartnerID: e.PartnerID, Before: e})
}

// PurgeEvents deletes up to limit events of organization org with a time
// before before, oldest first, with their index entries and media
// references, and returns how many it deleted. Retention calls it in small
// batches; purged events are not audited one by one.
func (tx *Tx) PurgeEvents(org int64, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	doomed, err := tx.rec.Events().ByOrganizationBefore(org, before, limit)
	if err != nil {
		return 0, err
	}
	for i := range doomed {
		if err := tx.rec.Events().Delete(&doomed[i]); err != nil {
			return 0, err
		}
		if err := tx.unrefEventMedia(&doomed[i]); err != nil {
			return 0, err
		}
	}
	return len(doomed), nil
}

// EventReview changes an event's review state; nil members stay.
type EventReview struct {
	Status   *string
	Severity *int
	// Comment, when not empty, is added to the event's comments.
	Comment string
	// AudienceName and the actor's user say who comments: "partner" or "organization".
	AudienceName string
}

// ReviewEvent applies r to event id and audits the change.
func (tx *Tx) ReviewEvent(id int64, r EventReview) (*Event, error) {
	e, err := tx.Event(id)
	if err != nil {
		return nil, err
	}
	before := *e
	before.Comments = append([]EventComment(nil), e.Comments...)
	if r.Status != nil {
		if *r.Status != EventStatusNew && *r.Status != EventStatusResolved {
			return nil, Invalid("status", "must be new or resolved")
		}
		e.Status = *r.Status
	}
	if r.Severity != nil {
		if *r.Severity < 1 || *r.Severity > 3 {
			return nil, Invalid("severity", "must be 1, 2 or 3")
		}
		e.Severity = *r.Severity
	}
	if r.Comment != "" {
		cid, err := tx.rec.Events().NextCommentID()
		if err != nil {
			return nil, err
		}
		e.Comments = append(e.Comments, EventComment{ID: cid, Comment: r.Comment, CreatedByAudienceName: r.AudienceName,
			CreatedByID: tx.actor.UserID, CreatedByEmail: tx.actor.Email, CreatedAt: tx.now})
	}
	if err := tx.putEvent(e); err != nil {
		return nil, err
	}
	return e, tx.Audit(AuditChange{Action: "event.review", EntityType: "event", EntityID: strconv.FormatInt(id, 10),
		OrganizationID: e.OrganizationID, PartnerID: e.PartnerID, Before: before, After: e})
}

// purgeEvents deletes the events (and with the last reference their media)
// of each organization with a cutoff, one organization after the other;
// the resume position is the organization id, in decimal.
func purgeEvents(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	orgs := slices.Sorted(maps.Keys(cut))
	start := 0
	if from != nil {
		org, err := strconv.ParseInt(string(from), 10, 64)
		if err != nil {
			return 0, nil, fmt.Errorf("store: event purge resume position %q: %w", from, err)
		}
		start, _ = slices.BinarySearch(orgs, org)
	}
	deleted := 0
	for _, org := range orgs[start:] {
		n, err := tx.PurgeEvents(org, cut[org], limit-deleted)
		if err != nil {
			return 0, nil, err
		}
		if deleted += n; deleted >= limit {
			return deleted, strconv.AppendInt(nil, org, 10), nil
		}
	}
	return deleted, nil, nil
}
