package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// mediaAges is the media_age index: an empty value under imei, 0, retention
// class (1 byte), RecordedAt (unix ms, 8 bytes), MediaRef.Key for each file
// whose bytes the media purge has yet to delete. A device's entries of one
// class are one range, oldest first, so each purge pass reads only what is
// due.
type mediaAges struct{ t *tx }

// MediaAges implements store.DeviceStateRecords.
func (t *tx) MediaAges() store.MediaAgeRecords { return mediaAges{t} }

// mediaAgeKey is the media_age key of a.
func mediaAgeKey(a store.MediaAge) []byte {
	key := a.Ref.Key()
	k := make([]byte, 0, len(a.Ref.IMEI)+10+len(key))
	k = append(k, a.Ref.IMEI...)
	k = append(k, 0, byte(a.Class))
	k = binary.BigEndian.AppendUint64(k, uint64(a.RecordedAt.UnixMilli()))
	return append(k, key...)
}

// Add implements store.MediaAgeRecords.
func (r mediaAges) Add(a store.MediaAge) error {
	return r.t.bucket(bucketMediaAge).Put(mediaAgeKey(a), nil)
}

// Delete implements store.MediaAgeRecords.
func (r mediaAges) Delete(a store.MediaAge) error {
	return r.t.bucket(bucketMediaAge).Delete(mediaAgeKey(a))
}

// TakeDue implements store.MediaAgeRecords. Per device it seeks to the
// class's entries and walks them up to the device's latest cutoff; the file
// record of each entry gives the ownership. The resume position is an index
// key.
func (r mediaAges) TakeDue(class store.MediaClass, p store.SeriesPurge) ([]store.MediaFile, int, []byte, error) {
	ages, files := r.t.bucket(bucketMediaAge), r.t.bucket(bucketMedia)
	c := ages.Cursor()
	k, _ := c.First()
	if p.From != nil {
		k, _ = c.Seek(p.From)
	}
	var doomed [][]byte
	var due []store.MediaFile
	var resume []byte
	for k != nil {
		sep := bytes.IndexByte(k, 0)
		if sep < 0 || len(k) < sep+10 {
			k, _ = c.Next()
			continue
		}
		imei := string(k[:sep])
		if got := store.MediaClass(k[sep+1]); got != class {
			next := byte(class)
			if got > class {
				next = 0xff // past this device's entries of the class
			}
			k, _ = c.Seek(append([]byte(imei), 0, next))
			continue
		}
		oc, err := p.Owners(imei)
		if err != nil {
			return nil, 0, nil, err
		}
		at := time.UnixMilli(btoi(k[sep+2 : sep+10]))
		if !at.Before(oc.Latest()) {
			k, _ = c.Seek(append([]byte(imei), 0, 0xff)) // nothing newer of this device goes
			continue
		}
		var m store.MediaFile
		raw := files.Get(k[sep+10:])
		if raw != nil {
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, 0, nil, fmt.Errorf("store: decode %s: %w", k[sep+10:], err)
			}
		}
		if !oc.Purgeable(m.Ownership, at) {
			k, _ = c.Next()
			continue
		}
		if p.Limit > 0 && len(doomed) >= p.Limit {
			resume = bytes.Clone(k)
			break
		}
		doomed = append(doomed, bytes.Clone(k))
		if raw != nil {
			due = append(due, m)
		}
		k, _ = c.Next()
	}
	for _, ak := range doomed {
		if err := ages.Delete(ak); err != nil {
			return nil, 0, nil, err
		}
	}
	return due, len(doomed), resume, nil
}
