package postgres

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestMediaFileConstraints: the schema refuses a state the store does not
// know, and a file's event references go with it (the engine suite,
// store/enginetest, tests the files and references themselves).
func TestMediaFileConstraints(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	m := &store.MediaFile{IMEI: f.imeis[0], CameraID: 2, FileType: store.FileVideo, FileID: "f1", State: store.MediaPending,
		UpdatedAt: time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)}
	f.update(func(tx *tx) error {
		if err := tx.MediaFiles().Put(m, true); err != nil {
			return err
		}
		if err := tx.MediaEventRefs().Add(m.Ref(), 5); err != nil {
			return err
		}
		return tx.MediaFiles().Delete(m.Ref())
	})
	if n := f.count(`media_event_refs`); n != 0 {
		t.Errorf("%d event references of the deleted file left", n)
	}
	bad := *m
	bad.FileID, bad.State = "bad", "lost"
	if err := f.e.update(context.Background(), func(tx *tx) error { return tx.MediaFiles().Put(&bad, true) }); err == nil {
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
