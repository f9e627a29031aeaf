package enginetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// EventT0 is the time the events of the tests are made around (NewEvent).
var EventT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	evIMEI  = "352045100000011"
	evIMEI2 = "352045100000029"
)

// eventTests are the tests of events and the devices' own event ids.
var eventTests = []test{
	{"EventsRoundTrip", testEventsRoundTrip},
	{"EventsUpdate", testEventsUpdate},
	{"EventsDelete", testEventsDelete},
	{"EventsByDevice", testEventsByDevice},
	{"EventsByOrganization", testEventsByOrganization},
	{"EventsByOrganizationBefore", testEventsByOrganizationBefore},
	{"EventDeviceIDs", testEventDeviceIDs},
	{"EventMailDue", testEventMailDue},
}

// seedEvents inserts the partners and organizations the events of the
// tests reference, partners 1 and 2 and organizations 1 and 2 of partner
// 1, and makes the engine's partitions around EventT0.
func seedEvents(t *testing.T, e store.Engine) {
	t.Helper()
	maintain(t, e, EventT0)
	// The events of the tests name partner 1 and organization 1: the first
	// ids of a new engine.
	s := seeder{t, e, EventT0}
	p1, p2 := s.partner("one"), s.partner("two")
	o1 := s.organization(store.Organization{Name: "first", PartnerID: p1.ID, SSOSalt: []byte{}, Retention: store.Retention{PurgeDays: 30}})
	o2 := s.organization(store.Organization{Name: "second", PartnerID: p1.ID, SSOSalt: []byte{}, Retention: store.Retention{PurgeDays: 30}})
	if p1.ID != 1 || p2.ID != 2 || o1.ID != 1 || o2.ID != 2 {
		t.Fatalf("partners %d and %d, organizations %d and %d; want 1 and 2 of each", p1.ID, p2.ID, o1.ID, o2.ID)
	}
}

// insertEvents stores each event in one transaction and returns them with
// their ids.
func insertEvents(t *testing.T, e store.Engine, evs ...*store.Event) []*store.Event {
	t.Helper()
	write(t, e, func(tx store.Records) error {
		for _, ev := range evs {
			if err := tx.Events().Insert(ev); err != nil {
				return err
			}
		}
		return nil
	})
	return evs
}

// NewEvent is a new event of organization 1 and partner 1 at EventT0 plus
// d, of type typ.
func NewEvent(imei, typ string, d time.Duration) *store.Event {
	return &store.Event{IMEI: imei, OrganizationID: 1, PartnerID: 1, Type: typ, Time: EventT0.Add(d), Lat: 52.37, Lon: 4.89,
		Severity: store.SeverityMedium, Status: store.EventStatusNew, Ownership: 3, CreatedAt: EventT0.Add(d + time.Second)}
}

// EventIDs are the ids of es, in their order.
func EventIDs(es []store.Event) []int64 {
	return idList(es, func(e *store.Event) int64 { return e.ID })
}

// idsOf are the ids of es, in their order.
func idsOf(es ...*store.Event) []int64 {
	return idList(es, func(e **store.Event) int64 { return (*e).ID })
}

func testEventsRoundTrip(t *testing.T, e store.Engine) {
	seedEvents(t, e)
	full := &store.Event{IMEI: evIMEI, OrganizationID: 1, PartnerID: 2, Type: store.EventGeoFence,
		Time: EventT0.Add(123 * time.Millisecond), Lat: -33.9, Lon: 151.2, Alt: 12.5, Speed: 61.5, Accuracy: 4,
		Severity: store.SeverityHigh, Status: store.EventStatusNew, Metadata: `[{"x":1.5,"y":0,"z":9.81,"time":1772366400,"speed":3}]`,
		Files: []store.EventFile{{CameraID: 2, FileID: "b.mp4", FileType: store.FileVideo},
			{CameraID: 1, FileID: "a.jpg", FileType: store.FileSnapshot}, {CameraID: 50, FileID: "aux", FileType: store.FileVideo}},
		GeoFenceID: 9, GeoFencePath: store.GeofenceEntered, GeoFenceName: "depot", SDCard: &store.SDCardInfo{UUID: "u-1", Manufacturer: "acme"},
		DriverID: 17, CameraID: 51, DeviceEventID: "dev-1", MediaNotified: true, Ownership: 4,
		Comments: []store.EventComment{{ID: 100, Comment: "seen", CreatedByAudienceName: "partner", CreatedByID: 5,
			CreatedByEmail: "a@example.com", CreatedAt: EventT0.Add(time.Hour + time.Microsecond)}},
		CreatedAt: EventT0.Add(time.Second + 7*time.Microsecond)}
	bare := &store.Event{IMEI: evIMEI2, OrganizationID: 2, Type: "button", Time: EventT0, Severity: store.SeverityLow,
		Status: store.EventStatusResolved, SDCard: &store.SDCardInfo{}, CreatedAt: EventT0}
	insertEvents(t, e, full, bare)
	if full.ID <= 0 || bare.ID <= full.ID {
		t.Fatalf("ids %d, %d: want increasing ids", full.ID, bare.ID)
	}
	read(t, e, func(tx store.Records) error {
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

	// A transaction that fails leaves none of its events.
	rolledBack := NewEvent(evIMEI, "button", time.Minute)
	failed := errors.New("rolled back")
	err := e.Update(t.Context(), func(tx store.Records) error {
		if err := tx.Events().Insert(rolledBack); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("a transaction that failed: %v", err)
	}
	next := insertEvents(t, e, NewEvent(evIMEI, "button", time.Minute))[0]
	if next.ID <= bare.ID {
		t.Errorf("the event after a rolled back one has id %d; want more than %d", next.ID, bare.ID)
	}
	read(t, e, func(tx store.Records) error {
		got, n, err := tx.Events().ByDevice(evIMEI, store.DeviceEventFilter{Start: EventT0.Add(time.Minute), End: EventT0.Add(time.Minute)}, store.Page{})
		if err == nil && (n != 1 || len(got) != 1 || got[0].ID != next.ID) {
			t.Errorf("the events of a minute with a rolled back one: %v of %d, want %d alone", EventIDs(got), n, next.ID)
		}
		return err
	})
}

// testEventsUpdate rewrites an event: its review, its comments (one added,
// one changed, one gone) and its files, and comment ids come from their
// own sequence.
func testEventsUpdate(t *testing.T, e store.Engine) {
	seedEvents(t, e)
	ev := NewEvent(evIMEI, "button", 0)
	ev.Files = []store.EventFile{{CameraID: 1, FileID: "a", FileType: store.FileVideo}, {CameraID: 2, FileID: "b", FileType: store.FileVideo}}
	other := NewEvent(evIMEI, "button", time.Minute)
	insertEvents(t, e, ev, other)
	var c1, c2, c3 int64
	write(t, e, func(tx store.Records) (err error) {
		if c1, err = tx.Events().NextCommentID(); err != nil {
			return err
		}
		if c2, err = tx.Events().NextCommentID(); err != nil {
			return err
		}
		ev.Status, ev.Severity, ev.MediaNotified = store.EventStatusResolved, store.SeverityHigh, true
		ev.Comments = []store.EventComment{
			{ID: c1, Comment: "one", CreatedByAudienceName: "partner", CreatedByID: 5, CreatedAt: EventT0.Add(time.Hour)},
			{ID: c2, Comment: "two", CreatedByAudienceName: "organization", CreatedByEmail: "b@example.com", CreatedAt: EventT0.Add(2 * time.Hour)},
		}
		return tx.Events().Update(ev)
	})
	if c1 <= 0 || c2 <= c1 {
		t.Fatalf("comment ids %d, %d: want increasing ids", c1, c2)
	}
	write(t, e, func(tx store.Records) (err error) {
		if c3, err = tx.Events().NextCommentID(); err != nil {
			return err
		}
		ev.Comments = []store.EventComment{
			{ID: c2, Comment: "two, edited", CreatedByAudienceName: "organization", CreatedAt: EventT0.Add(2 * time.Hour)},
			{ID: c3, Comment: "three", CreatedByAudienceName: "partner", CreatedAt: EventT0.Add(3 * time.Hour)},
		}
		ev.Files = []store.EventFile{{CameraID: 2, FileID: "c", FileType: store.FileSnapshot}}
		return tx.Events().Update(ev)
	})
	if c3 <= c2 {
		t.Fatalf("comment id %d after %d", c3, c2)
	}
	read(t, e, func(tx store.Records) error {
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
	write(t, e, func(tx store.Records) error {
		ev.Comments, ev.Files = nil, nil
		return tx.Events().Update(ev)
	})
	read(t, e, func(tx store.Records) error {
		got, err := tx.Events().Get(ev.ID)
		if err == nil && (got.Comments != nil || got.Files != nil) {
			t.Errorf("an event updated without comments and files reads %+v and %+v; want none", got.Comments, got.Files)
		}
		return err
	})
	missing := NewEvent(evIMEI, "button", 0)
	missing.ID = other.ID + 10
	err := e.Update(t.Context(), func(tx store.Records) error { return tx.Events().Update(missing) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("updating a missing event: %v, want store.ErrNotFound", err)
	}
}

// testEventsDelete deletes an event with its files and comments, from
// every query; deleting it again is no error.
func testEventsDelete(t *testing.T, e store.Engine) {
	seedEvents(t, e)
	ev := NewEvent(evIMEI, "button", 0)
	ev.Files = []store.EventFile{{CameraID: 1, FileID: "a", FileType: store.FileVideo}}
	ev.Comments = []store.EventComment{{ID: 1, Comment: "x", CreatedByAudienceName: "partner", CreatedAt: EventT0}}
	kept := NewEvent(evIMEI, "button", time.Minute)
	insertEvents(t, e, ev, kept)
	for range 2 {
		write(t, e, func(tx store.Records) error { return tx.Events().Delete(ev) })
	}
	read(t, e, func(tx store.Records) error {
		if _, err := tx.Events().Get(ev.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a deleted event: %v, want store.ErrNotFound", err)
		}
		got, n, err := tx.Events().ByDevice(evIMEI, store.DeviceEventFilter{}, store.Page{})
		if err != nil {
			return err
		}
		if !slices.Equal(EventIDs(got), idsOf(kept)) || n != 1 {
			t.Errorf("device events after a delete: %v of %d, want %v", EventIDs(got), n, idsOf(kept))
		}
		got, n, err = tx.Events().ByOrganization(1, store.OrgEventFilter{}, store.Page{Limit: 10})
		if err != nil {
			return err
		}
		if !slices.Equal(EventIDs(got), idsOf(kept)) || n != 1 {
			t.Errorf("organization events after a delete: %v of %d, want %v", EventIDs(got), n, idsOf(kept))
		}
		return nil
	})
}

// testEventsByDevice pages a device's events by time then id, within an
// inclusive window, with each filter, and with a holder.
func testEventsByDevice(t *testing.T, e store.Engine) {
	seedEvents(t, e)
	a := NewEvent(evIMEI, "button", 0)
	b := NewEvent(evIMEI, "deceleration", time.Minute)
	c := NewEvent(evIMEI, "button", time.Minute) // same time as b, later id
	d := NewEvent(evIMEI, "button", 2*time.Minute)
	d.Status = store.EventStatusResolved
	elsewhere := NewEvent(evIMEI2, "button", time.Minute)
	// From before ownership numbers: of organization 1, recorded at
	// EventT0+3m1s (created 1s after its time), and of organization 2.
	legacy := NewEvent(evIMEI, "button", 3*time.Minute)
	legacy.Ownership = 0
	legacyOther := NewEvent(evIMEI, "button", 4*time.Minute)
	legacyOther.Ownership, legacyOther.OrganizationID = 0, 2
	// An earlier owner's, in the default partition.
	old := NewEvent(evIMEI, "button", -400*24*time.Hour)
	old.Ownership = 2
	// Inserted out of time order: the page is by time, not by id.
	insertEvents(t, e, d, c, a, b, elsewhere, legacy, legacyOther, old)
	if c.ID >= b.ID {
		t.Fatalf("ids %d, %d", c.ID, b.ID)
	}
	window := store.DeviceEventFilter{Start: EventT0, End: EventT0.Add(2 * time.Minute)}
	with := func(change func(*store.DeviceEventFilter)) store.DeviceEventFilter {
		f := window
		change(&f)
		return f
	}
	holder := &store.Device{IMEI: evIMEI, OrganizationID: 1, Ownership: 3}
	legacyHolder := &store.Device{IMEI: evIMEI, OrganizationID: 1, CreatedAt: EventT0.Add(3*time.Minute + time.Second)}
	lateHolder := &store.Device{IMEI: evIMEI, OrganizationID: 1, CreatedAt: EventT0.Add(3*time.Minute + 2*time.Second)}
	tests := []struct {
		name  string
		f     store.DeviceEventFilter
		p     store.Page
		want  []*store.Event
		total int
	}{
		{"the window, by time then id", window, store.Page{}, []*store.Event{a, c, b, d}, 4},
		{"no window", store.DeviceEventFilter{}, store.Page{}, []*store.Event{old, a, c, b, d, legacy, legacyOther}, 7},
		{"from a start", store.DeviceEventFilter{Start: EventT0.Add(3 * time.Minute)}, store.Page{}, []*store.Event{legacy, legacyOther}, 2},
		{"to an end", store.DeviceEventFilter{End: EventT0}, store.Page{}, []*store.Event{old, a}, 2},
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
	read(t, e, func(tx store.Records) error {
		for _, tc := range tests {
			got, n, err := tx.Events().ByDevice(evIMEI, tc.f, tc.p)
			if err != nil {
				return err
			}
			if !slices.Equal(EventIDs(got), idsOf(tc.want...)) || n != tc.total {
				t.Errorf("%s: %v of %d, want %v of %d", tc.name, EventIDs(got), n, idsOf(tc.want...), tc.total)
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

// testEventsByOrganization pages an organization's events with each of its
// filters.
func testEventsByOrganization(t *testing.T, e store.Engine) {
	seedEvents(t, e)
	a := NewEvent(evIMEI, "button", 0)
	b := NewEvent(evIMEI2, "deceleration", time.Minute)
	b.PartnerID = 2
	c := NewEvent(evIMEI2, "button", time.Minute)
	c.Status = store.EventStatusResolved
	d := NewEvent(evIMEI, "button", time.Hour)
	otherOrg := NewEvent(evIMEI, "button", time.Minute)
	otherOrg.OrganizationID = 2
	insertEvents(t, e, d, c, b, a, otherOrg)
	window := store.OrgEventFilter{Start: EventT0, End: EventT0.Add(time.Hour)}
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
		{"a shorter window", store.OrgEventFilter{Start: EventT0.Add(time.Minute), End: EventT0.Add(time.Hour - time.Millisecond)}, store.Page{}, []*store.Event{c, b}, 2},
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
	read(t, e, func(tx store.Records) error {
		for _, tc := range tests {
			got, n, err := tx.Events().ByOrganization(1, tc.f, tc.p)
			if err != nil {
				return err
			}
			if !slices.Equal(EventIDs(got), idsOf(tc.want...)) || n != tc.total {
				t.Errorf("%s: %v of %d, want %v of %d", tc.name, EventIDs(got), n, idsOf(tc.want...), tc.total)
			}
		}
		got, n, err := tx.Events().ByOrganization(2, store.OrgEventFilter{}, store.Page{Limit: 10})
		if err == nil && (!slices.Equal(EventIDs(got), idsOf(otherOrg)) || n != 1) {
			t.Errorf("organization 2: %v of %d, want %v", EventIDs(got), n, idsOf(otherOrg))
		}
		return err
	})
}

// testEventsByOrganizationBefore returns the next batch of a purge, oldest
// first, and the purge deletes batch after batch until nothing is left
// before the cutoff.
func testEventsByOrganizationBefore(t *testing.T, e store.Engine) {
	seedEvents(t, e)
	var older []*store.Event
	for i := range 5 {
		ev := NewEvent(evIMEI, "button", time.Duration(4-i)*time.Hour-60*24*time.Hour) // January, newest first
		ev.Files = []store.EventFile{{CameraID: 1, FileID: "f", FileType: store.FileVideo}}
		older = append(older, ev)
	}
	atCutoff := NewEvent(evIMEI, "button", 0)
	otherOrg := NewEvent(evIMEI, "button", -90*24*time.Hour)
	otherOrg.OrganizationID = 2
	insertEvents(t, e, append(older, atCutoff, otherOrg)...)
	slices.Reverse(older) // oldest first
	read(t, e, func(tx store.Records) error {
		got, err := tx.Events().ByOrganizationBefore(1, EventT0, 3)
		if err != nil {
			return err
		}
		if !slices.Equal(EventIDs(got), idsOf(older[:3]...)) {
			t.Errorf("the first batch %v, want %v", EventIDs(got), idsOf(older[:3]...))
		}
		if len(got) > 0 && !reflect.DeepEqual(&got[0], older[0]) {
			t.Errorf("a batch's event reads %+v, want %+v", got[0], older[0])
		}
		if got, err = tx.Events().ByOrganizationBefore(1, EventT0, 0); err != nil || len(got) != 0 {
			t.Errorf("a batch of 0: %v, %v", EventIDs(got), err)
		}
		return err
	})
	var batches []int
	for {
		n := 0
		write(t, e, func(tx store.Records) error {
			batch, err := tx.Events().ByOrganizationBefore(1, EventT0, 2)
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
	read(t, e, func(tx store.Records) error {
		for _, ev := range []*store.Event{atCutoff, otherOrg} {
			if _, err := tx.Events().Get(ev.ID); err != nil {
				t.Errorf("event %d, not before organization 1's cutoff: %v", ev.ID, err)
			}
		}
		return nil
	})
}

// testEventDeviceIDs records which event a device's own ids were stored
// as, replaces an entry, and finds nothing for an id never stored.
func testEventDeviceIDs(t *testing.T, e store.Engine) {
	seedEvents(t, e)
	a := store.EventDeviceID{IMEI: evIMEI, DeviceEventID: "a", EventID: 1}
	b := store.EventDeviceID{IMEI: evIMEI, DeviceEventID: "b", EventID: 2, Ownership: 4}
	sameID := store.EventDeviceID{IMEI: evIMEI2, DeviceEventID: "a", EventID: 3, Ownership: 1}
	write(t, e, func(tx store.Records) error {
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
	write(t, e, func(tx store.Records) error { return tx.EventDeviceIDs().Put(b2) })
	read(t, e, func(tx store.Records) error {
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

// The e-mail jobs due at a time come by event id then recipient, up to a
// limit, and every one of them when the limit is 0 or less.
func testEventMailDue(t *testing.T, e store.Engine) {
	at := testTime
	jobs := []store.EventMail{
		{EventID: 2, Recipient: "b@example.com", IMEI: testIMEI(1), QueuedAt: at, NextAttemptAt: at},
		{EventID: 1, Recipient: "z@example.com", IMEI: testIMEI(1), QueuedAt: at, NextAttemptAt: at.Add(time.Second)},
		{EventID: 1, Recipient: "a@example.com", IMEI: testIMEI(1), QueuedAt: at, Attempts: 2, NextAttemptAt: at.Add(-time.Hour)},
		{EventID: 3, Recipient: "c@example.com", IMEI: testIMEI(2), QueuedAt: at, NextAttemptAt: at.Add(time.Hour)},
	}
	write(t, e, func(tx store.Records) error {
		for i := range jobs {
			if err := tx.EventMails().Put(&jobs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	for _, c := range []struct {
		limit int
		want  []string
	}{
		{0, []string{"1 a@example.com", "1 z@example.com", "2 b@example.com"}},
		{-1, []string{"1 a@example.com", "1 z@example.com", "2 b@example.com"}},
		{2, []string{"1 a@example.com", "1 z@example.com"}},
	} {
		read(t, e, func(tx store.Records) error {
			due, err := tx.EventMails().Due(at.Add(time.Second), c.limit)
			if err != nil {
				return err
			}
			got := []string{}
			for _, m := range due {
				got = append(got, fmt.Sprintf("%d %s", m.EventID, m.Recipient))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("Due with limit %d: %v, want %v", c.limit, got, c.want)
			}
			if len(due) > 0 && (due[0].Attempts != 2 || !due[0].NextAttemptAt.Equal(at.Add(-time.Hour)) || due[0].IMEI != testIMEI(1)) {
				t.Errorf("first job due: %+v, want the one stored", due[0])
			}
			return nil
		})
	}
}
