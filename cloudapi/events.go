package cloudapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// maxEventSpan is the longest start-to-end window of an event query.
const maxEventSpan = 31 * 24 * time.Hour

// eventFile is a file of an event in the API form.
type eventFile struct {
	CameraID       int    `json:"cameraId"`
	FileID         string `json:"fileId"`
	FileType       string `json:"fileType"`
	MediaAvailable bool   `json:"mediaAvailable"`
}

// eventCommentAuthor is who wrote a comment.
type eventCommentAuthor struct {
	ID    int64  `json:"id"`
	Email string `json:"email,omitempty"`
}

// eventComment is a review comment in the API form.
type eventComment struct {
	ID                    int64              `json:"id"`
	Comment               string             `json:"comment"`
	CreatedByAudienceName string             `json:"createdByAudienceName"`
	CreatedByID           int64              `json:"createdById"`
	CreatedBy             eventCommentAuthor `json:"createdBy"`
	CreatedAt             string             `json:"createdAt"`
}

// eventView is an event in the API form.
type eventView struct {
	ID   int64  `json:"id"`
	IMEI string `json:"imei"`
	// DeviceName is set in organization event lists, next to the IMEI.
	DeviceName    string            `json:"deviceName,omitempty"`
	EventType     string            `json:"eventType"`
	Time          string            `json:"time"`
	Lat           float64           `json:"lat"`
	Lon           float64           `json:"lon"`
	Speed         float64           `json:"speed"`
	Accuracy      float64           `json:"accuracy"`
	Status        string            `json:"status"`
	Severity      int               `json:"severity"`
	Metadata      string            `json:"metadata"`
	Uniqueness    string            `json:"uniqueness"`
	Files         []eventFile       `json:"files"`
	EventComments []eventComment    `json:"eventComments"`
	GeoFenceID    int64             `json:"geoFenceId,omitempty"`
	GeoFencePath  string            `json:"geoFencePath,omitempty"`
	GeoFenceName  string            `json:"geoFenceName,omitempty"`
	SDCard        *store.SDCardInfo `json:"sdCard,omitempty"`
	DriverID      int64             `json:"driverId,omitempty"`
	CameraID      int               `json:"cameraId,omitempty"`
}

// viewEvent renders e in the API form.
func viewEvent(tx *store.Tx, e *store.Event) (eventView, error) {
	avail, err := tx.EventMediaAvailable(e)
	if err != nil {
		return eventView{}, err
	}
	return eventViewOf(e, avail), nil
}

// viewEvents renders a page of events in the API form, reading whether
// their files are in the cloud in one lookup for the page.
func viewEvents(tx *store.Tx, events []*store.Event) ([]eventView, error) {
	avail, err := tx.EventsMediaAvailable(events)
	if err != nil {
		return nil, err
	}
	out := make([]eventView, len(events))
	for i, e := range events {
		out[i] = eventViewOf(e, avail[i])
	}
	return out, nil
}

// eventViewOf renders e in the API form, avail saying for each of its
// files whether its bytes are in the cloud.
func eventViewOf(e *store.Event, avail []bool) eventView {
	v := eventView{ID: e.ID, IMEI: e.IMEI, EventType: e.Type, Time: isoTime(e.Time), Lat: e.Lat, Lon: e.Lon,
		Speed: e.Speed, Accuracy: e.Accuracy, Status: e.Status, Severity: e.Severity, Metadata: e.Metadata,
		Uniqueness: e.IMEI + "_" + e.Type + "_" + strconv.FormatInt(e.Time.Unix(), 10),
		Files:      []eventFile{}, EventComments: []eventComment{}, GeoFenceID: e.GeoFenceID,
		GeoFencePath: e.GeoFencePath, GeoFenceName: e.GeoFenceName, SDCard: e.SDCard, DriverID: e.DriverID, CameraID: e.CameraID}
	for i, f := range e.Files {
		v.Files = append(v.Files, eventFile{CameraID: f.CameraID, FileID: f.FileID, FileType: f.FileType, MediaAvailable: avail[i]})
	}
	for _, c := range e.Comments {
		v.EventComments = append(v.EventComments, eventComment{ID: c.ID, Comment: c.Comment,
			CreatedByAudienceName: store.AudienceShown(c.CreatedByAudienceName), CreatedByID: c.CreatedByID,
			CreatedBy: eventCommentAuthor{ID: c.CreatedByID, Email: c.CreatedByEmail}, CreatedAt: isoTime(c.CreatedAt)})
	}
	return v
}

// eventWindow validates a start and end of an event query: both required,
// end not before start, and at most 31 days apart.
func eventWindow(start, end string) (time.Time, time.Time, error) {
	s, err := parseAPITime("start", start)
	if err != nil {
		return s, s, err
	}
	e, err := parseAPITime("end", end)
	if err != nil {
		return s, e, err
	}
	if err := checkOrder(s, e); err != nil {
		return s, e, err
	}
	switch {
	case e.Sub(s) > maxEventSpan:
		return s, e, badField("end", fmt.Sprintf("must be at most 31 days after start (the span is %s)", spanText(e.Sub(s))))
	}
	return s, e, nil
}

func spanText(d time.Duration) string {
	days := d / (24 * time.Hour)
	rest := d - days*24*time.Hour
	if rest == 0 {
		return fmt.Sprintf("%d days", days)
	}
	return fmt.Sprintf("%d days %s", days, rest)
}

// listDeviceEvents handles GET /devices/{imei}/events: one device's events
// from start to end (at most 31 days), oldest first, paginated.
func (s *Server) listDeviceEvents(c *gin.Context) error {
	p, err := s.page(c)
	if err != nil {
		return err
	}
	start, end, err := eventWindow(c.Query("start"), c.Query("end"))
	if err != nil {
		return err
	}
	q := store.EventQuery{Start: start, End: end}
	if q.Status, err = queryEnum(c, "status", store.EventStatusNew, store.EventStatusResolved); err != nil {
		return err
	}
	var out []eventView
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		events, n, err := tx.QueryDeviceEvents(d, q, p)
		if err != nil {
			return err
		}
		total = n
		page := make([]*store.Event, len(events))
		for i := range events {
			page[i] = &events[i]
		}
		out, err = viewEvents(tx, page)
		return err
	})
	if err != nil {
		return err
	}
	return okPage(c, out, total, p)
}

// orgEventsRequest is the body of POST /organizations/{orgId}/events.
type orgEventsRequest struct {
	Offset     *int     `json:"offset"`
	Limit      *int     `json:"limit"`
	Start      string   `json:"start"`
	End        string   `json:"end"`
	EventTypes []string `json:"eventTypes"`
}

// listOrganizationEvents handles POST /organizations/{orgId}/events: the
// events of the organization's devices the caller may see, from start to
// end (at most 31 days), oldest first, optionally of the named types.
// Beep events come only when named or when no types are named. The
// members may also be given as query parameters, as older clients do.
func (s *Server) listOrganizationEvents(c *gin.Context) error {
	var req orgEventsRequest
	if err := decodeOptional(c, &req); err != nil {
		return err
	}
	query := c.Request.URL.Query()
	if req.Start == "" {
		req.Start = query.Get("start")
	}
	if req.End == "" {
		req.End = query.Get("end")
	}
	var p store.Page
	var err error
	if req.Limit != nil || req.Offset != nil {
		p, err = s.checkPage(req.Limit, req.Offset)
	} else {
		p, err = s.page(c)
	}
	if err != nil {
		return err
	}
	start, end, err := eventWindow(req.Start, req.End)
	if err != nil {
		return err
	}
	q := store.EventQuery{Start: start, End: end}
	if len(req.EventTypes) > 0 {
		q.Types = map[string]bool{}
		for i, name := range req.EventTypes {
			k, ok := store.LookupEvent(name)
			if !ok {
				return badField(fmt.Sprintf("eventTypes[%d]", i), fmt.Sprintf("must be an event type in API syntax; %q is not one", name))
			}
			q.Types[k.API] = true
		}
	}
	pr := principal(c)
	var out []eventView
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		f := deviceFilter(pr, o.ID)
		q.PartnerID = f.PartnerID
		if f.IMEI != "" || f.GroupID != 0 {
			q.Devices = &f
		}
		events, n, err := tx.OrgEventList(o.ID, q, p)
		if err != nil {
			return err
		}
		total = n
		page := make([]*store.Event, len(events))
		for i := range events {
			page[i] = &events[i].Event
		}
		if out, err = viewEvents(tx, page); err != nil {
			return err
		}
		for i := range out {
			out[i].DeviceName = events[i].DeviceName
		}
		return nil
	})
	if err != nil {
		return err
	}
	return okPage(c, out, total, p)
}

// decodeOptional decodes a JSON body strictly like decode, but an absent
// or empty body leaves dst as it is.
func decodeOptional(c *gin.Context, dst any) error {
	if c.Request.Body == nil {
		return nil
	}
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return badRequest("the request body could not be read")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(raw))
	return decode(c, dst)
}

// deviceEvent returns the event of the path parameters imei and eventId
// when the caller may see the device; an event of another device, or one
// recorded for an earlier owner of the device, is 404.
func (s *Server) deviceEvent(c *gin.Context, tx *store.Tx) (*store.Event, error) {
	d, err := s.device(c, tx)
	if err != nil {
		return nil, err
	}
	id, err := pathInt(c, "eventId")
	if err != nil {
		return nil, err
	}
	e, err := tx.Event(id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err != nil || !d.HoldsEvent(e) {
		return nil, notFound("event " + c.Param("eventId") + " of device " + d.IMEI)
	}
	return e, nil
}

// getDeviceEvent handles GET /devices/{imei}/events/{eventId}.
func (s *Server) getDeviceEvent(c *gin.Context) error {
	var v eventView
	err := s.view(c, func(tx *store.Tx) error {
		e, err := s.deviceEvent(c, tx)
		if err != nil {
			return err
		}
		v, err = viewEvent(tx, e)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, v)
}

type deletedEvent struct {
	EventID int64  `json:"eventId"`
	Time    string `json:"time"`
}

// deleteDeviceEvent handles DELETE /devices/{imei}/events/{eventId}. Media
// shared with other events (virtual events of the same second) stays.
func (s *Server) deleteDeviceEvent(c *gin.Context) error {
	var out deletedEvent
	err := s.update(c, func(tx *store.Tx) error {
		e, err := s.deviceEvent(c, tx)
		if err != nil {
			return err
		}
		if _, err := tx.DeleteEvent(e.ID); err != nil {
			return err
		}
		tx.OnCommit(s.mediaSvc.wake)
		out = deletedEvent{EventID: e.ID, Time: isoTime(e.Time)}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// reviewRequest is the body of PATCH /devices/event-review-state.
type reviewRequest struct {
	EventIDs         []int64      `json:"eventIds"`
	EventReviewState *reviewState `json:"eventReviewState"`
}

type reviewState struct {
	Status   *string `json:"status"`
	Severity *int    `json:"severity"`
	Comment  *string `json:"comment"`
}

// maxReviewEvents bounds the events one review call changes.
const maxReviewEvents = 500

// reviewEvents handles PATCH /devices/event-review-state: sets the status
// and severity of events and adds a comment to each. Members left out stay.
func (s *Server) reviewEvents(c *gin.Context) error {
	var req reviewRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	st := req.EventReviewState
	switch {
	case len(req.EventIDs) == 0:
		return badField("eventIds", "is required: a non-empty array of event ids")
	case len(req.EventIDs) > maxReviewEvents:
		return badField("eventIds", fmt.Sprintf("may name at most %d events", maxReviewEvents))
	case st == nil:
		return badField("eventReviewState", "is required")
	case st.Status == nil && st.Severity == nil && st.Comment == nil:
		return badField("eventReviewState", "must set status, severity or comment")
	case st.Status != nil && *st.Status != store.EventStatusNew && *st.Status != store.EventStatusResolved:
		return badField("eventReviewState.status", "must be new or resolved")
	case st.Severity != nil && (*st.Severity < 1 || *st.Severity > 3):
		return badField("eventReviewState.severity", "must be 1 (high), 2 (medium) or 3 (low)")
	case st.Comment != nil && (strings.TrimSpace(*st.Comment) == "" || len([]rune(*st.Comment)) > 255):
		return badField("eventReviewState.comment", "must be 1 to 255 characters")
	}
	pr := principal(c)
	review := store.EventReview{Status: st.Status, Severity: st.Severity, AudienceName: "organization"}
	if pr.IsPartner() {
		review.AudienceName = "partner"
	}
	if st.Comment != nil {
		review.Comment = *st.Comment
	}
	var out []eventView
	err := s.update(c, func(tx *store.Tx) error {
		reviewed := make([]*store.Event, 0, len(req.EventIDs))
		for i, id := range req.EventIDs {
			missing := notFound(fmt.Sprintf("event %d (eventIds[%d])", id, i))
			e, err := tx.Event(id)
			if errors.Is(err, store.ErrNotFound) {
				return missing
			} else if err != nil {
				return err
			}
			if d, err := s.deviceByIMEI(c, tx, e.IMEI); err != nil || !d.HoldsEvent(e) {
				return missing
			}
			if e, err = tx.ReviewEvent(id, review); err != nil {
				return err
			}
			reviewed = append(reviewed, e)
		}
		var err error
		out, err = viewEvents(tx, reviewed)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}
