package cloudapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// nameLocked is the 423 a device's privacy settings give an operation they disable.
const nameLocked = "LockedError"

// locked is the answer when privacy settings disable what was asked.
func locked(format string, args ...any) *APIError {
	return apiErr(http.StatusLocked, nameLocked, format, args...)
}

// virtualEventRequest is the body of POST /devices/{imei}/virtual-event.
// Unknown members are refused.
type virtualEventRequest struct {
	Time            *string  `json:"time"`
	MediaType       *string  `json:"mediaType"`
	DurationSeconds *float64 `json:"durationSeconds"`
	Quality         *string  `json:"quality"`
	CameraID        *int     `json:"cameraId"`
	Metadata        *string  `json:"metadata"`
	VisualAlert     *bool    `json:"visualAlert"`
	AudioAlert      *bool    `json:"audioAlert"`
}

// virtualEvent is a validated virtual-event request.
type virtualEvent struct {
	time      time.Time
	mediaType string
	duration  int
	quality   string
	cameraID  int // 0: every camera
	metadata  string
	// strict: the caller named the recording (duration, quality or camera),
	// so a missing recording is an error rather than an event without media.
	strict bool
}

// nextClipRequest numbers a virtual-event clip request: microseconds of
// the server's clock, and above every number this server gave before, so
// that requests are numbered in the order they were made, across restarts
// and across the nodes of a cluster as far as their clocks agree.
func (s *Server) nextClipRequest() int64 {
	for {
		last := s.clipRequests.Load()
		next := max(s.now().UnixMicro(), last+1)
		if s.clipRequests.CompareAndSwap(last, next) {
			return next
		}
	}
}

// Virtual-event limits.
const (
	maxVirtualMetadata = 2000
	maxClockSkew       = time.Minute
)

func (s *Server) parseVirtualEvent(req virtualEventRequest) (virtualEvent, error) {
	v := virtualEvent{mediaType: store.FileVideo, duration: 10, quality: "standard"}
	if req.Time == nil {
		return v, badField("time", "is required (ISO 8601 date-time of the recording)")
	}
	t, err := parseAPITime("time", *req.Time)
	if err != nil {
		return v, err
	}
	if t.After(s.now().Add(maxClockSkew)) {
		return v, badField("time", "must not be in the future")
	}
	v.time = t
	if req.MediaType != nil {
		switch *req.MediaType {
		case "none", store.FileVideo, store.FileSnapshot:
			v.mediaType = *req.MediaType
		default:
			return v, badField("mediaType", "must be none, video or snapshot")
		}
	}
	if d := req.DurationSeconds; d != nil {
		if *d != math.Trunc(*d) || *d < 1 || *d > 86400 {
			return v, badField("durationSeconds", "must be a whole number of seconds from 1 to 86400")
		}
		v.duration = int(*d)
	}
	if q := req.Quality; q != nil {
		if *q != "standard" && *q != "high" {
			return v, badField("quality", "must be standard or high")
		}
		v.quality = *q
	}
	if cam := req.CameraID; cam != nil {
		if !store.ValidCameraID(*cam) {
			return v, badField("cameraId", store.RuleCameraID)
		}
		v.cameraID = *cam
	}
	if m := req.Metadata; m != nil {
		if len(*m) > maxVirtualMetadata {
			return v, badField("metadata", fmt.Sprintf("must be at most %d bytes", maxVirtualMetadata))
		}
		v.metadata = *m
	}
	v.strict = req.DurationSeconds != nil || req.Quality != nil || req.CameraID != nil
	return v, nil
}

// virtualEventResult is the answer of POST virtual-event; the reference
// contract types the event's id as a string there ("12"), while GET events
// gives the same id as a number.
type virtualEventResult struct {
	EventID int64             `json:"eventId,string"`
	Files   []store.EventFile `json:"files"`
}

// createVirtualEvent handles POST /devices/{imei}/virtual-event: an event
// at a moment of the recordings, with a video, a snapshot or no media.
//
// With only time and mediaType it never reports a missing recording: an
// event is created with the files the device has (possibly none). Naming
// the recording (durationSeconds, quality or cameraId) makes a missing
// recording 404 NoRecordingAvailableError. Media needs the device online
// (417). Requests for the same second share one file per camera, the clip
// of the last request (requestClips). Privacy settings that disable events
// answer 423 LockedError.
func (s *Server) createVirtualEvent(c *gin.Context) error {
	var req virtualEventRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	v, err := s.parseVirtualEvent(req)
	if err != nil {
		return err
	}
	if v.mediaType != "none" && principal(c).AccessLevel == store.AccessEditorWithoutMediaAccess {
		return forbidden("the editorWithoutMediaAccess access level has no access to media; use mediaType none")
	}
	var dev *store.Device
	var cameras []int
	err = s.view(c, func(tx *store.Tx) error {
		if dev, err = s.device(c, tx); err != nil {
			return err
		}
		if !v.time.After(dev.PreviousOwnerUntil) {
			return badField("time", fmt.Sprintf("must be after %s, when device %s left its previous organization: what it recorded before is not this organization's",
				isoTime(dev.PreviousOwnerUntil), dev.IMEI))
		}
		eff, err := tx.EffectiveSettings(dev.IMEI)
		if err != nil {
			return err
		}
		kind, _ := store.LookupEvent(store.EventVirtual)
		switch store.EventSuppression(kind, eff) {
		case "":
		case store.DropPrivacyEvents:
			return locked("the privacy settings of device %s disable events (privacy.allEventsEnabled is false); no virtual event can be created", dev.IMEI)
		case store.DropPrivacyMode:
			return locked("device %s is in privacy mode, which keeps virtual events off (privacy-config virtualEvent)", dev.IMEI)
		default:
			return locked("virtualEvent is disabled in the event settings of device %s", dev.IMEI)
		}
		if v.mediaType == "none" {
			return nil
		}
		if v.cameraID != 0 {
			if !store.MediaAllowed(eff, v.cameraID) {
				return locked("the privacy settings of device %s block the media of camera %d", dev.IMEI, v.cameraID)
			}
			cameras = []int{v.cameraID}
			return nil
		}
		for _, cam := range []int{1, 2} {
			if store.MediaAllowed(eff, cam) {
				cameras = append(cameras, cam)
			}
		}
		if len(cameras) == 0 {
			return locked("the privacy settings of device %s block the media of every camera", dev.IMEI)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var files []store.EventFile
	if v.mediaType != "none" {
		if files, err = s.requestClips(c, dev, v, cameras); err != nil {
			return err
		}
	}
	var e *store.Event
	err = s.update(c, func(tx *store.Tx) error {
		res, err := tx.IngestEvent(dev, store.EventInput{Type: store.EventVirtual, Time: v.time, Metadata: v.metadata,
			Files: files, MediaRequested: true, PositionFromGPS: true})
		if err != nil {
			return err
		}
		if res.Dropped != "" {
			return locked("the settings of device %s disable the event: %s", dev.IMEI, res.Dropped)
		}
		e = res.Event
		if len(files) > 0 {
			tx.OnCommit(s.mediaSvc.wake)
		}
		return tx.Audit(store.AuditChange{Action: "event.virtual.create", EntityType: "event",
			EntityID: strconv.FormatInt(e.ID, 10), OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID, After: e})
	})
	if err != nil {
		return err
	}
	if e.Files == nil {
		e.Files = []store.EventFile{}
	}
	return ok(c, virtualEventResult{EventID: e.ID, Files: e.Files})
}

// requestClips asks the device for the recording of each camera at v.time,
// uploaded to the file of that second, and returns the files it has. The
// events of one second share the file, which holds the clip of the last
// request: each request is numbered (nextClipRequest) and its upload URL
// carries the number, so that its clip replaces one of an earlier request
// and is refused after one of a later (store.MediaFile.Replaceable). A
// camera whose recording the device no longer has keeps the file an
// earlier request stored. A strict request with no recording is
// NoRecordingAvailableError.
func (s *Server) requestClips(c *gin.Context, dev *store.Device, v virtualEvent, cameras []int) ([]store.EventFile, error) {
	if s.commander == nil || !s.commander.Online(dev.IMEI) {
		return nil, fmt.Errorf("virtual event media of %s: %w", dev.IMEI, ErrDeviceOffline)
	}
	fileID := strconv.FormatInt(v.time.Unix(), 10)
	var files []store.EventFile
	for _, cam := range cameras {
		ref := store.MediaRef{IMEI: dev.IMEI, CameraID: cam, FileType: v.mediaType, FileID: fileID}
		u, exp := s.signedClipURL(mediaPath("upload", ref), s.cfg.Media.UploadTTL, s.nextClipRequest())
		args := protocol.ClipArgs{Time: v.time.Unix(), DurationSeconds: v.duration, CameraID: cam, MediaType: v.mediaType,
			Quality: v.quality, FileID: fileID, URL: u, Expires: exp.Unix()}
		raw, err := s.commander.Send(c.Request.Context(), dev.IMEI, protocol.CmdClip, args)
		if errors.Is(err, ErrDeviceOffline) || errors.Is(err, ErrCommandTimeout) || errors.Is(err, ErrDeviceUnreachable) {
			return nil, err
		}
		var res protocol.ClipResult
		available := err == nil && json.Unmarshal(raw, &res) == nil && res.Available
		if !available {
			err := s.view(c, func(tx *store.Tx) error {
				m, err := tx.MediaFile(ref)
				available = err == nil && m.State == store.MediaUploaded
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		if available {
			files = append(files, store.EventFile{CameraID: cam, FileID: fileID, FileType: v.mediaType})
		}
	}
	if len(files) == 0 && v.strict {
		which := "any camera"
		if v.cameraID != 0 {
			which = "camera " + strconv.Itoa(v.cameraID)
		}
		return nil, apiErr(http.StatusNotFound, NameNoRecordingAvailable,
			"device %s holds no recording of %s at %s", dev.IMEI, which, isoTime(v.time))
	}
	return files, nil
}
