package cloudapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// The organization album (store/album.go): the in-cabin snapshots of the
// organization's events since the album was enabled, each reviewed as a
// familiar or unfamiliar driver or pending review. fleetcam does not
// recognise faces itself: every image starts pending review.

// Album pages: 100 images unless limit says otherwise, at most 2000.
const (
	albumDefaultLimit = 100
	albumMaxLimit     = 2000
)

// albumDisabled is the 404 of an album call while the album is disabled.
func albumDisabled(orgID int64) error {
	return apiErr(http.StatusNotFound, nameNotFound,
		"the album of organization %d is disabled; enable it with POST /v2/organization-album/%d/album/config", orgID, orgID)
}

// albumImageDTO is one image of GET /organization-album/{orgId}/album.
type albumImageDTO struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	ExpiresAt string `json:"expiresAt"`
	Status    string `json:"status"`
	IMEI      string `json:"imei"`
	EventID   int64  `json:"eventId"`
	CreatedAt string `json:"createdAt"`
}

// albumStatusCount counts an album's images by status.
type albumStatusCount struct {
	PendingReview int `json:"pendingReview"`
	Familiar      int `json:"familiar"`
	Unfamiliar    int `json:"unfamiliar"`
}

// albumMetadata is the metadata of an album page.
type albumMetadata struct {
	ImageStatusCount albumStatusCount `json:"imageStatusCount"`
	Pagination       Metadata         `json:"pagination"`
}

// albumPage answers GET /organization-album/{orgId}/album.
type albumPage struct {
	Data      []albumImageDTO `json:"data"`
	Metadata  albumMetadata   `json:"metadata"`
	RequestID string          `json:"requestId"`
}

// albumQuery reads the filters of GET /organization-album/{orgId}/album:
// the page, the status, and the span from startTime to endTime (now when
// left out), at most 31 days; startTime left out is 31 days before the end.
func (s *Server) albumQuery(c *gin.Context) (p store.Page, status string, start, end time.Time, err error) {
	q := c.Request.URL.Query()
	if p, err = s.pageFrom("", c.Query("offset"), false, q.Has("offset")); err != nil {
		return
	}
	p.Limit = albumDefaultLimit
	if q.Has("limit") {
		n, convErr := strconv.Atoi(c.Query("limit"))
		if convErr != nil || n < 1 || n > albumMaxLimit {
			err = badField("limit", "must be an integer from 1 to 2000")
			return
		}
		p.Limit = n
	}
	if status, err = queryEnum(c, "status", store.AlbumFamiliar, store.AlbumUnfamiliar, store.AlbumPendingReview); err != nil {
		return
	}
	if start, err = optionalQueryTime(c, "startTime"); err != nil {
		return
	}
	if end, err = optionalQueryTime(c, "endTime"); err != nil {
		return
	}
	if end.IsZero() {
		end = s.now().UTC()
	}
	switch {
	case start.IsZero():
		start = end.Add(-maxTimeSpan)
	case end.Before(start):
		err = badField("endTime", "must not be before startTime")
	case end.Sub(start) > maxTimeSpan:
		err = badField("startTime", "must be at most 31 days before endTime (or now)")
	}
	return
}

// albumImages handles GET /organization-album/{orgId}/album: the album's
// images newest first, with temporary links, filtered by device, span and
// status; imageStatusCount counts the images of the device and span by
// status.
func (s *Server) albumImages(c *gin.Context) error {
	p, status, start, end, err := s.albumQuery(c)
	if err != nil {
		return err
	}
	var images []store.AlbumImage
	err = s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		q := store.EventQuery{Start: start, End: end}
		if pr := principal(c); pr.IsPartner() {
			q.PartnerID = pr.PartnerID
		}
		if imei := c.Query("imei"); imei != "" {
			d, err := s.deviceByIMEI(c, tx, imei)
			if err != nil || d.OrganizationID != o.ID {
				return notFound("device " + imei + " of organization " + strconv.FormatInt(o.ID, 10))
			}
			q.IMEIs = map[string]bool{imei: true}
		}
		images, err = tx.AlbumImages(o.ID, q)
		if errors.Is(err, store.ErrNotFound) {
			return albumDisabled(o.ID)
		}
		return err
	})
	if err != nil {
		return err
	}
	out := albumPage{Data: []albumImageDTO{}, RequestID: requestID(c)}
	var kept []store.AlbumImage
	for _, img := range images {
		switch img.Status {
		case store.AlbumFamiliar:
			out.Metadata.ImageStatusCount.Familiar++
		case store.AlbumUnfamiliar:
			out.Metadata.ImageStatusCount.Unfamiliar++
		default:
			out.Metadata.ImageStatusCount.PendingReview++
		}
		if status == "" || img.Status == status {
			kept = append(kept, img)
		}
	}
	page, total := store.Paginate(kept, p)
	for _, img := range page {
		u, exp := s.signedURL(mediaPath("files", img.Ref), s.cfg.Media.LinkTTL)
		out.Data = append(out.Data, albumImageDTO{ID: img.ID, URL: u, ExpiresAt: isoTime(exp), Status: img.Status,
			IMEI: img.Ref.IMEI, EventID: img.EventID, CreatedAt: isoTime(img.Time)})
	}
	out.Metadata.Pagination = Metadata{Count: total, Limit: p.Limit, Offset: p.Offset}
	return okBody(c, out)
}

// albumConfigDTO is the album's switch.
type albumConfigDTO struct {
	AlbumStatus string `json:"albumStatus"`
	// EnabledAt is when the album was enabled; absent while it is disabled.
	EnabledAt string `json:"enabledAt,omitempty"`
	RequestID string `json:"requestId"`
}

// getAlbumConfig handles GET /organization-album/{orgId}/album/config.
func (s *Server) getAlbumConfig(c *gin.Context) error {
	out := albumConfigDTO{AlbumStatus: "disabled"}
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		a, err := tx.OrgAlbum(o.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil
		case err != nil:
			return err
		}
		out.AlbumStatus, out.EnabledAt = "enabled", isoTime(a.EnabledAt)
		return nil
	})
	if err != nil {
		return err
	}
	out.RequestID = requestID(c)
	return okBody(c, out)
}

// postAlbumConfig handles POST /organization-album/{orgId}/album/config:
// albumStatus enabled starts the album from now (an enabled album stays as
// it is); disabled deletes it with every review, which cannot be undone.
func (s *Server) postAlbumConfig(c *gin.Context) error {
	var req struct {
		AlbumStatus string `json:"albumStatus"`
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.AlbumStatus != "enabled" && req.AlbumStatus != "disabled" {
		return badField("albumStatus", "is required: enabled or disabled")
	}
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		return tx.SetAlbumEnabled(o.ID, req.AlbumStatus == "enabled")
	})
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"requestId": requestID(c)})
}

// postAlbumImageStatus handles POST /organization-album/{orgId}/album/status:
// the review of one image of the album, familiar or unfamiliar (pending
// review is where an image starts, not a review). An image that is not in
// the album, or of a device the caller cannot see, is 404.
func (s *Server) postAlbumImageStatus(c *gin.Context) error {
	var req struct {
		Status  string `json:"status"`
		ImageID string `json:"imageId"`
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	switch {
	case req.Status != store.AlbumFamiliar && req.Status != store.AlbumUnfamiliar:
		return badField("status", "is required: familiar or unfamiliar (pendingReview cannot be set)")
	case req.ImageID == "":
		return badField("imageId", "is required: the id of an image of GET /v2/organization-album/{orgId}/album")
	}
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		var partner int64
		if pr := principal(c); pr.IsPartner() {
			partner = pr.PartnerID
		}
		found, err := tx.AlbumHasImage(o.ID, req.ImageID, partner)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return albumDisabled(o.ID)
		case err != nil:
			return err
		case !found:
			return notFound("image " + quoteShort(req.ImageID) + " in the album of organization " + strconv.FormatInt(o.ID, 10))
		}
		return tx.SetAlbumImageStatus(o.ID, req.ImageID, req.Status)
	})
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"requestId": requestID(c)})
}
