package postgres

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

var eventT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	evIMEI  = "352045100000011"
	evIMEI2 = "352045100000029"
)

// eventFixture is an engine with the directory rows events reference:
// partners 1 and 2, organizations 1 and 2 of partner 1.
type eventFixture struct {
	e   *Engine
	ctx context.Context
}

// seedEvents opens a prepared engine on a new database, with the event
// partitions of the months around eventT0 and the partners and
// organizations the events of the tests reference.
func seedEvents(t *testing.T) *eventFixture {
	t.Helper()
	ctx := context.Background()
	e := openPrepared(t)
	ensureAround(t, e, eventT0, "events", "event_files")
	// The events of the tests name partner 1 and organization 1: the first
	// of a new database's identities.
	s := seeder{t, e, time.Now()}
	p1, p2 := s.partner("one"), s.partner("two")
	o1 := s.organization(store.Organization{Name: "first", PartnerID: p1.ID, SSOSalt: []byte{}, Retention: store.Retention{PurgeDays: 30}})
	o2 := s.organization(store.Organization{Name: "second", PartnerID: p1.ID, SSOSalt: []byte{}, Retention: store.Retention{PurgeDays: 30}})
	if p1.ID != 1 || p2.ID != 2 || o1.ID != 1 || o2.ID != 2 {
		t.Fatalf("partners %d and %d, organizations %d and %d; want 1 and 2 of each", p1.ID, p2.ID, o1.ID, o2.ID)
	}
	return &eventFixture{e: e, ctx: ctx}
}

// update runs fn in a write transaction and fails the test on its error.
func (f *eventFixture) update(t *testing.T, fn func(t *tx) error) {
	t.Helper()
	write(t, f.e, fn)
}

// view runs fn in a read transaction and fails the test on its error.
func (f *eventFixture) view(t *testing.T, fn func(t *tx) error) {
	t.Helper()
	read(t, f.e, fn)
}

// insert stores each event in one transaction and returns them with their
// ids.
func (f *eventFixture) insert(t *testing.T, evs ...*store.Event) []*store.Event {
	t.Helper()
	f.update(t, func(tx *tx) error {
		for _, ev := range evs {
			if err := tx.Events().Insert(ev); err != nil {
				return err
			}
		}
		return nil
	})
	return evs
}

// newEvent is a new event of organization 1 and partner 1 at eventT0 plus
// d, of type typ.
func newEvent(imei, typ string, d time.Duration) *store.Event {
	return &store.Event{IMEI: imei, OrganizationID: 1, PartnerID: 1, Type: typ, Time: eventT0.Add(d), Lat: 52.37, Lon: 4.89,
		Severity: store.SeverityMedium, Status: store.EventStatusNew, Ownership: 3, CreatedAt: eventT0.Add(d + time.Second)}
}

func eventIDs(es []store.Event) []int64 {
	out := []int64{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func idsOf(es ...*store.Event) []int64 {
	out := []int64{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestEventsRoundTrip(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	full := &store.Event{IMEI: evIMEI, OrganizationID: 1, PartnerID: 2, Type: store.EventGeoFence,
		Time: eventT0.Add(123 * time.Millisecond), Lat: -33.9, Lon: 151.2, Alt: 12.5, Speed: 61.5, Accuracy: 4,
		Severity: store.SeverityHigh, Status: store.EventStatusNew, Metadata: `[{"x":1.5,"y":0,"z":9.81,"time":1772366400,"speed":3}]`,
		Files: []store.EventFile{{CameraID: 2, FileID: "b.mp4", FileType: store.FileVideo},
			{CameraID: 1, FileID: "a.jpg", FileType: store.FileSnapshot}, {CameraID: 50, FileID: "aux", FileType: store.FileVideo}},
		GeoFenceID: 9, GeoFencePath: store.GeofenceEntered, GeoFenceName: "depot", SDCard: &store.SDCardInfo{UUID: "u-1", Manufacturer: "acme"},
		DriverID: 17, CameraID: 51, DeviceEventID: "dev-1", MediaNotified: true, Ownership: 4,
		Comments: []store.EventComment{{ID: 100, Comment: "seen", CreatedByAudienceName: "partner", CreatedByID: 5,
			CreatedByEmail: "a@example.com", CreatedAt: eventT0.Add(time.Hour + time.Microsecond)}},
		CreatedAt: eventT0.Add(time.Second + 7*time.Microsecond)}
	bare := &store.Event{IMEI: evIMEI2, OrganizationID: 2, Type: "button", Time: eventT0, Severity: store.SeverityLow,
		Status: store.EventStatusResolved, SDCard: &store.SDCardInfo{}, CreatedAt: eventT0}
	f.insert(t, full, bare)
	if full.ID <= 0 || bare.ID <= full.ID {
		t.Fatalf("ids %d, %d: want increasing ids", full.ID, bare.ID)
	}
	f.view(t, func(tx *tx) error {
		for _, want := range []*store.Event{full, bare} {
			got, err := tx.Events().Get(want.ID)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("event %d reads\n%+v\nwant\n%+v", want.ID, got, want)
			}
		}
		if _, err := tx.Events().Get(bare.ID + 1); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a missing event: %v, want store.ErrNotFound", err)
		}
		return nil
	})
	var nulls int
	err := f.e.pool.QueryRow(f.ctx, `SELECT num_nulls(partner_id, metadata, geofence_id, geofence_path, geofence_name,
		driver_id, camera_id, device_event_id) FROM events WHERE id = $1`, bare.ID).Scan(&nulls)
	if err != nil || nulls != 8 {
		t.Errorf("the absent members of an event are %d NULLs, %v; want 8", nulls, err)
	}

	// A comment id used twice is a conflict, not a silent overwrite.
	dup := newEvent(evIMEI, "button", time.Minute)
	dup.Comments = []store.EventComment{{ID: 100, Comment: "again", CreatedByAudienceName: "organization", CreatedAt: eventT0}}
	err = f.e.update(f.ctx, func(tx *tx) error { return tx.Events().Insert(dup) })
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("a comment id stored twice: %v, want store.ErrConflict", err)
	}
	// Identities are never given again, even after a rollback.
	next := f.insert(t, newEvent(evIMEI, "button", time.Minute))[0]
	if next.ID <= bare.ID+1 {
		t.Errorf("the event after a rolled back one has id %d; want more than %d", next.ID, bare.ID+1)
	}
}

// TestEventsUpdate rewrites an event: its review, its comments (one added,
// one changed, one gone) and its files, and comment ids come from their
// own sequence.
func TestEventsUpdate(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	ev := newEvent(evIMEI, "button", 0)
	ev.Files = []store.EventFile{{CameraID: 1, FileID: "a", FileType: store.FileVideo}, {CameraID: 2, FileID: "b", FileType: store.FileVideo}}
	other := newEvent(evIMEI, "button", time.Minute)
	f.insert(t, ev, other)
	var c1, c2, c3 int64
	f.update(t, func(tx *tx) (err error) {
		if c1, err = tx.Events().NextCommentID(); err != nil {
			return err
		}
		if c2, err = tx.Events().NextCommentID(); err != nil {
			return err
		}
		ev.Status, ev.Severity, ev.MediaNotified = store.EventStatusResolved, store.SeverityHigh, true
		ev.Comments = []store.EventComment{
			{ID: c1, Comment: "one", CreatedByAudienceName: "partner", CreatedByID: 5, CreatedAt: eventT0.Add(time.Hour)},
			{ID: c2, Comment: "two", CreatedByAudienceName: "organization", CreatedByEmail: "b@example.com", CreatedAt: eventT0.Add(2 * time.Hour)},
		}
		return tx.Events().Update(ev)
	})
	if c1 <= 0 || c2 <= c1 {
		t.Fatalf("comment ids %d, %d: want increasing ids", c1, c2)
	}
	f.update(t, func(tx *tx) (err error) {
		if c3, err = tx.Events().NextCommentID(); err != nil {
			return err
		}
		ev.Comments = []store.EventComment{
			{ID: c2, Comment: "two, edited", CreatedByAudienceName: "organization", CreatedAt: eventT0.Add(2 * time.Hour)},
			{ID: c3, Comment: "three", CreatedByAudienceName: "partner", CreatedAt: eventT0.Add(3 * time.Hour)},
		}
		ev.Files = []store.EventFile{{CameraID: 2, FileID: "c", FileType: store.FileSnapshot}}
		return tx.Events().Update(ev)
	})
	if c3 <= c2 {
		t.Fatalf("comment id %d after %d", c3, c2)
	}
	f.view(t, func(tx *tx) error {
		for _, want := range []*store.Event{ev, other} {
			got, err := tx.Events().Get(want.ID)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("event %d reads\n%+v\nwant\n%+v", want.ID, got, want)
			}
		}
		return nil
	})
	// Without comments or files an update removes them all.
	f.update(t, func(tx *tx) error {
		ev.Comments, ev.Files = nil, nil
		return tx.Events().Update(ev)
	})
	var files, comments int
	err := f.e.pool.QueryRow(f.ctx, `SELECT (SELECT count(*) FROM event_files), (SELECT count(*) FROM event_comments)`).Scan(&files, &comments)
	if err != nil || files != 0 || comments != 0 {
		t.Errorf("%d files and %d comments left, %v; want none", files, comments, err)
	}
	missing := newEvent(evIMEI, "button", 0)
	missing.ID = other.ID + 10
	err = f.e.update(f.ctx, func(tx *tx) error { return tx.Events().Update(missing) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("updating a missing event: %v, want store.ErrNotFound", err)
	}
}

// TestEventsDelete deletes an event with its files and comments, from
// every query; deleting it again is no error.
func TestEventsDelete(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	ev := newEvent(evIMEI, "button", 0)
	ev.Files = []store.EventFile{{CameraID: 1, FileID: "a", FileType: store.FileVideo}}
	ev.Comments = []store.EventComment{{ID: 1, Comment: "x", CreatedByAudienceName: "partner", CreatedAt: eventT0}}
	kept := newEvent(evIMEI, "button", time.Minute)
	f.insert(t, ev, kept)
	for range 2 {
		f.update(t, func(tx *tx) error { return tx.Events().Delete(ev) })
	}
	f.view(t, func(tx *tx) error {
		if _, err := tx.Events().Get(ev.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a deleted event: %v, want store.ErrNotFound", err)
		}
		got, n, err := tx.Events().ByDevice(evIMEI, store.DeviceEventFilter{}, store.Page{})
		if err != nil {
			return err
		}
		if !slices.Equal(eventIDs(got), idsOf(kept)) || n != 1 {
			t.Errorf("device events after a delete: %v of %d, want %v", eventIDs(got), n, idsOf(kept))
		}
		got, n, err = tx.Events().ByOrganization(1, store.OrgEventFilter{}, store.Page{Limit: 10})
		if err != nil {
			return err
		}
		if !slices.Equal(eventIDs(got), idsOf(kept)) || n != 1 {
			t.Errorf("organization events after a delete: %v of %d, want %v", eventIDs(got), n, idsOf(kept))
		}
		return nil
	})
	var files, comments int
	err := f.e.pool.QueryRow(f.ctx, `SELECT (SELECT count(*) FROM event_files), (SELECT count(*) FROM event_comments)`).Scan(&files, &comments)
	if err != nil || files != 0 || comments != 0 {
		t.Errorf("%d files and %d comments of the deleted event left, %v; want none", files, comments, err)
	}
}

// TestEventsByDevice pages a device's events by time then id, within an
// inclusive window, with each filter, and with a holder.
func TestEventsByDevice(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	a := newEvent(evIMEI, "button", 0)
	b := newEvent(evIMEI, "deceleration", time.Minute)
	c := newEvent(evIMEI, "button", time.Minute) // same time as b, later id
	d := newEvent(evIMEI, "button", 2*time.Minute)
	d.Status = store.EventStatusResolved
	elsewhere := newEvent(evIMEI2, "button", time.Minute)
	// From before ownership numbers: of organization 1, recorded at
	// eventT0+3m1s (created 1s after its time), and of organization 2.
	legacy := newEvent(evIMEI, "button", 3*time.Minute)
	legacy.Ownership = 0
	legacyOther := newEvent(evIMEI, "button", 4*time.Minute)
	legacyOther.Ownership, legacyOther.OrganizationID = 0, 2
	// An earlier owner's, in the default partition.
	old := newEvent(evIMEI, "button", -400*24*time.Hour)
	old.Ownership = 2
	// Inserted out of time order: the page is by time, not by id.
	f.insert(t, d, c, a, b, elsewhere, legacy, legacyOther, old)
	if c.ID >= b.ID {
		t.Fatalf("ids %d, %d", c.ID, b.ID)
	}
	window := store.DeviceEventFilter{Start: eventT0, End: eventT0.Add(2 * time.Minute)}
	with := func(change func(*store.DeviceEventFilter)) store.DeviceEventFilter {
		f := window
		change(&f)
		return f
	}
	holder := &store.Device{IMEI: evIMEI, OrganizationID: 1, Ownership: 3}
	legacyHolder := &store.Device{IMEI: evIMEI, OrganizationID: 1, CreatedAt: eventT0.Add(3*time.Minute + time.Second)}
	lateHolder := &store.Device{IMEI: evIMEI, OrganizationID: 1, CreatedAt: eventT0.Add(3*time.Minute + 2*time.Second)}
	tests := []struct {
		name  string
		f     store.DeviceEventFilter
		p     store.Page
		want  []*store.Event
		total int
	}{
		{"the window, by time then id", window, store.Page{}, []*store.Event{a, c, b, d}, 4},
		{"no window", store.DeviceEventFilter{}, store.Page{}, []*store.Event{old, a, c, b, d, legacy, legacyOther}, 7},
		{"from a start", store.DeviceEventFilter{Start: eventT0.Add(3 * time.Minute)}, store.Page{}, []*store.Event{legacy, legacyOther}, 2},
		{"to an end", store.DeviceEventFilter{End: eventT0}, store.Page{}, []*store.Event{old, a}, 2},
		{"a page", window, store.Page{Limit: 2, Offset: 1}, []*store.Event{c, b}, 4},
		{"the last page", window, store.Page{Limit: 3, Offset: 3}, []*store.Event{d}, 4},
		{"past the end", window, store.Page{Limit: 2, Offset: 9}, nil, 4},
		{"a type", with(func(f *store.DeviceEventFilter) { f.Types = map[string]bool{"deceleration": true} }), store.Page{}, []*store.Event{b}, 1},
		{"no types", with(func(f *store.DeviceEventFilter) { f.Types = map[string]bool{} }), store.Page{}, nil, 0},
		{"a status", with(func(f *store.DeviceEventFilter) { f.Status = store.EventStatusResolved }), store.Page{}, []*store.Event{d}, 1},
		{"a status, paged", with(func(f *store.DeviceEventFilter) { f.Status = store.EventStatusNew }), store.Page{Limit: 1, Offset: 1}, []*store.Event{c}, 3},
		{"the holder's ownership", store.DeviceEventFilter{Holder: holder}, store.Page{}, []*store.Event{a, c, b, d}, 4},
		{"no ownership, held by the organization since creation", store.DeviceEventFilter{Holder: legacyHolder}, store.Page{}, []*store.Event{legacy}, 1},
		{"no ownership, recorded before the holder came", store.DeviceEventFilter{Holder: lateHolder}, store.Page{}, nil, 0},
		{"another device as the holder", store.DeviceEventFilter{Holder: &store.Device{IMEI: evIMEI2, OrganizationID: 1, Ownership: 3}}, store.Page{}, nil, 0},
	}
	f.view(t, func(tx *tx) error {
		for _, tc := range tests {
			got, n, err := tx.Events().ByDevice(evIMEI, tc.f, tc.p)
			if err != nil {
				return err
			}
			if !slices.Equal(eventIDs(got), idsOf(tc.want...)) || n != tc.total {
				t.Errorf("%s: %v of %d, want %v of %d", tc.name, eventIDs(got), n, idsOf(tc.want...), tc.total)
			}
			for i := range min(len(got), len(tc.want)) {
				if tc.f.Holder != nil && !tc.f.Holder.HoldsEvent(&got[i]) {
					t.Errorf("%s: event %d is not the holder's by Device.HoldsEvent", tc.name, got[i].ID)
				}
			}
		}
		got, _, err := tx.Events().ByDevice(evIMEI, window, store.Page{Limit: 1})
		if err == nil && !reflect.DeepEqual(&got[0], a) {
			t.Errorf("a page's event reads %+v, want %+v", got[0], a)
		}
		return err
	})
}

// TestEventsByOrganization pages an organization's events with each of its
// filters.
func TestEventsByOrganization(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	a := newEvent(evIMEI, "button", 0)
	b := newEvent(evIMEI2, "deceleration", time.Minute)
	b.PartnerID = 2
	c := newEvent(evIMEI2, "button", time.Minute)
	c.Status = store.EventStatusResolved
	d := newEvent(evIMEI, "button", time.Hour)
	otherOrg := newEvent(evIMEI, "button", time.Minute)
	otherOrg.OrganizationID = 2
	f.insert(t, d, c, b, a, otherOrg)
	window := store.OrgEventFilter{Start: eventT0, End: eventT0.Add(time.Hour)}
	with := func(change func(*store.OrgEventFilter)) store.OrgEventFilter {
		f := window
		change(&f)
		return f
	}
	tests := []struct {
		name  string
		f     store.OrgEventFilter
		p     store.Page
		want  []*store.Event
		total int
	}{
		{"the window, by time then id", window, store.Page{}, []*store.Event{a, c, b, d}, 4},
		{"a shorter window", store.OrgEventFilter{Start: eventT0.Add(time.Minute), End: eventT0.Add(time.Hour - time.Millisecond)}, store.Page{}, []*store.Event{c, b}, 2},
		{"a page", window, store.Page{Limit: 2, Offset: 2}, []*store.Event{b, d}, 4},
		{"past the end", window, store.Page{Limit: 2, Offset: 4}, nil, 4},
		{"types", with(func(f *store.OrgEventFilter) { f.Types = map[string]bool{"deceleration": true, "ignitionOn": true} }), store.Page{}, []*store.Event{b}, 1},
		{"no types", with(func(f *store.OrgEventFilter) { f.Types = map[string]bool{} }), store.Page{}, nil, 0},
		{"a partner", with(func(f *store.OrgEventFilter) { f.PartnerID = 1 }), store.Page{}, []*store.Event{a, c, d}, 3},
		{"devices", with(func(f *store.OrgEventFilter) { f.IMEIs = map[string]bool{evIMEI2: true} }), store.Page{}, []*store.Event{c, b}, 2},
		{"no devices", with(func(f *store.OrgEventFilter) { f.IMEIs = map[string]bool{} }), store.Page{}, nil, 0},
		{"a status", with(func(f *store.OrgEventFilter) { f.Status = store.EventStatusNew }), store.Page{Limit: 1, Offset: 1}, []*store.Event{b}, 3},
		{"every filter", with(func(f *store.OrgEventFilter) {
			f.Types, f.PartnerID, f.IMEIs, f.Status = map[string]bool{"button": true}, 1, map[string]bool{evIMEI2: true}, store.EventStatusResolved
		}), store.Page{}, []*store.Event{c}, 1},
	}
	f.view(t, func(tx *tx) error {
		for _, tc := range tests {
			got, n, err := tx.Events().ByOrganization(1, tc.f, tc.p)
			if err != nil {
				return err
			}
			if !slices.Equal(eventIDs(got), idsOf(tc.want...)) || n != tc.total {
				t.Errorf("%s: %v of %d, want %v of %d", tc.name, eventIDs(got), n, idsOf(tc.want...), tc.total)
			}
		}
		got, n, err := tx.Events().ByOrganization(2, store.OrgEventFilter{}, store.Page{Limit: 10})
		if err == nil && (!slices.Equal(eventIDs(got), idsOf(otherOrg)) || n != 1) {
			t.Errorf("organization 2: %v of %d, want %v", eventIDs(got), n, idsOf(otherOrg))
		}
		return err
	})
}

// TestEventsByOrganizationBefore returns the next batch of a purge, oldest
// first, and the purge deletes batch after batch until nothing is left
// before the cutoff.
func TestEventsByOrganizationBefore(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	var older []*store.Event
	for i := range 5 {
		ev := newEvent(evIMEI, "button", time.Duration(4-i)*time.Hour-60*24*time.Hour) // January, newest first
		ev.Files = []store.EventFile{{CameraID: 1, FileID: "f", FileType: store.FileVideo}}
		older = append(older, ev)
	}
	atCutoff := newEvent(evIMEI, "button", 0)
	otherOrg := newEvent(evIMEI, "button", -90*24*time.Hour)
	otherOrg.OrganizationID = 2
	f.insert(t, append(older, atCutoff, otherOrg)...)
	slices.Reverse(older) // oldest first
	f.view(t, func(tx *tx) error {
		got, err := tx.Events().ByOrganizationBefore(1, eventT0, 3)
		if err != nil {
			return err
		}
		if !slices.Equal(eventIDs(got), idsOf(older[:3]...)) {
			t.Errorf("the first batch %v, want %v", eventIDs(got), idsOf(older[:3]...))
		}
		if len(got) > 0 && !reflect.DeepEqual(&got[0], older[0]) {
			t.Errorf("a batch's event reads %+v, want %+v", got[0], older[0])
		}
		if got, err = tx.Events().ByOrganizationBefore(1, eventT0, 0); err != nil || len(got) != 0 {
			t.Errorf("a batch of 0: %v, %v", eventIDs(got), err)
		}
		return err
	})
	var batches []int
	for {
		n := 0
		f.update(t, func(tx *tx) error {
			batch, err := tx.Events().ByOrganizationBefore(1, eventT0, 2)
			if err != nil {
				return err
			}
			for i := range batch {
				if err := tx.Events().Delete(&batch[i]); err != nil {
					return err
				}
			}
			n = len(batch)
			return nil
		})
		if n == 0 {
			break
		}
		batches = append(batches, n)
	}
	if !slices.Equal(batches, []int{2, 2, 1}) {
		t.Errorf("purge batches %v, want [2 2 1]", batches)
	}
	f.view(t, func(tx *tx) error {
		for _, ev := range []*store.Event{atCutoff, otherOrg} {
			if _, err := tx.Events().Get(ev.ID); err != nil {
				t.Errorf("event %d, not before organization 1's cutoff: %v", ev.ID, err)
			}
		}
		return nil
	})
}

// TestEventDeviceIDs records which event a device's own ids were stored
// as, replaces an entry, and finds nothing for an id never stored.
func TestEventDeviceIDs(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	a := store.EventDeviceID{IMEI: evIMEI, DeviceEventID: "a", EventID: 1}
	b := store.EventDeviceID{IMEI: evIMEI, DeviceEventID: "b", EventID: 2, Ownership: 4}
	sameID := store.EventDeviceID{IMEI: evIMEI2, DeviceEventID: "a", EventID: 3, Ownership: 1}
	f.update(t, func(tx *tx) error {
		if _, err := tx.EventDeviceIDs().Get(evIMEI, "a"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("an id never stored: %v, want store.ErrNotFound", err)
		}
		for _, r := range []store.EventDeviceID{a, b, sameID} {
			if err := tx.EventDeviceIDs().Put(r); err != nil {
				return err
			}
		}
		return nil
	})
	b2 := store.EventDeviceID{IMEI: evIMEI, DeviceEventID: "b", EventID: 7, Ownership: 5}
	f.update(t, func(tx *tx) error { return tx.EventDeviceIDs().Put(b2) })
	f.view(t, func(tx *tx) error {
		for _, want := range []store.EventDeviceID{a, b2, sameID} {
			got, err := tx.EventDeviceIDs().Get(want.IMEI, want.DeviceEventID)
			if err != nil || got != want {
				t.Errorf("device event id %s/%s: %+v, %v; want %+v", want.IMEI, want.DeviceEventID, got, err, want)
			}
		}
		if _, err := tx.EventDeviceIDs().Get(evIMEI, "c"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("device event id c: %v, want store.ErrNotFound", err)
		}
		return nil
	})
}

// TestEventsBackfillHourlyCounts: the schema migration counted the events
// and the writes keep the counts, so the store's backfill changes nothing
// and the pages count as before.
func TestEventsBackfillHourlyCounts(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	evs := f.insert(t, newEvent(evIMEI, "button", 0), newEvent(evIMEI, "button", time.Hour))
	f.update(t, func(tx *tx) error { return tx.Events().BackfillHourlyCounts() })
	checkCounts(t, f.e, "after the backfill", evs)
	f.view(t, func(tx *tx) error {
		_, n, err := tx.Events().ByOrganization(1, store.OrgEventFilter{Start: eventT0, End: eventT0.Add(time.Hour)}, store.Page{Limit: 1})
		if err == nil && n != 2 {
			t.Errorf("total after the backfill %d, want 2", n)
		}
		return err
	})
}
