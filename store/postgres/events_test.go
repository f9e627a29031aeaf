package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

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

func idsOf(es ...*store.Event) []int64 {
	out := []int64{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// TestEventRows: an event's absent members are NULLs, its comments' ids
// are unique (a second use is a conflict) and drawn from a sequence a
// rollback does not take back, and an update or a delete leaves none of
// the rows of its files and comments behind (the engine suite tests what
// the events read).
func TestEventRows(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	withRows := func(d time.Duration) *store.Event {
		ev := newEvent(evIMEI, "button", d)
		ev.Files = []store.EventFile{{CameraID: 1, FileID: "a", FileType: store.FileVideo}}
		ev.Comments = []store.EventComment{{ID: 100 + int64(d/time.Minute), Comment: "x", CreatedByAudienceName: "partner", CreatedAt: eventT0}}
		return ev
	}
	bare := &store.Event{IMEI: evIMEI2, OrganizationID: 2, Type: "button", Time: eventT0, Severity: store.SeverityLow,
		Status: store.EventStatusResolved, SDCard: &store.SDCardInfo{}, CreatedAt: eventT0}
	updated, deleted := withRows(0), withRows(time.Minute)
	f.insert(t, bare, updated, deleted)
	var nulls int
	err := f.e.pool.QueryRow(f.ctx, `SELECT num_nulls(partner_id, metadata, geofence_id, geofence_path, geofence_name,
		driver_id, camera_id, device_event_id) FROM events WHERE id = $1`, bare.ID).Scan(&nulls)
	if err != nil || nulls != 8 {
		t.Errorf("the absent members of an event are %d NULLs, %v; want 8", nulls, err)
	}
	dup := newEvent(evIMEI, "button", time.Hour)
	dup.Comments = []store.EventComment{{ID: 100, Comment: "again", CreatedByAudienceName: "organization", CreatedAt: eventT0}}
	err = f.e.update(f.ctx, func(tx *tx) error { return tx.Events().Insert(dup) })
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("a comment id stored twice: %v, want store.ErrConflict", err)
	}
	if next := f.insert(t, newEvent(evIMEI, "button", time.Hour))[0]; next.ID <= deleted.ID+1 {
		t.Errorf("the event after a rolled back one has id %d; want more than %d", next.ID, deleted.ID+1)
	}
	f.update(t, func(tx *tx) error {
		updated.Files, updated.Comments = nil, nil
		if err := tx.Events().Update(updated); err != nil {
			return err
		}
		return tx.Events().Delete(deleted)
	})
	var files, comments int
	err = f.e.pool.QueryRow(f.ctx, `SELECT (SELECT count(*) FROM event_files), (SELECT count(*) FROM event_comments)`).Scan(&files, &comments)
	if err != nil || files != 0 || comments != 0 {
		t.Errorf("%d files and %d comments left, %v; want none", files, comments, err)
	}
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

// TestPagesReadCommentsOfTheirWindow: a page looks its events' comments
// up only when its window holds a comment (eventColumnsWithin), so each
// window, its inclusive end and a page read past its limit (whose rows are
// looked up by key) show every comment of their events, and none of
// another window's.
func TestPagesReadCommentsOfTheirWindow(t *testing.T) {
	t.Parallel()
	f := seedEvents(t)
	commented := func(d time.Duration, id int64, text string) *store.Event {
		ev := newEvent(evIMEI, "button", d)
		ev.Comments = []store.EventComment{{ID: id, Comment: text, CreatedByAudienceName: "partner", CreatedAt: eventT0}}
		return ev
	}
	a, b := commented(0, 1, "first"), newEvent(evIMEI, "button", time.Hour)
	c, d := newEvent(evIMEI, "button", 25*time.Hour), commented(26*time.Hour, 2, "second")
	f.insert(t, a, b, c, d)
	want := map[int64]string{a.ID: "first", d.ID: "second"}
	check := func(name string, page []store.Event, err error, ids ...int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(page) != len(ids) {
			t.Fatalf("%s: %d events, want %d", name, len(page), len(ids))
		}
		for i, ev := range page {
			text, has := want[ev.ID]
			switch {
			case ev.ID != ids[i]:
				t.Errorf("%s: event %d is %d, want %d", name, i, ev.ID, ids[i])
			case has && (len(ev.Comments) != 1 || ev.Comments[0].Comment != text):
				t.Errorf("%s: event %d has comments %+v, want %q", name, ev.ID, ev.Comments, text)
			case !has && len(ev.Comments) != 0:
				t.Errorf("%s: event %d has comments %+v, want none", name, ev.ID, ev.Comments)
			}
		}
	}
	f.view(t, func(tx *tx) error {
		org := func(from, to time.Duration, p store.Page) ([]store.Event, error) {
			page, _, err := tx.Events().ByOrganization(1, store.OrgEventFilter{Start: eventT0.Add(from), End: eventT0.Add(to)}, p)
			return page, err
		}
		dev := func(from, to time.Duration, p store.Page) ([]store.Event, error) {
			page, _, err := tx.Events().ByDevice(evIMEI, store.DeviceEventFilter{Start: eventT0.Add(from), End: eventT0.Add(to)}, p)
			return page, err
		}
		page, err := org(0, 2*time.Hour, store.Page{Limit: 10})
		check("the first day's hours", page, err, a.ID, b.ID)
		page, err = org(2*time.Hour, 25*time.Hour, store.Page{Limit: 10})
		check("a window without comments, ending at an event", page, err, c.ID)
		page, err = org(25*time.Hour, 26*time.Hour, store.Page{Limit: 10})
		check("a window whose end is a commented event", page, err, c.ID, d.ID)
		page, err = dev(time.Hour, 26*time.Hour, store.Page{Limit: 10})
		check("a device's days", page, err, b.ID, c.ID, d.ID)
		page, err = dev(0, 30*time.Hour, store.Page{Limit: 1, Offset: 3})
		check("a page past its limit", page, err, d.ID)
		page, err = dev(0, 30*time.Hour, store.Page{})
		check("every event of the window", page, err, a.ID, b.ID, c.ID, d.ID)
		return nil
	})
}
