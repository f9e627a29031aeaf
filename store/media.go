package store

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Media files: the metadata of every camera file the cloud holds or expects,
// keyed by device, file type, camera and file id. The bytes live in a blob
// store outside the storage engine (see store/blob); a record names its
// current blob.
//
// Events reference files; a file shared by several events (virtual events
// of the same second) is counted, and it and its blob go when the last
// event referencing it is deleted. Blob deletion happens after the commit:
// a dropped blob key goes to the media trash, which the media service
// empties. Every upload gets a new blob key, so emptying the trash never
// races with a new upload of the same file.

// Media file states.
const (
	// MediaPending: the cloud has yet to ask the device for the file.
	MediaPending = "pending"
	// MediaRequested: the device was asked and the upload has not arrived.
	MediaRequested = "requested"
	// MediaUploaded: the bytes are in the cloud.
	MediaUploaded = "uploaded"
	// MediaUnreachable: the device was not connected when asked; the file
	// was never uploaded. A recording by timestamp can be requested instead.
	MediaUnreachable = "unreachable"
	// MediaFailed: the device could not provide the file.
	MediaFailed = "failed"
	// MediaPurged: the bytes were deleted after the organization's media
	// purge days for the file's camera; the events referencing it remain.
	MediaPurged = "purged"
)

// FileADAS is the file type of ADAS calibration images.
const FileADAS = "adas"

// MediaFile is the metadata of one camera file.
type MediaFile struct {
	IMEI     string `json:"imei"`
	CameraID int    `json:"cameraId"`
	FileType string `json:"fileType"`
	FileID   string `json:"fileId"`
	State    string `json:"state"`
	// Refs counts the events that reference the file.
	Refs int `json:"refs"`
	// Blob is the key of the bytes in the blob store; empty until uploaded.
	Blob        string    `json:"blob,omitempty"`
	Size        int64     `json:"size,omitempty"`
	ContentType string    `json:"contentType,omitempty"`
	Attempts    int       `json:"attempts,omitempty"`
	Error       string    `json:"error,omitempty"`
	RequestedAt time.Time `json:"requestedAt,omitzero"`
	UploadedAt  time.Time `json:"uploadedAt,omitzero"`
	UpdatedAt   time.Time `json:"updatedAt"`
	// RecordedAt is the time of the first event that referenced the file,
	// or when a file no event references was first stored; the media purge
	// counts the file's age from it.
	RecordedAt time.Time `json:"recordedAt,omitzero"`
	// Ownership is the device's ownership the file was recorded for
	// (ownership.go); the media purge applies its organization's days.
	Ownership int64 `json:"ownership,omitempty"`
	// ClipRequest is the virtual-event request whose clip the stored
	// bytes are (MediaUpload.ClipRequest); 0 for any other upload.
	ClipRequest int64 `json:"clipRequest,omitempty"`
}

// MediaRef names a media file.
type MediaRef struct {
	IMEI     string
	CameraID int
	FileType string
	FileID   string
}

// Key is the record key: imei/fileType/camera/fileId.
func (r MediaRef) Key() string {
	return r.IMEI + "/" + r.FileType + "/" + strconv.Itoa(r.CameraID) + "/" + r.FileID
}

// ParseMediaRef is the MediaRef whose Key is key; false when key is not one
// (an IMEI, a file type and a file id hold no "/").
func ParseMediaRef(key string) (MediaRef, bool) {
	parts := strings.SplitN(key, "/", 4)
	if len(parts) != 4 {
		return MediaRef{}, false
	}
	camera, err := strconv.Atoi(parts[2])
	if err != nil {
		return MediaRef{}, false
	}
	return MediaRef{IMEI: parts[0], FileType: parts[1], CameraID: camera, FileID: parts[3]}, true
}

// Ref returns the name of m.
func (m *MediaFile) Ref() MediaRef {
	return MediaRef{IMEI: m.IMEI, CameraID: m.CameraID, FileType: m.FileType, FileID: m.FileID}
}

// MediaFile returns the record of r.
func (tx *Tx) MediaFile(r MediaRef) (*MediaFile, error) {
	m, err := tx.rec.MediaFiles().Get(r)
	if err != nil {
		return nil, missing(err, "media file %s", r.Key())
	}
	return m, nil
}

// DeviceMediaFile returns the record of r, a file of d, when an event
// recorded for d's current ownership references it: a file of an earlier
// owner of the device is ErrNotFound.
func (tx *Tx) DeviceMediaFile(d *Device, r MediaRef) (*MediaFile, error) {
	r.IMEI = d.IMEI
	ids, err := tx.rec.MediaEventRefs().EventIDs(r)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if e, err := tx.Event(id); err == nil && d.HoldsEvent(e) {
			return tx.MediaFile(r)
		}
	}
	return nil, NotFound("media file %s of the device's current ownership", r.Key())
}

// putMedia writes m and keeps the pending index in step: every record not
// yet settled (uploaded or failed, and referenced) is in it.
func (tx *Tx) putMedia(m *MediaFile) error {
	m.UpdatedAt = tx.now
	return tx.rec.MediaFiles().Put(m, m.unsettled())
}

// MaxMediaAttempts bounds how often the cloud asks a device for one file.
const MaxMediaAttempts = 3

// unsettled reports whether the media service still has work on m.
func (m *MediaFile) unsettled() bool {
	switch {
	case m.Refs <= 0:
		return true
	case m.State == MediaPending, m.State == MediaRequested:
		return true
	case m.State == MediaUnreachable:
		return m.Attempts < MaxMediaAttempts
	}
	return false
}

// deleteMedia deletes m, takes it out of the age index and trashes its
// blob.
func (tx *Tx) deleteMedia(m *MediaFile) error {
	if err := tx.rec.MediaFiles().Delete(m.Ref()); err != nil {
		return err
	}
	if err := tx.rec.MediaAges().Delete(mediaAge(m)); err != nil {
		return err
	}
	return tx.trashBlob(m.Blob)
}

// trashBlob puts the blob key in the media trash; an empty key names no blob.
func (tx *Tx) trashBlob(key string) error {
	if key == "" {
		return nil
	}
	return tx.rec.MediaTrash().Add(key)
}

// eventMediaRefs lists the media an event references: its files, and for
// each video the snapshot of its middle frame under the same file id.
func eventMediaRefs(e *Event) []MediaRef {
	var out []MediaRef
	for _, f := range e.Files {
		out = append(out, MediaRef{IMEI: e.IMEI, CameraID: f.CameraID, FileType: f.FileType, FileID: f.FileID})
		if f.FileType == FileVideo {
			out = append(out, MediaRef{IMEI: e.IMEI, CameraID: f.CameraID, FileType: FileSnapshot, FileID: f.FileID})
		}
	}
	return out
}

// refEventMedia counts e's reference to each of its files, creating the
// records of new ones. requested marks the event's own files as already
// asked for (a virtual event's clip request); the rest wait for the media
// service to ask the device.
func (tx *Tx) refEventMedia(e *Event, requested bool) error {
	own := map[MediaRef]bool{}
	for _, f := range e.Files {
		own[MediaRef{IMEI: e.IMEI, CameraID: f.CameraID, FileType: f.FileType, FileID: f.FileID}] = true
	}
	for _, r := range eventMediaRefs(e) {
		m, err := tx.rec.MediaFiles().Get(r)
		if err != nil {
			m = &MediaFile{IMEI: r.IMEI, CameraID: r.CameraID, FileType: r.FileType, FileID: r.FileID, State: MediaPending,
				Ownership: e.Ownership}
			if err := tx.indexMediaAge(m, e.Time); err != nil {
				return err
			}
		} else if m.State == MediaPurged {
			// Asked for again by a new event: a new copy with its own age.
			m.State, m.Ownership = MediaPending, e.Ownership
			if err := tx.indexMediaAge(m, e.Time); err != nil {
				return err
			}
		}
		m.Refs++
		if requested && own[r] && m.State != MediaUploaded {
			m.State, m.RequestedAt, m.Error = MediaRequested, tx.now, ""
		}
		if err := tx.putMedia(m); err != nil {
			return err
		}
		if err := tx.rec.MediaEventRefs().Add(r, e.ID); err != nil {
			return err
		}
	}
	return nil
}

// unrefEventMedia drops e's references; files no event references any more
// are deleted and their blobs trashed.
func (tx *Tx) unrefEventMedia(e *Event) error {
	for _, r := range eventMediaRefs(e) {
		if err := tx.rec.MediaEventRefs().Delete(r, e.ID); err != nil {
			return err
		}
		m, err := tx.rec.MediaFiles().Get(r)
		if err != nil {
			continue
		}
		m.Refs--
		if m.Refs <= 0 {
			if err := tx.deleteMedia(m); err != nil {
				return err
			}
			continue
		}
		if err := tx.putMedia(m); err != nil {
			return err
		}
	}
	return nil
}

// EventMediaAvailable reports, per file of e, whether its bytes are in the cloud.
func (tx *Tx) EventMediaAvailable(e *Event) ([]bool, error) {
	avail, err := tx.EventsMediaAvailable([]*Event{e})
	if err != nil {
		return nil, err
	}
	return avail[0], nil
}

// EventsMediaAvailable reports, per file of each of events, whether its
// bytes are in the cloud: the files of a page of events are looked up at
// once when the engine can (MediaUploadedLookup). A file that is not
// stored is not available; an error reading one is returned.
func (tx *Tx) EventsMediaAvailable(events []*Event) ([][]bool, error) {
	var refs []MediaRef
	for _, e := range events {
		for _, f := range e.Files {
			refs = append(refs, MediaRef{IMEI: e.IMEI, CameraID: f.CameraID, FileType: f.FileType, FileID: f.FileID})
		}
	}
	uploaded, err := tx.mediaUploaded(refs)
	if err != nil {
		return nil, err
	}
	out := make([][]bool, len(events))
	for i, e := range events {
		out[i], uploaded = uploaded[:len(e.Files):len(e.Files)], uploaded[len(e.Files):]
	}
	return out, nil
}

// mediaUploaded reports, for each of refs, whether the file is stored and
// its bytes are uploaded.
func (tx *Tx) mediaUploaded(refs []MediaRef) ([]bool, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if l, ok := tx.rec.MediaFiles().(MediaUploadedLookup); ok {
		out, err := l.Uploaded(refs)
		if err == nil && len(out) != len(refs) {
			err = fmt.Errorf("store: %d media files told of for %d", len(out), len(refs))
		}
		return out, err
	}
	set := tx.rec.MediaFiles()
	out := make([]bool, len(refs))
	for i, r := range refs {
		m, err := set.Get(r)
		switch {
		case err == nil:
			out[i] = m.State == MediaUploaded
		case !isNotFound(err):
			return nil, missing(err, "media file %s", r.Key())
		}
	}
	return out, nil
}

// MediaUpload is a finished upload of a file's bytes.
type MediaUpload struct {
	Ref         MediaRef
	Blob        string
	Size        int64
	ContentType string
	// ClipRequest, when not 0, is the virtual-event request the upload
	// answers: requests are numbered in the order they were made, and the
	// clip of a later request replaces an uploaded file (the virtual events
	// of one second share the file of the last request), where an earlier
	// one's is refused.
	ClipRequest int64
}

// CompleteUpload records that u's bytes are stored under u.Blob. A file is
// written once: a second upload of an uploaded file is ErrConflict and
// changes nothing (the caller drops its blob), unless it is the clip of a
// later virtual-event request than the stored bytes (ClipRequest), which
// replaces them; a purged file may be
// uploaded again, as a new copy. A file no event references yet (an upload
// that overtook its event) is kept with no references until one does.
// Every event whose files are now all in the cloud gets its mediaAvailable
// message.
func (tx *Tx) CompleteUpload(u MediaUpload) (*MediaFile, error) {
	m, err := tx.MediaFile(u.Ref)
	if err != nil {
		r := u.Ref
		m = &MediaFile{IMEI: r.IMEI, CameraID: r.CameraID, FileType: r.FileType, FileID: r.FileID, Ownership: tx.ownershipNow(r.IMEI)}
		if err := tx.indexMediaAge(m, tx.now); err != nil {
			return nil, err
		}
	}
	if err := m.Replaceable(u.ClipRequest); err != nil {
		return nil, err
	}
	if err := tx.trashBlob(m.Blob); err != nil {
		return nil, err
	}
	m.Blob, m.Size, m.ContentType, m.State, m.UploadedAt, m.Error = u.Blob, u.Size, u.ContentType, MediaUploaded, tx.now, ""
	m.ClipRequest = u.ClipRequest
	if err := tx.putMedia(m); err != nil {
		return nil, err
	}
	return m, tx.notifyMediaAvailable(u.Ref)
}

// Replaceable reports, as an ErrConflict, why an upload answering the
// virtual-event request clip (0: none) may not store its bytes as m: m is
// uploaded, and the upload is not the clip of a later request.
func (m *MediaFile) Replaceable(clip int64) error {
	switch {
	case m.State != MediaUploaded || clip > m.ClipRequest:
		return nil
	case clip != 0 && clip < m.ClipRequest:
		return Conflict("media file %s holds the clip of a later request for its second, which replaces this one", m.FileID)
	}
	return Conflict("media file %s was uploaded already; a file is written once", m.FileID)
}

// notifyMediaAvailable emits the mediaAvailable message of every event
// referencing r whose files are all uploaded, once per event.
func (tx *Tx) notifyMediaAvailable(r MediaRef) error {
	ids, err := tx.rec.MediaEventRefs().EventIDs(r)
	if err != nil {
		return err
	}
	for _, id := range ids {
		e, err := tx.Event(id)
		if isNotFound(err) {
			continue
		} else if err != nil {
			return err
		}
		if e.MediaNotified || e.Kind().Beep {
			continue
		}
		avail, err := tx.EventMediaAvailable(e)
		if err != nil {
			return err
		}
		if !allTrue(avail) {
			continue
		}
		e.MediaNotified = true
		if err := tx.putEvent(e); err != nil {
			return err
		}
		fact, err := tx.eventFact(e)
		if err != nil {
			return err
		}
		if err := tx.Emit(Message{Kind: MessageMediaUploaded, OrganizationID: e.OrganizationID, PartnerID: e.PartnerID,
			IMEI: e.IMEI, Time: e.Time, Event: fact}); err != nil {
			return err
		}
	}
	return nil
}

// SetMediaState records what came of asking the device for a file; each
// call counts as one attempt. An upload that already arrived is not undone.
func (tx *Tx) SetMediaState(r MediaRef, state, errText string) error {
	m, err := tx.MediaFile(r)
	if err != nil {
		return err
	}
	if m.State == MediaUploaded {
		return nil
	}
	m.State, m.Error = state, errText
	m.Attempts++
	if state == MediaRequested {
		m.RequestedAt = tx.now
	}
	return tx.putMedia(m)
}

// UnsettledMedia returns up to limit records awaiting the media service:
// files to ask for, requests whose upload is overdue, unreachable files to
// retry and unreferenced uploads to purge.
func (tx *Tx) UnsettledMedia(limit int) ([]MediaFile, error) {
	return tx.rec.MediaFiles().Pending(limit)
}

// DropUnreferencedMedia deletes r when no event references it (an upload
// whose event was never created) and trashes its blob.
func (tx *Tx) DropUnreferencedMedia(r MediaRef) error {
	m, err := tx.MediaFile(r)
	if err != nil || m.Refs > 0 {
		return nil
	}
	return tx.deleteMedia(m)
}

// MediaTrash returns up to limit blob keys waiting to be deleted. When the
// engine cannot read the trash it returns none: the keys wait for the next
// time the media service empties it.
func (tx *Tx) MediaTrash(limit int) []string {
	out, err := tx.rec.MediaTrash().List(limit)
	if err != nil {
		return nil
	}
	return out
}

// ForgetTrash removes blob keys whose blobs are deleted.
func (tx *Tx) ForgetTrash(keys []string) error {
	for _, k := range keys {
		if err := tx.rec.MediaTrash().Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// ADASImages returns the ADAS calibration images of dev uploaded since it
// was added to its organization (an earlier owner's images are not its
// own), newest first; prefix, when set, keeps file ids starting with it
// (e.g. "auto-").
func (tx *Tx) ADASImages(dev *Device, prefix string, limit int) ([]MediaFile, error) {
	all, err := tx.rec.MediaFiles().OfType(dev.IMEI, FileADAS)
	if err != nil {
		return nil, err
	}
	var out []MediaFile
	for _, m := range all {
		if m.State == MediaUploaded && strings.HasPrefix(m.FileID, prefix) && !m.UploadedAt.Before(dev.CreatedAt) {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].UploadedAt.After(out[j].UploadedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ExpectADASImage records that the device was asked to upload an ADAS image.
func (tx *Tx) ExpectADASImage(r MediaRef) error {
	if r.FileType != FileADAS {
		return Invalid("", "media %s is not an ADAS image", r.Key())
	}
	m, err := tx.MediaFile(r)
	if err != nil {
		m = &MediaFile{IMEI: r.IMEI, CameraID: r.CameraID, FileType: r.FileType, FileID: r.FileID, Ownership: tx.ownershipNow(r.IMEI)}
		if err := tx.indexMediaAge(m, tx.now); err != nil {
			return err
		}
	}
	m.Refs, m.State, m.RequestedAt = 1, MediaRequested, tx.now
	return tx.putMedia(m)
}

// DeleteADASImages removes every ADAS calibration image of imei and audits it.
func (tx *Tx) DeleteADASImages(dev *Device) (int, error) {
	doomed, err := tx.rec.MediaFiles().OfType(dev.IMEI, FileADAS)
	if err != nil {
		return 0, err
	}
	for i := range doomed {
		if err := tx.deleteMedia(&doomed[i]); err != nil {
			return 0, err
		}
	}
	return len(doomed), tx.Audit(AuditChange{Action: "device.adasImages.delete", EntityType: "device", EntityID: dev.IMEI,
		OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID, After: map[string]int{"deleted": len(doomed)}})
}
