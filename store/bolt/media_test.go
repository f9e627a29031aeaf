package bolt_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Media files, their pending entries, event references and age entries are
// under the keys the older version used, and what it wrote is read, purged
// and trashed as before.
func TestMediaKeys(t *testing.T) {
	f := newDeviceFixture(t)
	video := store.MediaRef{IMEI: f.dev.IMEI, CameraID: 1, FileType: store.FileVideo, FileID: "f1"}
	snap := video
	snap.FileType = store.FileSnapshot
	var eventID int64
	f.update(func(tx *store.Tx) error {
		res, err := tx.IngestEvent(f.dev, store.EventInput{DeviceEventID: "e1", Type: "deceleration", Time: f.clock.Now(),
			Files: []store.EventFile{{CameraID: 1, FileID: "f1", FileType: store.FileVideo}}})
		if err != nil {
			return err
		}
		eventID = res.Event.ID
		return nil
	})
	prefix := []byte(f.dev.IMEI + "/")
	both := [][]byte{[]byte(snap.Key()), []byte(video.Key())}
	for _, tc := range []struct {
		bucket string
		prefix []byte
		want   [][]byte
	}{
		{"media", prefix, both},
		{"media_pending", prefix, both},
		{"media_events", prefix, [][]byte{
			binary.BigEndian.AppendUint64(append([]byte(snap.Key()), 0), uint64(eventID)),
			binary.BigEndian.AppendUint64(append([]byte(video.Key()), 0), uint64(eventID)),
		}},
		{"media_age", append([]byte(f.dev.IMEI), 0), [][]byte{
			mediaAgeKey(snap, 'f', f.clock.Now()),
			mediaAgeKey(video, 'f', f.clock.Now()),
		}},
	} {
		if got := f.keys(tc.bucket, tc.prefix); !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("%s keys %q, want %q", tc.bucket, got, tc.want)
		}
	}

	// The upload settles the video: only the snapshot is left pending.
	f.update(func(tx *store.Tx) error {
		_, err := tx.CompleteUpload(store.MediaUpload{Ref: video, Blob: "blob-1", Size: 10, ContentType: "video/mp4"})
		return err
	})
	if got := f.keys("media_pending", prefix); !slices.EqualFunc(got, [][]byte{[]byte(snap.Key())}, slices.Equal) {
		t.Errorf("pending after the upload %q", got)
	}

	// An unreferenced upload as the older version stored it, pending, in
	// the age index and with a blob: it is read, listed, and dropped with
	// its entries, its blob going to the trash.
	old := store.MediaRef{IMEI: f.dev.IMEI, CameraID: 2, FileType: store.FileVideo, FileID: "old"}
	recorded := f.clock.Now().Add(-48 * time.Hour)
	f.put("media", []byte(old.Key()), fmt.Appendf(nil,
		`{"imei":%q,"cameraId":2,"fileType":"video","fileId":"old","state":"uploaded","refs":0,"blob":"blob-old","size":5,"updatedAt":"2026-03-09T10:00:00Z","recordedAt":"2026-03-09T10:00:00Z"}`,
		f.dev.IMEI))
	f.put("media_pending", []byte(old.Key()), nil)
	f.put("media_age", mediaAgeKey(old, 'r', recorded), nil)
	f.view(func(tx *store.Tx) error {
		m, err := tx.MediaFile(old)
		if err != nil || m.State != store.MediaUploaded || m.Blob != "blob-old" || !m.RecordedAt.Equal(recorded) {
			t.Errorf("old record read as %+v %v", m, err)
		}
		pending, err := tx.UnsettledMedia(0)
		if err != nil {
			return err
		}
		var keys []string
		for _, p := range pending {
			keys = append(keys, p.Ref().Key())
		}
		if want := []string{snap.Key(), old.Key()}; !slices.Equal(keys, want) {
			t.Errorf("unsettled %q, want %q", keys, want)
		}
		return nil
	})
	f.update(func(tx *store.Tx) error { return tx.DropUnreferencedMedia(old) })
	for _, tc := range []struct {
		bucket string
		key    []byte
	}{
		{"media", []byte(old.Key())},
		{"media_pending", []byte(old.Key())},
		{"media_age", mediaAgeKey(old, 'r', recorded)},
	} {
		if f.get(tc.bucket, tc.key) != nil {
			t.Errorf("%s %q left after the drop", tc.bucket, tc.key)
		}
	}
	if got := f.keys("media_trash", nil); !slices.EqualFunc(got, [][]byte{[]byte("blob-old")}, slices.Equal) {
		t.Errorf("trash %q, want blob-old", got)
	}
	f.update(func(tx *store.Tx) error { return tx.ForgetTrash(tx.MediaTrash(0)) })
	if got := f.keys("media_trash", nil); len(got) != 0 {
		t.Errorf("trash after forgetting it %q", got)
	}
}

// TestEventMediaAvailableReportsUnreadableFiles: a media file record that
// cannot be read is an error of EventMediaAvailable and of the page's
// EventsMediaAvailable, not a file reported as not in the cloud, and so is
// the upload whose mediaAvailable message has to read it.
func TestEventMediaAvailableReportsUnreadableFiles(t *testing.T) {
	f := newDeviceFixture(t)
	video := store.MediaRef{IMEI: f.dev.IMEI, CameraID: 1, FileType: store.FileVideo, FileID: "f1"}
	snap := store.MediaRef{IMEI: f.dev.IMEI, CameraID: 2, FileType: store.FileSnapshot, FileID: "f1"}
	var ev *store.Event
	f.update(func(tx *store.Tx) error {
		res, err := tx.IngestEvent(f.dev, store.EventInput{DeviceEventID: "e1", Type: "deceleration", Time: f.clock.Now(),
			Files: []store.EventFile{{CameraID: 1, FileID: "f1", FileType: store.FileVideo}, {CameraID: 2, FileID: "f1", FileType: store.FileSnapshot}}})
		ev = res.Event
		return err
	})
	f.view(func(tx *store.Tx) error {
		avail, err := tx.EventMediaAvailable(ev)
		if err != nil || !slices.Equal(avail, []bool{false, false}) {
			t.Errorf("before any upload: %v, %v; want [false false]", avail, err)
		}
		return nil
	})
	f.put("media", []byte(snap.Key()), []byte(`{"imei":`)) // cut short
	err := f.db.View(t.Context(), func(tx *store.Tx) error {
		if avail, err := tx.EventMediaAvailable(ev); err == nil {
			t.Errorf("an unreadable file record answered %v and no error", avail)
		}
		if avail, err := tx.EventsMediaAvailable([]*store.Event{ev, ev}); err == nil {
			t.Errorf("a page with an unreadable file record answered %v and no error", avail)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = f.db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		_, err := tx.CompleteUpload(store.MediaUpload{Ref: video, Blob: "blob-1", Size: 10, ContentType: "video/mp4"})
		return err
	})
	if err == nil {
		t.Error("an upload whose event has an unreadable file record stored no error")
	}
}
