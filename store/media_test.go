package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func (f *eventFixture) media(r MediaRef) *MediaFile {
	f.t.Helper()
	var m *MediaFile
	err := f.db.View(f.t.Context(), func(tx *Tx) error {
		var err error
		m, err = tx.MediaFile(r)
		return err
	})
	if err != nil {
		return nil
	}
	return m
}

func (f *eventFixture) trash() []string {
	var out []string
	f.db.View(f.t.Context(), func(tx *Tx) error { out = tx.MediaTrash(0); return nil })
	return out
}

func TestSharedMediaSurvivesDeletingOneEvent(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		file := []EventFile{{CameraID: 1, FileID: "1772366400", FileType: FileVideo}}
		a := f.ingest(f.dev, EventInput{Type: EventVirtual, Time: eventT0, Files: file, MediaRequested: true}).Event
		b := f.ingest(f.dev, EventInput{Type: EventVirtual, Time: eventT0, Files: file, MediaRequested: true}).Event
		ref := MediaRef{IMEI: f.dev.IMEI, CameraID: 1, FileType: FileVideo, FileID: "1772366400"}
		if m := f.media(ref); m == nil || m.Refs != 2 || m.State != MediaRequested {
			t.Fatalf("shared file %+v", m)
		}
		f.update(func(tx *Tx) error {
			_, err := tx.CompleteUpload(MediaUpload{Ref: ref, Blob: "b/1", Size: 10, ContentType: "video/mp4"})
			return err
		})
		f.update(func(tx *Tx) error { _, err := tx.DeleteEvent(a.ID); return err })
		if m := f.media(ref); m == nil || m.Refs != 1 || m.Blob != "b/1" {
			t.Fatalf("after deleting one event: %+v", m)
		}
		if got := f.trash(); len(got) != 0 {
			t.Fatalf("trash %v: the shared blob was dropped", got)
		}
		f.update(func(tx *Tx) error { _, err := tx.DeleteEvent(b.ID); return err })
		if m := f.media(ref); m != nil {
			t.Fatalf("file outlived its last event: %+v", m)
		}
		if got := f.trash(); len(got) != 1 || got[0] != "b/1" {
			t.Fatalf("trash %v, want b/1", got)
		}
	})
}

func TestMediaAvailableOnceAllFilesUploaded(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		e := f.ingest(f.dev, EventInput{DeviceEventID: "x", Type: EventAccident, Time: eventT0, Files: twoFiles("55")}).Event
		upload := func(cam int, typ string) {
			f.update(func(tx *Tx) error {
				_, err := tx.CompleteUpload(MediaUpload{Ref: MediaRef{IMEI: f.dev.IMEI, CameraID: cam, FileType: typ, FileID: "55"},
					Blob: "k/" + typ + string(rune('0'+cam)), Size: 1})
				return err
			})
		}
		upload(1, FileVideo)
		upload(1, FileSnapshot)
		if n := len(f.messages(MessageMediaUploaded)); n != 0 {
			t.Fatalf("mediaAvailable after one of two files: %d", n)
		}
		upload(2, FileVideo)
		msgs := f.messages(MessageMediaUploaded)
		if len(msgs) != 1 {
			t.Fatalf("%d mediaAvailable messages", len(msgs))
		}
		if d := msgs[0].Event; d == nil || d.ID != e.ID || msgs[0].IMEI != f.dev.IMEI || len(d.Files) != 2 || d.Files[0].FileID != "55" {
			t.Fatalf("message %+v", msgs[0])
		}
		// A second upload of a file is refused and does not repeat the message.
		err := f.db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
			_, err := tx.CompleteUpload(MediaUpload{Ref: MediaRef{IMEI: f.dev.IMEI, CameraID: 2, FileType: FileVideo, FileID: "55"}, Blob: "k/again", Size: 1})
			return err
		})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("re-upload: %v, want ErrConflict", err)
		}
		if n := len(f.messages(MessageMediaUploaded)); n != 1 {
			t.Fatalf("%d mediaAvailable messages after a re-upload", n)
		}
	})
}

func TestUnsettledMediaLifecycle(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.ingest(f.dev, EventInput{DeviceEventID: "x", Type: EventButton, Time: eventT0,
			Files: []EventFile{{CameraID: 1, FileID: "9", FileType: FileSnapshot}}})
		ref := MediaRef{IMEI: f.dev.IMEI, CameraID: 1, FileType: FileSnapshot, FileID: "9"}
		unsettled := func() int {
			var n int
			f.db.View(t.Context(), func(tx *Tx) error { m, err := tx.UnsettledMedia(0); n = len(m); return err })
			return n
		}
		if n := unsettled(); n != 1 {
			t.Fatalf("%d unsettled, want the new file", n)
		}
		for i := 0; i < MaxMediaAttempts; i++ {
			f.update(func(tx *Tx) error { return tx.SetMediaState(ref, MediaUnreachable, "device offline") })
		}
		if n := unsettled(); n != 0 {
			t.Fatalf("%d unsettled after %d unreachable attempts", n, MaxMediaAttempts)
		}
		if m := f.media(ref); m.State != MediaUnreachable {
			t.Fatalf("state %s", m.State)
		}
		// An upload that overtakes its event waits unreferenced, then can be dropped.
		early := MediaRef{IMEI: f.dev.IMEI, CameraID: 2, FileType: FileVideo, FileID: "77"}
		f.update(func(tx *Tx) error {
			_, err := tx.CompleteUpload(MediaUpload{Ref: early, Blob: "early", Size: 3})
			return err
		})
		if n := unsettled(); n != 1 {
			t.Fatalf("%d unsettled, want the unreferenced upload", n)
		}
		f.update(func(tx *Tx) error { return tx.DropUnreferencedMedia(early) })
		if f.media(early) != nil || len(f.trash()) != 1 {
			t.Fatal("unreferenced upload not dropped")
		}
	})
}

func TestADASImages(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		for i, id := range []string{"auto-1", "manual-1", "auto-2"} {
			ref := MediaRef{IMEI: f.dev.IMEI, CameraID: 1, FileType: FileADAS, FileID: id}
			f.update(func(tx *Tx) error { return tx.ExpectADASImage(ref) })
			f.mu.Lock()
			f.now = eventT0.Add(time.Duration(i) * time.Minute)
			f.mu.Unlock()
			f.update(func(tx *Tx) error {
				_, err := tx.CompleteUpload(MediaUpload{Ref: ref, Blob: "adas/" + id, Size: 1})
				return err
			})
		}
		var auto, all []MediaFile
		f.update(func(tx *Tx) error {
			var err error
			if auto, err = tx.ADASImages(f.dev, "auto-", 10); err != nil {
				return err
			}
			all, err = tx.ADASImages(f.dev, "", 2)
			return err
		})
		if len(auto) != 2 || auto[0].FileID != "auto-2" || len(all) != 2 || all[1].FileID != "manual-1" {
			t.Fatalf("auto %v all %v", auto, all)
		}
		var n int
		f.update(func(tx *Tx) error { var err error; n, err = tx.DeleteADASImages(f.dev); return err })
		if n != 3 || len(f.trash()) != 3 {
			t.Fatalf("deleted %d, trash %v", n, f.trash())
		}
	})
}

func TestUploadedFileIsWrittenOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		file := []EventFile{{CameraID: 1, FileID: "1772366400", FileType: FileVideo}}
		f.ingest(f.dev, EventInput{Type: EventVirtual, Time: eventT0, Files: file, MediaRequested: true})
		ref := MediaRef{IMEI: f.dev.IMEI, CameraID: 1, FileType: FileVideo, FileID: "1772366400"}
		upload := func(blob string) error {
			return f.db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
				_, err := tx.CompleteUpload(MediaUpload{Ref: ref, Blob: blob, Size: 10, ContentType: "video/mp4"})
				return err
			})
		}
		if err := upload("b/1"); err != nil {
			t.Fatal(err)
		}
		if err := upload("b/2"); !errors.Is(err, ErrConflict) {
			t.Fatalf("second upload: %v, want ErrConflict", err)
		}
		if m := f.media(ref); m == nil || m.Blob != "b/1" || m.State != MediaUploaded {
			t.Fatalf("after a second upload: %+v", m)
		}
		if got := f.trash(); len(got) != 0 {
			t.Fatalf("trash %v: the first upload was replaced", got)
		}
	})
}

// TestEventsMediaAvailable: a page of events says for each file whether
// its bytes are in the cloud, in the order of the events and their files:
// a file two events share the same for both, a file never recorded (an
// event stored without its media references) unavailable.
func TestEventsMediaAvailable(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		shared := EventFile{CameraID: 1, FileID: "1772366400", FileType: FileVideo}
		snap := EventFile{CameraID: 2, FileID: "1772366401", FileType: FileSnapshot}
		clip := EventFile{CameraID: 1, FileID: "1772366402", FileType: FileVideo}
		a := f.ingest(f.dev, EventInput{Type: EventVirtual, Time: eventT0, Files: []EventFile{shared, snap}}).Event
		b := f.ingest(f.dev, EventInput{Type: EventVirtual, Time: eventT0, Files: []EventFile{shared}}).Event
		c := f.ingest(f.dev2, EventInput{Type: EventVirtual, Time: eventT0, Files: []EventFile{clip, snap}}).Event
		none := f.ingest(f.dev2, EventInput{Type: EventButton, Time: eventT0.Add(time.Minute)}).Event
		unrecorded := &Event{IMEI: f.dev.IMEI, OrganizationID: f.org.ID, Type: EventVirtual, Time: eventT0,
			Files: []EventFile{{CameraID: 1, FileID: "1772366499", FileType: FileVideo}, shared}}
		f.update(func(tx *Tx) error {
			for _, r := range []MediaRef{
				{IMEI: f.dev.IMEI, CameraID: 1, FileType: FileVideo, FileID: shared.FileID},
				{IMEI: f.dev2.IMEI, CameraID: 2, FileType: FileSnapshot, FileID: snap.FileID},
			} {
				if _, err := tx.CompleteUpload(MediaUpload{Ref: r, Blob: "b/" + r.FileID, Size: 10, ContentType: "video/mp4"}); err != nil {
					return err
				}
			}
			return nil
		})
		err := f.db.View(t.Context(), func(tx *Tx) error {
			got, err := tx.EventsMediaAvailable([]*Event{a, b, none, c, unrecorded})
			if err != nil {
				return err
			}
			want := [][]bool{{true, false}, {true}, {}, {false, true}, {false, true}}
			if len(got) != len(want) {
				t.Fatalf("%d events' files, want %d", len(got), len(want))
			}
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("event %d: %v, want %v", i, got[i], want[i])
				}
			}
			one, err := tx.EventMediaAvailable(c)
			if err == nil && !slices.Equal(one, []bool{false, true}) {
				t.Errorf("one event: %v, want [false true]", one)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// The same files as a page of the organization's events shows them,
		// read in a view and in a transaction that may write.
		byID := map[int64][]bool{a.ID: {true, false}, b.ID: {true}, c.ID: {false, true}, none.ID: {}}
		page := func(tx *Tx) error {
			events, n, err := tx.OrgEventList(f.org.ID, EventQuery{Start: eventT0.Add(-time.Hour), End: eventT0.Add(time.Hour)}, Page{Limit: 10})
			if err != nil {
				return err
			}
			if n != len(byID) || len(events) != len(byID) {
				t.Fatalf("a page of %d of %d events, want all %d", len(events), n, len(byID))
			}
			list := make([]*Event, len(events))
			for i := range events {
				list[i] = &events[i].Event
			}
			got, err := tx.EventsMediaAvailable(list)
			if err != nil {
				return err
			}
			for i, e := range list {
				if !slices.Equal(got[i], byID[e.ID]) {
					t.Errorf("event %d of the page: %v, want %v", e.ID, got[i], byID[e.ID])
				}
			}
			return nil
		}
		if err := f.db.View(t.Context(), page); err != nil {
			t.Fatal(err)
		}
		f.update(page)
	})
}

// TestEventMediaAvailableReportsAFailedLookup: on PostgreSQL the files of a
// page are one statement; when it fails (here the caller gave up, its
// context cancelled) EventMediaAvailable and EventsMediaAvailable return
// the error instead of reporting the files as not in the cloud.
func TestEventMediaAvailableReportsAFailedLookup(t *testing.T) {
	t.Parallel()
	storetest.Use(t, "postgres")
	f := newEventFixture(t)
	e := f.ingest(f.dev, EventInput{Type: EventVirtual, Time: eventT0,
		Files: []EventFile{{CameraID: 1, FileID: "1772366400", FileType: FileVideo}}}).Event
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := false
	// The view's own answer is the cancellation; what is asked within it is
	// the test.
	_ = f.db.View(ctx, func(tx *Tx) error {
		ran = true
		cancel()
		if avail, err := tx.EventMediaAvailable(e); !errors.Is(err, context.Canceled) {
			t.Errorf("a cancelled lookup: %v, %v; want context.Canceled", avail, err)
		}
		if avail, err := tx.EventsMediaAvailable([]*Event{e}); !errors.Is(err, context.Canceled) {
			t.Errorf("a cancelled lookup of a page: %v, %v; want context.Canceled", avail, err)
		}
		return nil
	})
	if !ran {
		t.Fatal("the view did not run")
	}
}
