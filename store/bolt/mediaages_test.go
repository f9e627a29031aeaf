package bolt_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// The media purge takes each file it purges out of the age index and
// leaves the rest, however its batches fall: a file purged and asked for
// again is indexed anew with its new age, and once every camera file of the
// device is past its days only what is still to purge is left.
func TestMediaPurgeAgeIndex(t *testing.T) {
	f := newDeviceFixture(t)
	start := f.clock.Now()
	f.update(func(tx *store.Tx) error {
		f.org.Retention = store.Retention{PurgeDays: 30, PurgeDaysFrontCamera: 10, PurgeDaysRearCamera: 5, PurgeDaysAuxiliaryCameras: 20}
		return tx.UpdateOrganization(f.org)
	})
	ref := func(cam int, typ, id string) store.MediaRef {
		return store.MediaRef{IMEI: f.dev.IMEI, CameraID: cam, FileType: typ, FileID: id}
	}
	adas := func(day int) store.MediaRef { return ref(1, store.FileADAS, fmt.Sprint("auto-", day)) }
	// Day 0: one event with a video of cameras 1, 2 and 50 (each also
	// naming its snapshot), all uploaded, and an ADAS image; day 12: another
	// ADAS image.
	f.update(func(tx *store.Tx) error {
		var files []store.EventFile
		for _, cam := range []int{1, 2, 50} {
			files = append(files, store.EventFile{CameraID: cam, FileID: "day-0", FileType: store.FileVideo})
		}
		if _, err := tx.IngestEvent(f.dev, store.EventInput{DeviceEventID: "e0", Type: "deceleration", Time: start, Files: files}); err != nil {
			return err
		}
		for _, cam := range []int{1, 2, 50} {
			r := ref(cam, store.FileVideo, "day-0")
			if _, err := tx.CompleteUpload(store.MediaUpload{Ref: r, Blob: "blob/" + r.Key(), Size: 100}); err != nil {
				return err
			}
		}
		return tx.ExpectADASImage(adas(0))
	})
	f.clock.Set(start.AddDate(0, 0, 12))
	f.update(func(tx *store.Tx) error { return tx.ExpectADASImage(adas(12)) })
	purge := func() store.PurgeResult {
		t.Helper()
		res, err := f.db.Purge(context.Background(), f.clock.Now(), store.PurgeSettings{Batch: 1})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	index := func() [][]byte { return f.keys("media_age", []byte(f.dev.IMEI+"\x00")) }
	sorted := func(keys ...[]byte) [][]byte { return slices.SortedFunc(slices.Values(keys), bytes.Compare) }

	// Day 14: the front and in-cabin files of day 0 are past their days.
	f.clock.Set(start.AddDate(0, 0, 14).Add(time.Hour))
	if res := purge(); res.Deleted["media"] != 4 {
		t.Fatalf("day 14 deleted %v, want the bytes of 4 media files", res.Deleted)
	}
	want := sorted(
		mediaAgeKey(ref(50, store.FileSnapshot, "day-0"), 'x', start),
		mediaAgeKey(ref(50, store.FileVideo, "day-0"), 'x', start),
		mediaAgeKey(adas(0), 'u', start),
		mediaAgeKey(adas(12), 'u', start.AddDate(0, 0, 12)),
	)
	if got := index(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("age index after day 14\n got %q\nwant %q", got, want)
	}

	// A new event asks for the purged front video again: a fresh copy,
	// indexed at the event's time.
	f.update(func(tx *store.Tx) error {
		_, err := tx.IngestEvent(f.dev, store.EventInput{Type: store.EventVirtual, Time: f.clock.Now(), MediaRequested: true,
			Files: []store.EventFile{{CameraID: 1, FileID: "day-0", FileType: store.FileVideo}}})
		return err
	})
	want = sorted(append(want,
		mediaAgeKey(ref(1, store.FileSnapshot, "day-0"), 'f', f.clock.Now()),
		mediaAgeKey(ref(1, store.FileVideo, "day-0"), 'f', f.clock.Now()))...)
	if got := index(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("age index after the new request\n got %q\nwant %q", got, want)
	}

	// Day 35: the day-0 event goes with the files only it referenced, the
	// fresh copy is past the front camera's days, and so is the day-0 ADAS
	// image: only the day-12 image is left to purge.
	f.clock.Set(start.AddDate(0, 0, 35).Add(time.Hour))
	purge()
	want = [][]byte{mediaAgeKey(adas(12), 'u', start.AddDate(0, 0, 12))}
	if got := index(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("age index after day 35\n got %q\nwant %q", got, want)
	}
	f.view(func(tx *store.Tx) error {
		if m, err := tx.MediaFile(ref(1, store.FileVideo, "day-0")); err != nil || m.State != store.MediaPurged {
			t.Errorf("the fresh copy after day 35: %+v %v", m, err)
		}
		return nil
	})
}
