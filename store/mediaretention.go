package store

import (
	"bytes"
	"time"
)

// Media retention: a media file's bytes stay in the cloud for the
// organization's purge days of its camera (Retention.MediaPurgeDays),
// counted from the file's RecordedAt. A file events still reference is
// kept as a MediaPurged record without bytes, so the events explain why
// the file is gone; it goes entirely with its last event. Files no event
// references (ADAS calibration images) go entirely after the
// organization's general purge days.
//
// bucketMediaAge indexes every file by device, retention class and age, so
// each purge pass reads only what is due: per device it seeks to its class
// and walks the oldest entries up to the class's cutoff.

// Media retention classes, one byte of the age index key each.
const (
	mediaClassFront      byte = 'f' // road-facing camera (1)
	mediaClassRear       byte = 'r' // in-cabin camera (2)
	mediaClassAux        byte = 'x' // auxiliary cameras (50+)
	mediaClassUnattached byte = 'u' // files no event references: ADAS calibration images
)

// mediaClass is the retention class of m.
func mediaClass(m *MediaFile) byte {
	switch {
	case m.FileType == FileADAS:
		return mediaClassUnattached
	case m.CameraID == 1:
		return mediaClassFront
	case m.CameraID == 2:
		return mediaClassRear
	}
	return mediaClassAux
}

// mediaAgeKey is m's key in bucketMediaAge.
func mediaAgeKey(m *MediaFile) []byte {
	k := make([]byte, 0, len(m.IMEI)+10+len(m.Ref().Key()))
	k = append(k, m.IMEI...)
	k = append(k, 0, mediaClass(m))
	k = append(k, itob(m.RecordedAt.UnixMilli())...)
	return append(k, m.Ref().Key()...)
}

// indexMediaAge sets m's age to at and indexes it for the media purge.
func (tx *Tx) indexMediaAge(m *MediaFile, at time.Time) error {
	m.RecordedAt = at
	return tx.bucket(bucketMediaAge).Put(mediaAgeKey(m), nil)
}

// Purge days of each media retention class (0: kept as long as its events).
func frontCameraPurgeDays(o *Organization) int { return o.Retention.MediaPurgeDays(1) }
func rearCameraPurgeDays(o *Organization) int  { return o.Retention.MediaPurgeDays(2) }
func auxCameraPurgeDays(o *Organization) int   { return o.Retention.MediaPurgeDays(MinAuxCameraID) }

// mediaPurger returns the purge step of one retention class: it deletes
// the bytes of up to limit files of the class recorded before the cutoff
// of the organization they were recorded for, device after device; the
// resume position is an age index key.
func mediaPurger(class byte) func(*Tx, Cutoffs, []byte, int) (int, []byte, error) {
	return func(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
		c := tx.bucket(bucketMediaAge).Cursor()
		k, _ := c.First()
		if from != nil {
			k, _ = c.Seek(from)
		}
		var doomed [][]byte
		var resume []byte
		owners := map[string]*OwnerCutoffs{}
		for k != nil {
			sep := bytes.IndexByte(k, 0)
			if sep < 0 || len(k) < sep+10 {
				k, _ = c.Next()
				continue
			}
			imei := string(k[:sep])
			if got := k[sep+1]; got != class {
				next := class
				if got > class {
					next = 0xff // past this device's entries of the class
				}
				k, _ = c.Seek(append([]byte(imei), 0, next))
				continue
			}
			oc, seen := owners[imei]
			if !seen {
				var err error
				if oc, err = tx.ownerCutoffs(imei, cut); err != nil {
					return 0, nil, err
				}
				owners[imei] = oc
			}
			at := time.UnixMilli(btoi(k[sep+2 : sep+10]))
			if !at.Before(oc.Latest()) {
				k, _ = c.Seek(append([]byte(imei), 0, 0xff)) // nothing newer of this device goes
				continue
			}
			var m MediaFile
			if err := getJSON(tx.bucket(bucketMedia), k[sep+10:], &m); err != nil && !isNotFound(err) {
				return 0, nil, err
			}
			if !oc.Purgeable(m.Ownership, at) {
				k, _ = c.Next()
				continue
			}
			if len(doomed) >= limit {
				resume = bytes.Clone(k)
				break
			}
			doomed = append(doomed, bytes.Clone(k))
			k, _ = c.Next()
		}
		for _, ak := range doomed {
			if err := tx.purgeMediaBytes(ak, string(ak[bytes.IndexByte(ak, 0)+10:])); err != nil {
				return 0, nil, err
			}
		}
		return len(doomed), resume, nil
	}
}

// purgeMediaBytes purges the file of record key: a file no event
// references is deleted, one still referenced keeps a MediaPurged record.
// Either way its blob goes to the trash and it leaves the age index.
func (tx *Tx) purgeMediaBytes(ageKey []byte, key string) error {
	var m MediaFile
	if err := getJSON(tx.bucket(bucketMedia), []byte(key), &m); err != nil {
		if isNotFound(err) {
			return tx.bucket(bucketMediaAge).Delete(ageKey)
		}
		return err
	}
	if m.Refs <= 0 || m.FileType == FileADAS {
		if err := tx.deleteMedia(&m); err != nil {
			return err
		}
		return tx.bucket(bucketMediaAge).Delete(ageKey)
	}
	if err := tx.bucket(bucketMediaAge).Delete(ageKey); err != nil {
		return err
	}
	if err := tx.trashBlob(m.Blob); err != nil {
		return err
	}
	m.State, m.Blob, m.Size, m.ContentType, m.Error = MediaPurged, "", 0, "", ""
	return tx.putMedia(&m)
}
