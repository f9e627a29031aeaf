package bolt

import (
	"bytes"

	"github.com/fleetcam/fleetcam/store"
)

// mediaFiles are the media file records, JSON under MediaRef.Key
// (imei/fileType/camera/fileId), and the media_pending index: an empty
// value under the same key for each file the media service still has work
// on.
type mediaFiles struct{ t *tx }

// MediaFiles implements store.DeviceStateRecords.
func (t *tx) MediaFiles() store.MediaFileRecords { return mediaFiles{t} }

// Get implements store.MediaFileRecords.
func (r mediaFiles) Get(ref store.MediaRef) (*store.MediaFile, error) {
	return lookupJSON(r.t.bucket(bucketMedia), []byte(ref.Key()), store.MediaFile{})
}

// Put implements store.MediaFileRecords.
func (r mediaFiles) Put(m *store.MediaFile, pending bool) error {
	key := []byte(m.Ref().Key())
	if err := putJSON(r.t.bucket(bucketMedia), key, m); err != nil {
		return err
	}
	if pending {
		return r.t.bucket(bucketMediaPending).Put(key, nil)
	}
	return r.t.bucket(bucketMediaPending).Delete(key)
}

// Delete implements store.MediaFileRecords: the file's event references
// are one range of the media_events bucket.
func (r mediaFiles) Delete(ref store.MediaRef) error {
	key := []byte(ref.Key())
	if err := r.t.bucket(bucketMedia).Delete(key); err != nil {
		return err
	}
	if err := r.t.bucket(bucketMediaPending).Delete(key); err != nil {
		return err
	}
	return deletePrefix(r.t.bucket(bucketMediaEvents), append(key, 0))
}

// Pending implements store.MediaFileRecords.
func (r mediaFiles) Pending(limit int) ([]store.MediaFile, error) {
	var out []store.MediaFile
	files := r.t.bucket(bucketMedia)
	c := r.t.bucket(bucketMediaPending).Cursor()
	for k, _ := c.First(); k != nil && (limit <= 0 || len(out) < limit); k, _ = c.Next() {
		var m store.MediaFile
		if err := getJSON(files, k, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// OfType implements store.MediaFileRecords: the keys of a device's files of
// one type are one range.
func (r mediaFiles) OfType(imei, fileType string) ([]store.MediaFile, error) {
	return listJSON[store.MediaFile](r.t.bucket(bucketMedia), []byte(imei+"/"+fileType+"/"), nil)
}

// mediaEventRefs are the media_events entries: an empty value under
// MediaRef.Key, 0, event id (8 bytes) for each event referencing a file,
// so a file's events are one range, in id order.
type mediaEventRefs struct{ t *tx }

// MediaEventRefs implements store.DeviceStateRecords.
func (t *tx) MediaEventRefs() store.MediaEventRefRecords { return mediaEventRefs{t} }

// mediaEventKey is the media_events key of event eventID's reference to r.
func mediaEventKey(r store.MediaRef, eventID int64) []byte {
	return append(append([]byte(r.Key()), 0), itob(eventID)...)
}

// Add implements store.MediaEventRefRecords.
func (r mediaEventRefs) Add(ref store.MediaRef, eventID int64) error {
	return r.t.bucket(bucketMediaEvents).Put(mediaEventKey(ref, eventID), nil)
}

// Delete implements store.MediaEventRefRecords.
func (r mediaEventRefs) Delete(ref store.MediaRef, eventID int64) error {
	return r.t.bucket(bucketMediaEvents).Delete(mediaEventKey(ref, eventID))
}

// EventIDs implements store.MediaEventRefRecords.
func (r mediaEventRefs) EventIDs(ref store.MediaRef) ([]int64, error) {
	prefix := append([]byte(ref.Key()), 0)
	var ids []int64
	c := r.t.bucket(bucketMediaEvents).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) >= len(prefix)+8 {
			ids = append(ids, btoi(k[len(prefix):]))
		}
	}
	return ids, nil
}

// mediaTrash is the media_trash bucket: an empty value under each blob key.
type mediaTrash struct{ t *tx }

// MediaTrash implements store.DeviceStateRecords.
func (t *tx) MediaTrash() store.MediaTrashRecords { return mediaTrash{t} }

// Add implements store.MediaTrashRecords.
func (r mediaTrash) Add(blob string) error {
	return r.t.bucket(bucketMediaTrash).Put([]byte(blob), nil)
}

// List implements store.MediaTrashRecords.
func (r mediaTrash) List(limit int) ([]string, error) {
	var out []string
	c := r.t.bucket(bucketMediaTrash).Cursor()
	for k, _ := c.First(); k != nil && (limit <= 0 || len(out) < limit); k, _ = c.Next() {
		out = append(out, string(k))
	}
	return out, nil
}

// Delete implements store.MediaTrashRecords.
func (r mediaTrash) Delete(blob string) error {
	return r.t.bucket(bucketMediaTrash).Delete([]byte(blob))
}
