package cloudapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// cameraLinkDTO is the link to one camera's file, or why there is none.
type cameraLinkDTO struct {
	CameraID int    `json:"cameraId"`
	URL      string `json:"url,omitempty"`
	Error    string `json:"error,omitempty"`
	// ExpiresAt is when URL stops working.
	ExpiresAt string `json:"expiresAt,omitempty"`
}

// fileLinksDTO answers GET /devices/{imei}/event-file-links.
type fileLinksDTO struct {
	URLs []cameraLinkDTO `json:"urls"`
}

// eventFileLinks handles GET /devices/{imei}/event-file-links: the links to
// the files of several cameras at once, named either by eventId (every
// file of the event, narrowed by fileType and cameraIds when given) or by
// fileId, fileType and cameraIds as in event-file-link. A camera whose file
// has no link yet carries the reason in error; when no camera has a link
// the answer is that reason itself (404). fleetcam keeps the files as the
// devices recorded them: a concealed (blurred) version does not exist.
func (s *Server) eventFileLinks(c *gin.Context) error {
	if v, given := c.GetQuery("conceal"); given {
		switch v {
		case "false":
		case "true":
			return badField("conceal", "cannot be true: fleetcam keeps event files as recorded, without a blurred version")
		default:
			return badField("conceal", "must be true or false")
		}
	}
	fileType := c.Query("fileType")
	if fileType != "" && fileType != store.FileVideo && fileType != store.FileSnapshot {
		return badField("fileType", "must be video or snapshot")
	}
	cameras, err := queryCameraIDs(c)
	if err != nil {
		return err
	}
	var eventID int64
	if v, given := c.GetQuery("eventId"); given {
		if eventID, err = strconv.ParseInt(v, 10, 64); err != nil || eventID < 1 {
			return badField("eventId", "must be a positive integer, the id of an event of the device")
		}
	}
	fileID := c.Query("fileId")
	if eventID == 0 {
		switch {
		case !store.ValidFileID(fileID):
			return badField("fileId", "is required without eventId: the file id of the event (1 to 128 letters, digits, '.', '_' or '-')")
		case fileType == "":
			return badField("fileType", "is required without eventId: video or snapshot")
		case cameras == nil:
			return badField("cameraIds", "is required without eventId: camera ids separated by commas, such as 1,2")
		}
	}
	var out fileLinksDTO
	err = s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		refs, err := linkRefs(tx, d, eventID, fileID, fileType, cameras)
		if err != nil {
			return err
		}
		var first error
		linked := false
		for _, ref := range refs {
			link, err := s.eventFileURL(tx, d, ref)
			if err != nil {
				if first == nil {
					first = err
				}
				out.URLs = append(out.URLs, cameraLinkDTO{CameraID: ref.CameraID, Error: statusOf(err).Message})
				continue
			}
			linked = true
			out.URLs = append(out.URLs, cameraLinkDTO{CameraID: ref.CameraID, URL: link.URL, ExpiresAt: link.ExpiresAt})
		}
		if !linked {
			return first
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// linkRefs names the files event-file-links answers for: those of event
// eventID when it is given, else fileID of fileType on each camera.
func linkRefs(tx *store.Tx, d *store.Device, eventID int64, fileID, fileType string, cameras []int) ([]store.MediaRef, error) {
	if eventID == 0 {
		refs := make([]store.MediaRef, 0, len(cameras))
		for _, cam := range cameras {
			refs = append(refs, store.MediaRef{IMEI: d.IMEI, FileID: fileID, FileType: fileType, CameraID: cam})
		}
		return refs, nil
	}
	e, err := tx.Event(eventID)
	if err != nil || !d.HoldsEvent(e) {
		return nil, notFound("event " + strconv.FormatInt(eventID, 10) + " of device " + d.IMEI)
	}
	var refs []store.MediaRef
	for _, f := range e.Files {
		// A video's snapshot is its middle frame.
		typ := f.FileType
		if fileType == store.FileSnapshot && typ == store.FileVideo {
			typ = store.FileSnapshot
		}
		if fileType != "" && typ != fileType || cameras != nil && !slices.Contains(cameras, f.CameraID) {
			continue
		}
		refs = append(refs, store.MediaRef{IMEI: d.IMEI, FileID: f.FileID, FileType: typ, CameraID: f.CameraID})
	}
	if len(refs) == 0 {
		return nil, apiErr(http.StatusNotFound, nameNotFound, "event %d of device %s has no file of the cameras and type asked for", eventID, d.IMEI)
	}
	return refs, nil
}

// queryCameraIDs reads cameraIds, camera ids separated by commas; nil when
// it is not given.
func queryCameraIDs(c *gin.Context) ([]int, error) {
	v, given := c.GetQuery("cameraIds")
	if !given {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(v, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || !store.ValidCameraID(id) {
			return nil, badField("cameraIds", "must be camera ids separated by commas; each "+store.RuleCameraID)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}
