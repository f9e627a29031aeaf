package postgres

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// mediaKeys are the keys of files, in their order.
func mediaKeys(files []store.MediaFile) []string {
	var keys []string
	for _, m := range files {
		keys = append(keys, m.Ref().Key())
	}
	return keys
}

// TestMediaFiles stores files of two devices, reads them back whole, and
// lists the pending ones and those of one type in the order of their keys
// (camera ids as text); a Put that is not pending, and a Delete, take a
// file off the pending list, and a Delete takes its event references.
func TestMediaFiles(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a, b := f.imeis[0], f.imeis[1]
	at := time.Date(2026, 3, 11, 10, 0, 0, 123456000, time.UTC)
	file := func(imei string, cam int, typ, id string) *store.MediaFile {
		return &store.MediaFile{IMEI: imei, CameraID: cam, FileType: typ, FileID: id, State: store.MediaPending, UpdatedAt: at}
	}
	full := &store.MediaFile{IMEI: a, CameraID: 1, FileType: store.FileVideo, FileID: "f1", State: store.MediaUploaded,
		Refs: 2, Blob: "blob/1", Size: 1 << 40, ContentType: "video/mp4", Attempts: 2, Error: "late",
		RequestedAt: at.Add(-time.Minute), UploadedAt: at, UpdatedAt: at, RecordedAt: at.Add(-time.Hour), Ownership: 3}
	files := []*store.MediaFile{
		file(b, 1, store.FileVideo, "x"),
		file(a, 2, store.FileVideo, "f1"),
		file(a, 10, store.FileVideo, "f1"),
		full,
		file(a, 1, store.FileSnapshot, "f1"),
		file(a, 1, store.FileADAS, "auto-1"),
		file(a, 1, store.FileADAS, "auto-0"),
	}
	f.update(func(tx *tx) error {
		if _, err := tx.MediaFiles().Get(full.Ref()); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get of a file never stored: %v; want not found", err)
		}
		for _, m := range files {
			if err := tx.MediaFiles().Put(m, m.FileID != "auto-0"); err != nil {
				return err
			}
		}
		return nil
	})
	f.view(func(tx *tx) error {
		got, err := tx.MediaFiles().Get(full.Ref())
		if err != nil || !reflect.DeepEqual(got, full) {
			t.Errorf("Get = %+v, %v\nwant %+v", got, err, full)
		}
		got, err = tx.MediaFiles().Get(files[0].Ref())
		if err != nil || !reflect.DeepEqual(got, files[0]) || !got.RequestedAt.IsZero() || !got.RecordedAt.IsZero() {
			t.Errorf("Get of a file with zero times = %+v, %v", got, err)
		}
		pending, err := tx.MediaFiles().Pending(0)
		want := []string{a + "/adas/1/auto-1", a + "/snapshot/1/f1", a + "/video/1/f1", a + "/video/10/f1",
			a + "/video/2/f1", b + "/video/1/x"}
		if err != nil || !slices.Equal(mediaKeys(pending), want) {
			t.Errorf("Pending = %q, %v\nwant %q", mediaKeys(pending), err, want)
		}
		if pending, err := tx.MediaFiles().Pending(2); err != nil || !slices.Equal(mediaKeys(pending), want[:2]) {
			t.Errorf("Pending(2) = %q, %v; want %q", mediaKeys(pending), err, want[:2])
		}
		videos, err := tx.MediaFiles().OfType(a, store.FileVideo)
		if want := []string{a + "/video/1/f1", a + "/video/10/f1", a + "/video/2/f1"}; err != nil || !slices.Equal(mediaKeys(videos), want) {
			t.Errorf("OfType(video) = %q, %v; want %q", mediaKeys(videos), err, want)
		}
		adas, err := tx.MediaFiles().OfType(a, store.FileADAS)
		if want := []string{a + "/adas/1/auto-0", a + "/adas/1/auto-1"}; err != nil || !slices.Equal(mediaKeys(adas), want) {
			t.Errorf("OfType(adas) = %q, %v; want %q", mediaKeys(adas), err, want)
		}
		if none, err := tx.MediaFiles().OfType(f.imeis[2], store.FileVideo); err != nil || len(none) != 0 {
			t.Errorf("OfType of a device without files = %v, %v", none, err)
		}
		return nil
	})

	// Settled, replaced, deleted: off the pending list.
	f.update(func(tx *tx) error {
		settled := *full
		settled.State, settled.Refs = store.MediaFailed, 1
		if err := tx.MediaFiles().Put(&settled, false); err != nil {
			return err
		}
		if err := tx.MediaEventRefs().Add(files[1].Ref(), 5); err != nil {
			return err
		}
		if err := tx.MediaFiles().Delete(files[1].Ref()); err != nil {
			return err
		}
		return tx.MediaFiles().Delete(store.MediaRef{IMEI: a, CameraID: 9, FileType: store.FileVideo, FileID: "none"})
	})
	f.view(func(tx *tx) error {
		if m, err := tx.MediaFiles().Get(full.Ref()); err != nil || m.State != store.MediaFailed || m.Refs != 1 {
			t.Errorf("replaced file %+v, %v", m, err)
		}
		if _, err := tx.MediaFiles().Get(files[1].Ref()); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted file: %v; want not found", err)
		}
		if ids, err := tx.MediaEventRefs().EventIDs(files[1].Ref()); err != nil || len(ids) != 0 {
			t.Errorf("event references of the deleted file %v, %v", ids, err)
		}
		pending, err := tx.MediaFiles().Pending(0)
		want := []string{a + "/adas/1/auto-1", a + "/snapshot/1/f1", a + "/video/10/f1", b + "/video/1/x"}
		if err != nil || !slices.Equal(mediaKeys(pending), want) {
			t.Errorf("Pending after the changes = %q, %v\nwant %q", mediaKeys(pending), err, want)
		}
		return nil
	})

	// The schema refuses a state the store does not know.
	bad := file(a, 1, store.FileVideo, "bad")
	bad.State = "lost"
	if err := f.e.update(context.Background(), func(tx *tx) error { return tx.MediaFiles().Put(bad, true) }); err == nil {
		t.Error("a file in an unknown state was stored")
	}
}

// TestMediaPendingUsesItsIndex reads the pending list through the partial
// index, in its order, without sorting.
func TestMediaPendingUsesItsIndex(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	f.view(func(tx *tx) error {
		if _, err := tx.exec(`SET LOCAL enable_seqscan = off`); err != nil {
			return err
		}
		rows, err := tx.pg.Query(tx.ctx, `EXPLAIN SELECT `+mediaFileColumns+` FROM media_files WHERE pending
			ORDER BY `+mediaKeyOrder+` LIMIT 10`)
		if err != nil {
			return err
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			plan = append(plan, line)
		}
		p := strings.Join(plan, "\n")
		if !strings.Contains(p, "media_files_pending") || strings.Contains(p, "Sort") {
			t.Errorf("the pending list is not read in the order of its index:\n%s", p)
		}
		return rows.Err()
	})
}

// TestMediaEventRefs records references once each, lists their event ids
// in ascending order and forgets them; forgetting one not recorded is no
// error.
func TestMediaEventRefs(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	m := &store.MediaFile{IMEI: f.imeis[0], CameraID: 1, FileType: store.FileVideo, FileID: "f1", State: store.MediaPending,
		UpdatedAt: time.Now()}
	other := *m
	other.CameraID = 2
	f.update(func(tx *tx) error {
		for _, m := range []*store.MediaFile{m, &other} {
			if err := tx.MediaFiles().Put(m, true); err != nil {
				return err
			}
		}
		for _, id := range []int64{7, 3, 7, 12} {
			if err := tx.MediaEventRefs().Add(m.Ref(), id); err != nil {
				return err
			}
		}
		return tx.MediaEventRefs().Add(other.Ref(), 4)
	})
	ids := func() []int64 {
		t.Helper()
		var ids []int64
		f.view(func(tx *tx) (err error) { ids, err = tx.MediaEventRefs().EventIDs(m.Ref()); return err })
		return ids
	}
	if got := ids(); !slices.Equal(got, []int64{3, 7, 12}) {
		t.Fatalf("EventIDs = %v; want [3 7 12]", got)
	}
	f.update(func(tx *tx) error {
		if err := tx.MediaEventRefs().Delete(m.Ref(), 7); err != nil {
			return err
		}
		return tx.MediaEventRefs().Delete(m.Ref(), 99)
	})
	if got := ids(); !slices.Equal(got, []int64{3, 12}) {
		t.Fatalf("EventIDs after a delete = %v; want [3 12]", got)
	}
	f.view(func(tx *tx) error {
		if got, err := tx.MediaEventRefs().EventIDs(other.Ref()); err != nil || !slices.Equal(got, []int64{4}) {
			t.Errorf("EventIDs of the other file = %v, %v", got, err)
		}
		return nil
	})
}

// TestMediaTrash keeps each blob key once and lists them in byte order.
func TestMediaTrash(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	f.update(func(tx *tx) error {
		for _, k := range []string{"b/2", "a/1", "b/2", "B/3", "a/1/x"} {
			if err := tx.MediaTrash().Add(k); err != nil {
				return err
			}
		}
		return nil
	})
	list := func(limit int) []string {
		t.Helper()
		var keys []string
		f.view(func(tx *tx) (err error) { keys, err = tx.MediaTrash().List(limit); return err })
		return keys
	}
	if got, want := list(0), []string{"B/3", "a/1", "a/1/x", "b/2"}; !slices.Equal(got, want) {
		t.Fatalf("List(0) = %q; want %q", got, want)
	}
	if got, want := list(2), []string{"B/3", "a/1"}; !slices.Equal(got, want) {
		t.Fatalf("List(2) = %q; want %q", got, want)
	}
	f.update(func(tx *tx) error {
		if err := tx.MediaTrash().Delete("a/1"); err != nil {
			return err
		}
		return tx.MediaTrash().Delete("never")
	})
	if got, want := list(-1), []string{"B/3", "a/1/x", "b/2"}; !slices.Equal(got, want) {
		t.Fatalf("List after a delete = %q; want %q", got, want)
	}
}

// TestMediaFilesGetMany reads many files in one round trip, in the order
// asked, each as Get reads it: a file asked for twice twice, one not
// stored as nil.
func TestMediaFilesGetMany(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a, b := f.imeis[0], f.imeis[1]
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	video := &store.MediaFile{IMEI: a, CameraID: 1, FileType: store.FileVideo, FileID: "f1", State: store.MediaUploaded,
		Refs: 1, Blob: "blob/1", Size: 10, ContentType: "video/mp4", UpdatedAt: at, Ownership: 3}
	snap := &store.MediaFile{IMEI: b, CameraID: 2, FileType: store.FileSnapshot, FileID: "f1", State: store.MediaPending,
		UpdatedAt: at}
	f.update(func(tx *tx) error {
		for _, m := range []*store.MediaFile{video, snap} {
			if err := tx.MediaFiles().Put(m, false); err != nil {
				return err
			}
		}
		return nil
	})
	missing := store.MediaRef{IMEI: a, CameraID: 2, FileType: store.FileVideo, FileID: "f1"}
	refs := []store.MediaRef{snap.Ref(), missing, video.Ref(), snap.Ref()}
	f.view(func(tx *tx) error {
		trips := pipeOf(tx).trips
		got, err := tx.MediaFiles().(store.MediaFileLookup).GetMany(refs)
		if err != nil {
			return err
		}
		if n := pipeOf(tx).trips - trips; n != 1 {
			t.Errorf("%d round trips for %d files, want 1", n, len(refs))
		}
		want := []*store.MediaFile{snap, nil, video, snap}
		if len(got) != len(want) {
			t.Fatalf("%d files for %d refs", len(got), len(refs))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("file %d (%s): %+v, want %+v", i, refs[i].Key(), got[i], want[i])
			}
		}
		none, err := tx.MediaFiles().(store.MediaFileLookup).GetMany(nil)
		if err == nil && len(none) != 0 {
			t.Errorf("no refs: %v", none)
		}
		return err
	})
}
