package store

import "time"

// Media retention: a media file's bytes stay in the cloud for the
// organization's purge days of its camera (Retention.MediaPurgeDays),
// counted from the file's RecordedAt. A file events still reference is
// kept as a MediaPurged record without bytes, so the events explain why
// the file is gone; it goes entirely with its last event. Files no event
// references (ADAS calibration images) go entirely after the
// organization's general purge days.
//
// The media age index (MediaAgeRecords) holds every file whose bytes are
// still to purge, by device, retention class and age, so each purge pass
// reads only what is due.

// Media retention classes.
const (
	mediaClassFront      MediaClass = 'f' // road-facing camera (1)
	mediaClassRear       MediaClass = 'r' // in-cabin camera (2)
	mediaClassAux        MediaClass = 'x' // auxiliary cameras (50+)
	mediaClassUnattached MediaClass = 'u' // files no event references: ADAS calibration images
)

// mediaClass is the retention class of m.
func mediaClass(m *MediaFile) MediaClass {
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

// mediaAge is m's entry in the media age index.
func mediaAge(m *MediaFile) MediaAge {
	return MediaAge{Ref: m.Ref(), Class: mediaClass(m), RecordedAt: m.RecordedAt}
}

// indexMediaAge sets m's age to at and indexes it for the media purge.
func (tx *Tx) indexMediaAge(m *MediaFile, at time.Time) error {
	m.RecordedAt = at
	return tx.rec.MediaAges().Add(mediaAge(m))
}

// Purge days of each media retention class (0: kept as long as its events).
func frontCameraPurgeDays(o *Organization) int { return o.Retention.MediaPurgeDays(1) }
func rearCameraPurgeDays(o *Organization) int  { return o.Retention.MediaPurgeDays(2) }
func auxCameraPurgeDays(o *Organization) int   { return o.Retention.MediaPurgeDays(MinAuxCameraID) }

// mediaPurger returns the purge step of one retention class: it deletes
// the bytes of up to limit files of the class recorded before the cutoff
// of the organization they were recorded for, device after device; the
// resume position is the engine's.
func mediaPurger(class MediaClass) func(*Tx, Cutoffs, []byte, int) (int, []byte, error) {
	return func(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
		due, n, resume, err := tx.rec.MediaAges().TakeDue(class, seriesPurge(tx, cut, from, limit))
		if err != nil {
			return 0, nil, err
		}
		for i := range due {
			if err := tx.purgeMediaBytes(&due[i]); err != nil {
				return 0, nil, err
			}
		}
		return n, resume, nil
	}
}

// purgeMediaBytes purges m, whose entry left the age index: a file no event
// references is deleted, one still referenced keeps a MediaPurged record.
// Either way its blob goes to the trash.
func (tx *Tx) purgeMediaBytes(m *MediaFile) error {
	if m.Refs <= 0 || m.FileType == FileADAS {
		return tx.deleteMedia(m)
	}
	if err := tx.trashBlob(m.Blob); err != nil {
		return err
	}
	m.State, m.Blob, m.Size, m.ContentType, m.Error = MediaPurged, "", 0, "", ""
	return tx.putMedia(m)
}
