package postgres

import (
	"context"
	"slices"
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

// TestMediaFilesUploaded tells of many files in one round trip, in the
// order asked: uploaded only where the file is stored and uploaded, a file
// asked for twice twice.
func TestMediaFilesUploaded(t *testing.T) {
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
	refs := []store.MediaRef{snap.Ref(), missing, video.Ref(), snap.Ref(), video.Ref()}
	f.view(func(tx *tx) error {
		lookup := tx.MediaFiles().(store.MediaUploadedLookup)
		trips := pipeOf(tx).trips
		got, err := lookup.Uploaded(refs)
		if err != nil {
			return err
		}
		if n := pipeOf(tx).trips - trips; n != 1 {
			t.Errorf("%d round trips for %d files, want 1", n, len(refs))
		}
		if want := []bool{false, false, true, false, true}; !slices.Equal(got, want) {
			t.Errorf("uploaded %v, want %v", got, want)
		}
		none, err := lookup.Uploaded(nil)
		if err == nil && len(none) != 0 {
			t.Errorf("no refs: %v", none)
		}
		return err
	})
}

// TestPageTellsItsFilesUploaded: a page of events read in a read-only
// transaction says whether each of its files is uploaded, and Uploaded
// answers for the page's files from that, without a round trip; a file the
// page did not read is read. A transaction that may write reads them all.
func TestPageTellsItsFilesUploaded(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	clip := store.EventFile{CameraID: 1, FileID: "1772366400", FileType: store.FileVideo}
	snap := store.EventFile{CameraID: 2, FileID: "1772366401", FileType: store.FileSnapshot}
	a, b, bare := newEvent(evIMEI, "button", 0), newEvent(evIMEI, "button", time.Minute), newEvent(evIMEI, "button", 2*time.Minute)
	a.Files, b.Files = []store.EventFile{clip, snap}, []store.EventFile{snap}
	f.insert(t, a, b, bare)
	ref := func(f store.EventFile) store.MediaRef {
		return store.MediaRef{IMEI: evIMEI, CameraID: f.CameraID, FileType: f.FileType, FileID: f.FileID}
	}
	f.update(t, func(tx *tx) error {
		for _, m := range []*store.MediaFile{
			{IMEI: evIMEI, CameraID: clip.CameraID, FileType: clip.FileType, FileID: clip.FileID, State: store.MediaUploaded,
				Refs: 1, Blob: "b/1", Size: 10, UpdatedAt: eventT0},
			{IMEI: evIMEI, CameraID: snap.CameraID, FileType: snap.FileType, FileID: snap.FileID, State: store.MediaRequested,
				Refs: 2, UpdatedAt: eventT0},
		} {
			if err := tx.MediaFiles().Put(m, false); err != nil {
				return err
			}
		}
		return nil
	})
	elsewhere := store.MediaRef{IMEI: evIMEI, CameraID: 1, FileType: store.FileVideo, FileID: "1772366499"}
	refs := []store.MediaRef{ref(clip), ref(snap), elsewhere}
	want := []bool{true, false, false}
	check := func(tx *tx, what string, wantTrips int) error {
		page, n, err := tx.Events().ByOrganization(1, store.OrgEventFilter{Start: eventT0.Add(-time.Hour), End: eventT0.Add(time.Hour)},
			store.Page{Limit: 10})
		if err != nil {
			return err
		}
		if n != 3 || len(page) != 3 || len(page[0].Files) != 2 || len(page[1].Files) != 1 || len(page[2].Files) != 0 {
			t.Fatalf("%s: a page of %d of %d events, want all 3 with their files: %+v", what, len(page), n, page)
		}
		lookup := tx.MediaFiles().(store.MediaUploadedLookup)
		trips := pipeOf(tx).trips
		got, err := lookup.Uploaded(refs[:2])
		if err != nil {
			return err
		}
		if n := pipeOf(tx).trips - trips; n != wantTrips {
			t.Errorf("%s: the page's files took %d round trips, want %d", what, n, wantTrips)
		}
		if !slices.Equal(got, want[:2]) {
			t.Errorf("%s: the page's files uploaded %v, want %v", what, got, want[:2])
		}
		trips = pipeOf(tx).trips
		if got, err = lookup.Uploaded(refs); err != nil {
			return err
		}
		if n := pipeOf(tx).trips - trips; n != 1 {
			t.Errorf("%s: with a file the page did not read, %d round trips, want 1", what, n)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: with a file the page did not read, uploaded %v, want %v", what, got, want)
		}
		return nil
	}
	f.view(t, func(tx *tx) error { return check(tx, "a read", 0) })
	f.update(t, func(tx *tx) error { return check(tx, "a transaction that may write", 1) })
}
