package enginetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// mediaTests are the tests of media file records, their event references,
// the media age index and the trash of blob keys.
var mediaTests = []test{
	{"MediaFiles", testMediaFiles},
	{"MediaEventRefs", testMediaEventRefs},
	{"MediaTrash", testMediaTrash},
	{"MediaAgesTakeDue", testMediaAgesTakeDue},
	{"MediaAgesTakeDueManyEntries", testMediaAgesTakeDueManyEntries},
}

// mediaKeys are the keys of files, in their order.
func mediaKeys(files []store.MediaFile) []string {
	keys := []string{}
	for _, m := range files {
		keys = append(keys, m.Ref().Key())
	}
	return keys
}

// testMediaFiles stores files of two devices, reads them back whole, and
// lists the pending ones and those of one type in the order of their keys
// (camera ids as text); a Put that is not pending, and a Delete, take a
// file off the pending list.
func testMediaFiles(t *testing.T, e store.Engine) {
	imeis := seedDevices(t, e, 3)
	a, b := imeis[0], imeis[1]
	at := testTime
	file := func(imei string, cam int, typ, id string) *store.MediaFile {
		return &store.MediaFile{IMEI: imei, CameraID: cam, FileType: typ, FileID: id, State: store.MediaPending, UpdatedAt: at}
	}
	full := &store.MediaFile{IMEI: a, CameraID: 1, FileType: store.FileVideo, FileID: "f1", State: store.MediaUploaded,
		Refs: 2, Blob: "blob/1", Size: 1 << 40, ContentType: "video/mp4", Attempts: 2, Error: "late",
		RequestedAt: at.Add(-time.Minute), UploadedAt: at, UpdatedAt: at, RecordedAt: at.Add(-time.Hour), Ownership: 3, ClipRequest: 1796036317000001}
	files := []*store.MediaFile{
		file(b, 1, store.FileVideo, "x"),
		file(a, 2, store.FileVideo, "f1"),
		file(a, 10, store.FileVideo, "f1"),
		full,
		file(a, 1, store.FileSnapshot, "f1"),
		file(a, 1, store.FileADAS, "auto-1"),
		file(a, 1, store.FileADAS, "auto-0"), // not pending
	}
	get := func(r store.MediaRef) (*store.MediaFile, error) {
		t.Helper()
		var got *store.MediaFile
		err := e.View(t.Context(), func(rs store.Records) (err error) { got, err = rs.MediaFiles().Get(r); return err })
		return got, err
	}
	pending := func(limit int) []string {
		t.Helper()
		var got []store.MediaFile
		read(t, e, func(r store.Records) (err error) { got, err = r.MediaFiles().Pending(limit); return err })
		return mediaKeys(got)
	}
	ofType := func(imei, typ string) []string {
		t.Helper()
		var got []store.MediaFile
		read(t, e, func(r store.Records) (err error) { got, err = r.MediaFiles().OfType(imei, typ); return err })
		return mediaKeys(got)
	}
	_, err := get(full.Ref())
	wantErr(t, "Get of a file never stored", err, store.ErrNotFound)
	write(t, e, func(r store.Records) error {
		for _, m := range files {
			if err := r.MediaFiles().Put(m, m.FileID != "auto-0"); err != nil {
				return err
			}
		}
		return nil
	})
	for _, want := range files {
		got, err := get(want.Ref())
		wantErr(t, "Get "+want.Ref().Key(), err, nil)
		wantEqual(t, "Get "+want.Ref().Key(), got, want)
	}
	wantPending := []string{a + "/adas/1/auto-1", a + "/snapshot/1/f1", a + "/video/1/f1", a + "/video/10/f1",
		a + "/video/2/f1", b + "/video/1/x"}
	wantEqual(t, "Pending(0)", pending(0), wantPending)
	wantEqual(t, "Pending(2)", pending(2), wantPending[:2])
	wantEqual(t, "OfType(a, video)", ofType(a, store.FileVideo), []string{a + "/video/1/f1", a + "/video/10/f1", a + "/video/2/f1"})
	wantEqual(t, "OfType(a, adas)", ofType(a, store.FileADAS), []string{a + "/adas/1/auto-0", a + "/adas/1/auto-1"})
	wantEqual(t, "OfType(b, video)", ofType(b, store.FileVideo), []string{b + "/video/1/x"})
	wantEqual(t, "OfType of a device without files", ofType(imeis[2], store.FileVideo), []string{})

	// Settled, replaced, deleted: off the pending list.
	settled := *full
	settled.State, settled.Refs = store.MediaFailed, 1
	write(t, e, func(r store.Records) error {
		if err := r.MediaFiles().Put(&settled, false); err != nil {
			return err
		}
		if err := r.MediaFiles().Delete(files[1].Ref()); err != nil {
			return err
		}
		return r.MediaFiles().Delete(store.MediaRef{IMEI: a, CameraID: 9, FileType: store.FileVideo, FileID: "none"})
	})
	got, err := get(full.Ref())
	wantErr(t, "Get of the replaced file", err, nil)
	wantEqual(t, "the replaced file", got, &settled)
	_, err = get(files[1].Ref())
	wantErr(t, "Get of the deleted file", err, store.ErrNotFound)
	wantEqual(t, "Pending after the changes", pending(0),
		[]string{a + "/adas/1/auto-1", a + "/snapshot/1/f1", a + "/video/10/f1", b + "/video/1/x"})
	wantEqual(t, "OfType(a, video) after the changes", ofType(a, store.FileVideo), []string{a + "/video/1/f1", a + "/video/10/f1"})
}

// testMediaEventRefs records references once each, lists their event ids
// in ascending order and forgets them; forgetting one not recorded is no
// error, and a file's references go with the file.
func testMediaEventRefs(t *testing.T, e store.Engine) {
	a := seedDevices(t, e, 1)[0]
	m := &store.MediaFile{IMEI: a, CameraID: 1, FileType: store.FileVideo, FileID: "f1", State: store.MediaPending,
		UpdatedAt: testTime}
	other := *m
	other.CameraID = 2
	write(t, e, func(r store.Records) error {
		for _, m := range []*store.MediaFile{m, &other} {
			if err := r.MediaFiles().Put(m, true); err != nil {
				return err
			}
		}
		for _, id := range []int64{7, 3, 7, 12} {
			if err := r.MediaEventRefs().Add(m.Ref(), id); err != nil {
				return err
			}
		}
		return r.MediaEventRefs().Add(other.Ref(), 4)
	})
	ids := func(ref store.MediaRef) []int64 {
		t.Helper()
		var ids []int64
		read(t, e, func(r store.Records) (err error) { ids, err = r.MediaEventRefs().EventIDs(ref); return err })
		if len(ids) == 0 {
			return nil // none, as nil or empty
		}
		return ids
	}
	wantEqual(t, "EventIDs", ids(m.Ref()), []int64{3, 7, 12})
	write(t, e, func(r store.Records) error {
		if err := r.MediaEventRefs().Delete(m.Ref(), 7); err != nil {
			return err
		}
		return r.MediaEventRefs().Delete(m.Ref(), 99)
	})
	wantEqual(t, "EventIDs after a delete", ids(m.Ref()), []int64{3, 12})
	wantEqual(t, "EventIDs of the other file", ids(other.Ref()), []int64{4})

	// Deleting the file takes its references with it: stored again under
	// the same name it is referenced by none, and the other file keeps
	// its own.
	write(t, e, func(r store.Records) error { return r.MediaFiles().Delete(m.Ref()) })
	wantEqual(t, "EventIDs of the deleted file", ids(m.Ref()), []int64(nil))
	write(t, e, func(r store.Records) error { return r.MediaFiles().Put(m, true) })
	wantEqual(t, "EventIDs of the file stored again", ids(m.Ref()), []int64(nil))
	wantEqual(t, "EventIDs of the other file after the delete", ids(other.Ref()), []int64{4})
}

// testMediaTrash keeps each blob key once and lists them in byte order.
func testMediaTrash(t *testing.T, e store.Engine) {
	write(t, e, func(r store.Records) error {
		for _, k := range []string{"b/2", "a/1", "b/2", "B/3", "a/1/x"} {
			if err := r.MediaTrash().Add(k); err != nil {
				return err
			}
		}
		return nil
	})
	list := func(limit int) []string {
		t.Helper()
		var keys []string
		read(t, e, func(r store.Records) (err error) { keys, err = r.MediaTrash().List(limit); return err })
		return keys
	}
	wantEqual(t, "List(0)", list(0), []string{"B/3", "a/1", "a/1/x", "b/2"})
	wantEqual(t, "List(2)", list(2), []string{"B/3", "a/1"})
	write(t, e, func(r store.Records) error {
		if err := r.MediaTrash().Delete("a/1"); err != nil {
			return err
		}
		return r.MediaTrash().Delete("never")
	})
	wantEqual(t, "List(-1) after a delete", list(-1), []string{"B/3", "a/1/x", "b/2"})
}

// takeDue runs one batch of the media purge of class in a transaction of
// its own, and returns the ids of the files it returned, how many entries
// it removed and where the next batch resumes.
func takeDue(t *testing.T, e store.Engine, class store.MediaClass, p store.SeriesPurge) ([]store.MediaFile, int, []byte) {
	t.Helper()
	var due []store.MediaFile
	var n int
	var next []byte
	write(t, e, func(r store.Records) (err error) { due, n, next, err = r.MediaAges().TakeDue(class, p); return err })
	return due, n, next
}

// fileIDs are the FileIDs of files, in their order.
func fileIDs(files []store.MediaFile) []string {
	ids := []string{}
	for _, m := range files {
		ids = append(ids, m.FileID)
	}
	return ids
}

// testMediaAgesTakeDue indexes files of three devices and takes the due
// entries of one class in batches of two: device by device, oldest first,
// each by the cutoff of its file's ownership (0 for an entry whose file is
// gone, which goes alone), none at or after a device's latest cutoff, and
// none of another class. Delete finds an entry by its age to the
// millisecond.
func testMediaAgesTakeDue(t *testing.T, e store.Engine) {
	imeis := seedDevices(t, e, 3)
	a, b, c := imeis[0], imeis[1], imeis[2]
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	day := func(d float64) time.Time { return day0.Add(time.Duration(d * 24 * float64(time.Hour))) }
	const front, rear = store.MediaClass('f'), store.MediaClass('r')
	type entry struct {
		imei   string
		class  store.MediaClass
		at     float64
		id     string
		owner  int64
		stored bool
	}
	entries := []entry{
		{a, front, 1, "f1", 1, true},
		{a, front, 1.5, "gone", 0, false},
		{a, front, 2, "f2", 1, true},
		{a, front, 3, "f3", 2, true},  // its organization's cutoff is day 2.5
		{a, front, 4, "f4", 3, true},  // an ownership of no known organization
		{a, front, 20, "g", 1, true},  // after the latest cutoff
		{a, rear, 1, "r1", 1, true},   // another class
		{b, front, 12, "b1", 0, true}, // after the device's only cutoff
		{c, front, 1, "c1", 0, true},  // a device with no cutoff
	}
	files := map[string]store.MediaFile{}
	write(t, e, func(r store.Records) error {
		for _, en := range entries {
			ref := store.MediaRef{IMEI: en.imei, CameraID: 1, FileType: store.FileVideo, FileID: en.id}
			// Sub-millisecond parts are dropped: the index is to the millisecond.
			age := store.MediaAge{Ref: ref, Class: en.class, RecordedAt: day(en.at).Add(999 * time.Microsecond)}
			if err := r.MediaAges().Add(age); err != nil {
				return err
			}
			if err := r.MediaAges().Add(age); err != nil { // indexed once
				return err
			}
			if !en.stored {
				continue
			}
			m := store.MediaFile{IMEI: en.imei, CameraID: 1, FileType: store.FileVideo, FileID: en.id, State: store.MediaUploaded,
				Refs: 1, UpdatedAt: day0, RecordedAt: day(en.at), Ownership: en.owner}
			files[en.id] = m
			if err := r.MediaFiles().Put(&m, false); err != nil {
				return err
			}
		}
		return nil
	})
	owners := map[string]*store.OwnerCutoffs{
		a: OwnerCutoffs(t, store.Cutoffs{10: day(10), 20: day(2.5)}, map[int64]int64{0: 10, 1: 10, 2: 20, 3: 30}),
		b: OwnerCutoffs(t, store.Cutoffs{10: day(10)}, map[int64]int64{0: 10}),
	}
	due, n, resume := takeDue(t, e, front, SeriesPurge(owners, nil, 2))
	wantEqual(t, "the first batch's files", due, []store.MediaFile{files["f1"]})
	if n != 2 || resume == nil {
		t.Fatalf("the first batch removed %d entries, resume %q; want 2 (with the gone file's) and a position", n, resume)
	}
	due, n, resume = takeDue(t, e, front, SeriesPurge(owners, resume, 2))
	wantEqual(t, "the second batch's files", due, []store.MediaFile{files["f2"]})
	if n != 1 || resume != nil {
		t.Fatalf("the second batch removed %d entries, resume %q; want 1 and none", n, resume)
	}
	due, n, resume = takeDue(t, e, front, SeriesPurge(owners, nil, 2))
	if len(due) != 0 || n != 0 || resume != nil {
		t.Fatalf("a batch with nothing due took %q, %d, resume %q", fileIDs(due), n, resume)
	}

	// Delete finds an entry by its age to the millisecond; deleting one
	// not indexed is no error.
	write(t, e, func(r store.Records) error {
		ref := store.MediaRef{IMEI: a, CameraID: 1, FileType: store.FileVideo, FileID: "g"}
		if err := r.MediaAges().Delete(store.MediaAge{Ref: ref, Class: front, RecordedAt: day(20).Add(300 * time.Microsecond)}); err != nil {
			return err
		}
		return r.MediaAges().Delete(store.MediaAge{Ref: ref, Class: rear, RecordedAt: day(20)})
	})

	// What is left, taken with every entry due: device by device, oldest
	// first, and the other class's.
	all := store.Cutoffs{10: day(100)}
	everyone := map[int64]int64{0: 10, 1: 10, 2: 10, 3: 10}
	allDue := map[string]*store.OwnerCutoffs{a: OwnerCutoffs(t, all, everyone), b: OwnerCutoffs(t, all, everyone),
		c: OwnerCutoffs(t, all, everyone)}
	due, n, resume = takeDue(t, e, front, SeriesPurge(allDue, nil, 100))
	if got := fileIDs(due); fmt.Sprint(got) != "[f3 f4 b1 c1]" || n != 4 || resume != nil {
		t.Errorf("the entries left of the class: %q, %d, resume %q; want [f3 f4 b1 c1], 4 and none", got, n, resume)
	}
	due, n, resume = takeDue(t, e, rear, SeriesPurge(allDue, nil, 100))
	wantEqual(t, "the other class's", due, []store.MediaFile{files["r1"]})
	if n != 1 || resume != nil {
		t.Errorf("the other class's: %d entries, resume %q; want 1 and none", n, resume)
	}
}

// testMediaAgesTakeDueManyEntries takes the due entries of a device with
// more entries than one read of an engine returns, among them entries of
// an ownership that is not due: in batches of 90, then all in one batch.
func testMediaAgesTakeDueManyEntries(t *testing.T, e store.Engine) {
	a := seedDevices(t, e, 1)[0]
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const class = store.MediaClass('x')
	add := func(from, to int) {
		t.Helper()
		write(t, e, func(r store.Records) error {
			for i := from; i < to; i++ {
				ref := store.MediaRef{IMEI: a, CameraID: 50, FileType: store.FileSnapshot, FileID: fmt.Sprintf("s%03d", i)}
				at := day0.Add(time.Duration(i) * time.Minute)
				// Every third file is of the earlier ownership, whose
				// organization keeps its files.
				m := store.MediaFile{IMEI: a, CameraID: 50, FileType: store.FileSnapshot, FileID: ref.FileID,
					State: store.MediaUploaded, UpdatedAt: at, RecordedAt: at, Ownership: 1 + int64(i%3/2)}
				if err := r.MediaFiles().Put(&m, false); err != nil {
					return err
				}
				if err := r.MediaAges().Add(store.MediaAge{Ref: ref, Class: class, RecordedAt: at}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	add(0, 300) // 200 due, 100 kept
	owners := map[string]*store.OwnerCutoffs{
		a: OwnerCutoffs(t, store.Cutoffs{10: day0.AddDate(0, 0, 1)}, map[int64]int64{1: 10, 2: 20}),
	}
	var sizes []int
	var taken []string
	var from []byte
	for len(sizes) < 10 {
		due, n, next := takeDue(t, e, class, SeriesPurge(owners, from, 90))
		if len(due) != n {
			t.Errorf("batch %d returned %d files of %d entries", len(sizes), len(due), n)
		}
		sizes, taken, from = append(sizes, n), append(taken, fileIDs(due)...), next
		if from == nil {
			break
		}
	}
	wantEqual(t, "the batches' sizes", sizes, []int{90, 90, 20})
	var want []string
	for i := range 300 {
		if i%3 != 2 {
			want = append(want, fmt.Sprintf("s%03d", i))
		}
	}
	wantEqual(t, "the files taken", taken, want)
	add(300, 600)
	due, n, next := takeDue(t, e, class, SeriesPurge(owners, nil, 1000))
	if len(due) != 200 || n != 200 || next != nil {
		t.Errorf("one batch took %d files, %d entries, resume %q; want 200, 200, none", len(due), n, next)
	}
	// Left: the 200 of the earlier ownership, all taken by a batch without
	// a limit.
	all := map[string]*store.OwnerCutoffs{a: OwnerCutoffs(t, store.Cutoffs{10: day0.AddDate(0, 0, 1)}, map[int64]int64{1: 10, 2: 10})}
	due, n, next = takeDue(t, e, class, SeriesPurge(all, nil, 0))
	if len(due) != 200 || n != 200 || next != nil || due[0].FileID != "s002" || due[199].FileID != "s599" {
		t.Errorf("the entries left: %d files, %d entries, resume %q; want 200 from s002 to s599, none", len(due), n, next)
	}
}
