package store

import (
	"maps"
	"strconv"
	"strings"
	"time"
)

// The organization album: the in-cabin snapshots of the organization's
// events since the album was enabled, each reviewed as showing a familiar
// or an unfamiliar driver, or pending review until someone does. The
// images are the event media the store already has; the album keeps only
// when it was enabled and the reviews. Disabling it deletes the reviews,
// which cannot be undone: enabled again, every image is pending review.

// Album image statuses.
const (
	AlbumPendingReview = "pendingReview"
	AlbumFamiliar      = "familiar"
	AlbumUnfamiliar    = "unfamiliar"
)

// Album is one organization's album: enabled since EnabledAt, with the
// status of each reviewed image by image id (AlbumImageID).
type Album struct {
	OrganizationID int64             `json:"organizationId"`
	EnabledAt      time.Time         `json:"enabledAt"`
	Statuses       map[string]string `json:"statuses,omitempty"`
}

// Status is the review status of image id.
func (a *Album) Status(id string) string {
	if s, ok := a.Statuses[id]; ok {
		return s
	}
	return AlbumPendingReview
}

// AlbumImageID names the in-cabin file fileID of device imei as an album
// image; ParseAlbumImageID reads it back.
func AlbumImageID(imei, fileID string) string { return imei + "." + fileID }

// ParseAlbumImageID splits an album image id into the device's IMEI and
// the file id; ok is false for a string that is not one.
func ParseAlbumImageID(id string) (imei, fileID string, ok bool) {
	imei, fileID, found := strings.Cut(id, ".")
	return imei, fileID, found && ValidIMEI(imei) && ValidFileID(fileID)
}

// OrgAlbum returns organization orgID's album; ErrNotFound while it is disabled.
func (tx *Tx) OrgAlbum(orgID int64) (*Album, error) {
	a, err := tx.rec.Albums().Get(orgID)
	if err != nil {
		return nil, missing(err, "album of organization %d", orgID)
	}
	return a, nil
}

// SetAlbumEnabled enables organization orgID's album from now, or disables
// it and deletes its reviews. Enabling an enabled album changes nothing.
// The change is audited (organization.album).
func (tx *Tx) SetAlbumEnabled(orgID int64, enabled bool) error {
	o, err := tx.Organization(orgID)
	if err != nil {
		return err
	}
	prev, err := tx.rec.Albums().Get(orgID)
	switch {
	case err != nil && !isNotFound(err):
		return err
	case enabled && err == nil, !enabled && err != nil:
		return nil
	case enabled:
		if err := tx.rec.Albums().Put(&Album{OrganizationID: orgID, EnabledAt: tx.now}); err != nil {
			return err
		}
	default:
		if err := tx.rec.Albums().Delete(orgID); err != nil {
			return err
		}
	}
	status := map[bool]string{true: "enabled", false: "disabled"}
	before := "disabled"
	if prev != nil {
		before = "enabled"
	}
	return tx.Audit(AuditChange{Action: "organization.album", EntityType: "organization", EntityID: strconv.FormatInt(orgID, 10),
		OrganizationID: orgID, PartnerID: o.PartnerID, Before: map[string]string{"albumStatus": before},
		After: map[string]string{"albumStatus": status[enabled]}})
}

// SetAlbumImageStatus records the review of image id in organization
// orgID's album: familiar or unfamiliar (pending review is only where an
// image starts). The album must be enabled; the caller checks that the
// image is one of the album's. The change is audited (organization.album.image).
func (tx *Tx) SetAlbumImageStatus(orgID int64, id, status string) error {
	if status != AlbumFamiliar && status != AlbumUnfamiliar {
		return Invalid("status", "must be familiar or unfamiliar")
	}
	a, err := tx.OrgAlbum(orgID)
	if err != nil {
		return err
	}
	before := a.Status(id)
	next := *a
	next.Statuses = maps.Clone(a.Statuses)
	if next.Statuses == nil {
		next.Statuses = map[string]string{}
	}
	next.Statuses[id] = status
	if err := tx.rec.Albums().Put(&next); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "organization.album.image", EntityType: "organization",
		EntityID: strconv.FormatInt(orgID, 10), OrganizationID: orgID,
		Before: map[string]string{"imageId": id, "status": before}, After: map[string]string{"imageId": id, "status": status}})
}

// AlbumCamera is the camera whose snapshots make the album: the in-cabin one.
const AlbumCamera = 2

// AlbumImage is one image of an album: the in-cabin snapshot of an event's
// file (of a video, its middle frame), which is in the cloud.
type AlbumImage struct {
	ID  string
	Ref MediaRef
	// EventID and Time are those of the newest event with the file.
	EventID int64
	Time    time.Time
	Status  string
}

// AlbumImages lists the images of organization orgID's album among the
// events q selects from the album's enabling on, newest first, each once.
// ErrNotFound while the album is disabled.
func (tx *Tx) AlbumImages(orgID int64, q EventQuery) ([]AlbumImage, error) {
	a, err := tx.OrgAlbum(orgID)
	if err != nil {
		return nil, err
	}
	if q.Start.Before(a.EnabledAt) {
		q.Start = a.EnabledAt
	}
	events, _, err := tx.OrgEvents(orgID, q, Page{})
	if err != nil {
		return nil, err
	}
	var out []AlbumImage
	seen := map[string]bool{}
	for i := len(events) - 1; i >= 0; i-- {
		e := &events[i]
		for _, f := range e.Files {
			id := AlbumImageID(e.IMEI, f.FileID)
			if f.CameraID != AlbumCamera || seen[id] {
				continue
			}
			ref := MediaRef{IMEI: e.IMEI, CameraID: AlbumCamera, FileType: FileSnapshot, FileID: f.FileID}
			m, err := tx.MediaFile(ref)
			switch {
			case isNotFound(err):
				continue
			case err != nil:
				return nil, err
			case m.State != MediaUploaded:
				continue
			}
			seen[id] = true
			out = append(out, AlbumImage{ID: id, Ref: ref, EventID: e.ID, Time: e.Time, Status: a.Status(id)})
		}
	}
	return out, nil
}

// AlbumHasImage reports whether image id is in organization orgID's
// album: an in-cabin file of an event of the organization from the album's
// enabling on, of a device of partnerID when it is not 0.
func (tx *Tx) AlbumHasImage(orgID int64, id string, partnerID int64) (bool, error) {
	a, err := tx.OrgAlbum(orgID)
	if err != nil {
		return false, err
	}
	imei, fileID, ok := ParseAlbumImageID(id)
	if !ok {
		return false, nil
	}
	ref := MediaRef{IMEI: imei, CameraID: AlbumCamera, FileType: FileSnapshot, FileID: fileID}
	ids, err := tx.rec.MediaEventRefs().EventIDs(ref)
	if err != nil {
		return false, err
	}
	for _, eid := range ids {
		e, err := tx.Event(eid)
		if err == nil && e.OrganizationID == orgID && !e.Time.Before(a.EnabledAt) && (partnerID == 0 || e.PartnerID == partnerID) {
			return true, nil
		}
	}
	return false, nil
}
