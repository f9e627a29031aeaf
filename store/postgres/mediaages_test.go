package postgres

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// ageRows lists the media_ages rows as class/imei/day/key, in key order.
func (f *deviceStateFixture) ageRows(day0 time.Time) []string {
	f.t.Helper()
	var out []string
	f.view(func(tx *tx) error {
		rows, err := tx.pg.Query(tx.ctx, `SELECT class, imei, recorded_at, file_type, camera_id, file_id FROM media_ages
			ORDER BY class, imei, recorded_at, file_type, camera_id, file_id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var class, imei, typ, id string
			var at time.Time
			var cam int
			if err := rows.Scan(&class, &imei, &at, &typ, &cam, &id); err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s/%s/%v/%s/%d/%s", class, imei, at.Sub(day0).Hours()/24, typ, cam, id))
		}
		return rows.Err()
	})
	return out
}

// TestMediaAgesTakeDue indexes files of three devices and takes the due
// entries of one class in batches of two: device by device, oldest first,
// each by the cutoff of its file's ownership (0 for an entry whose file is
// gone, which goes alone), none at or after a device's latest cutoff, and
// none of another class.
func TestMediaAgesTakeDue(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a, b, c := f.imeis[0], f.imeis[1], f.imeis[2]
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
	f.update(func(tx *tx) error {
		for _, e := range entries {
			ref := store.MediaRef{IMEI: e.imei, CameraID: 1, FileType: store.FileVideo, FileID: e.id}
			// Sub-millisecond parts are dropped: the index is to the millisecond.
			a := store.MediaAge{Ref: ref, Class: e.class, RecordedAt: day(e.at).Add(999 * time.Microsecond)}
			if err := tx.MediaAges().Add(a); err != nil {
				return err
			}
			if err := tx.MediaAges().Add(a); err != nil { // indexed once
				return err
			}
			if !e.stored {
				continue
			}
			m := store.MediaFile{IMEI: e.imei, CameraID: 1, FileType: store.FileVideo, FileID: e.id, State: store.MediaUploaded,
				Refs: 1, UpdatedAt: day0, RecordedAt: day(e.at), Ownership: e.owner}
			files[e.id] = m
			if err := tx.MediaFiles().Put(&m, false); err != nil {
				return err
			}
		}
		return nil
	})
	if n := len(f.ageRows(day0)); n != len(entries) {
		t.Fatalf("%d entries indexed; want %d", n, len(entries))
	}
	owners := map[string]*store.OwnerCutoffs{
		a: ownerCutoffs(t, store.Cutoffs{10: day(10), 20: day(2.5)}, map[int64]int64{0: 10, 1: 10, 2: 20, 3: 30}),
		b: ownerCutoffs(t, store.Cutoffs{10: day(10)}, map[int64]int64{0: 10}),
	}
	take := func(from []byte) ([]string, int, []byte, []string) {
		t.Helper()
		var asked, ids []string
		var n int
		var resume []byte
		f.update(func(tx *tx) error {
			asked, ids = nil, nil
			due, k, next, err := tx.MediaAges().TakeDue(front, deviceStatePurge(owners, &asked, from, 2))
			for _, m := range due {
				if m != files[m.FileID] {
					t.Errorf("TakeDue returned %+v; want the stored %+v", m, files[m.FileID])
				}
				ids = append(ids, m.FileID)
			}
			n, resume = k, next
			return err
		})
		return ids, n, resume, asked
	}

	ids, n, resume, asked := take(nil)
	if !slices.Equal(ids, []string{"f1"}) || n != 2 || resume == nil || !slices.Equal(asked, []string{a}) {
		t.Fatalf("first batch took files %q and %d entries, resume %q, asked for %q; want f1, 2 (with the gone file's), a position, %q",
			ids, n, resume, asked, a)
	}
	ids, n, resume, asked = take(resume)
	if !slices.Equal(ids, []string{"f2"}) || n != 1 || resume != nil || !slices.Equal(asked, []string{a, b, c}) {
		t.Fatalf("second batch took files %q and %d entries, resume %q, asked for %q; want f2, 1, none, every device",
			ids, n, resume, asked)
	}
	want := []string{
		"f/" + a + "/3/video/1/f3", "f/" + a + "/4/video/1/f4", "f/" + a + "/20/video/1/g",
		"f/" + b + "/12/video/1/b1", "f/" + c + "/1/video/1/c1", "r/" + a + "/1/video/1/r1",
	}
	if got := f.ageRows(day0); !slices.Equal(got, want) {
		t.Fatalf("entries left\n got %q\nwant %q", got, want)
	}
	if ids, n, resume, _ := take(nil); len(ids) != 0 || n != 0 || resume != nil {
		t.Fatalf("a batch with nothing due took %q, %d, resume %q", ids, n, resume)
	}

	// Delete finds an entry by its age to the millisecond; deleting one
	// not indexed is no error.
	f.update(func(tx *tx) error {
		ref := store.MediaRef{IMEI: a, CameraID: 1, FileType: store.FileVideo, FileID: "g"}
		if err := tx.MediaAges().Delete(store.MediaAge{Ref: ref, Class: front, RecordedAt: day(20).Add(300 * time.Microsecond)}); err != nil {
			return err
		}
		return tx.MediaAges().Delete(store.MediaAge{Ref: ref, Class: rear, RecordedAt: day(20)})
	})
	if got := f.ageRows(day0); slices.Contains(got, "f/"+a+"/20/video/1/g") || len(got) != len(want)-1 {
		t.Fatalf("entries after a delete %q", got)
	}
}

// TestMediaAgesTakeDueManyEntries takes the due entries of a device with
// more entries than one read returns, among them entries of an ownership
// that is not due: in batches of 90, then all in one batch.
func TestMediaAgesTakeDueManyEntries(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a := f.imeis[0]
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const class = store.MediaClass('x')
	add := func(from, to int) {
		f.update(func(tx *tx) error {
			for i := from; i < to; i++ {
				ref := store.MediaRef{IMEI: a, CameraID: 50, FileType: store.FileSnapshot, FileID: fmt.Sprintf("s%03d", i)}
				at := day0.Add(time.Duration(i) * time.Minute)
				// Every third file is of the earlier ownership, whose
				// organization keeps its files.
				m := store.MediaFile{IMEI: a, CameraID: 50, FileType: store.FileSnapshot, FileID: ref.FileID,
					State: store.MediaUploaded, UpdatedAt: at, RecordedAt: at, Ownership: 1 + int64(i%3/2)}
				if err := tx.MediaFiles().Put(&m, false); err != nil {
					return err
				}
				if err := tx.MediaAges().Add(store.MediaAge{Ref: ref, Class: class, RecordedAt: at}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	add(0, 300) // 200 due, 100 kept
	owners := map[string]*store.OwnerCutoffs{
		a: ownerCutoffs(t, store.Cutoffs{10: day0.AddDate(0, 0, 1)}, map[int64]int64{1: 10, 2: 20}),
	}
	var batches, taken int
	var from []byte
	for {
		var n int
		f.update(func(tx *tx) error {
			due, k, next, err := tx.MediaAges().TakeDue(class, deviceStatePurge(owners, nil, from, 90))
			if len(due) != k {
				t.Errorf("batch %d returned %d files of %d entries", batches, len(due), k)
			}
			for _, m := range due {
				if m.Ownership != 1 {
					t.Errorf("took %s of ownership %d", m.FileID, m.Ownership)
				}
			}
			n, from = k, next
			return err
		})
		batches++
		taken += n
		if n > 90 {
			t.Fatalf("a batch of 90 took %d", n)
		}
		if from == nil {
			break
		}
	}
	if taken != 200 || batches != 3 {
		t.Fatalf("took %d entries in %d batches; want 200 in 3", taken, batches)
	}
	add(300, 600)
	f.update(func(tx *tx) error {
		due, n, next, err := tx.MediaAges().TakeDue(class, deviceStatePurge(owners, nil, nil, 1000))
		if len(due) != 200 || n != 200 || next != nil {
			t.Errorf("one batch took %d files, %d entries, resume %q; want 200, 200, none", len(due), n, next)
		}
		return err
	})
	if n := f.count(`media_ages`); n != 200 {
		t.Fatalf("%d entries left; want the 200 kept", n)
	}
}
