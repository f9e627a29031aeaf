package bolt_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
)

// The layout of the event buckets: what earlier versions wrote is read,
// and what is written now is what they wrote.

var eventT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	eventIMEI  = "352045100000011"
	eventOrg   = int64(7)
	eventOwner = int64(3) // the partner
)

// openEventEngine opens the store at path and returns its engine; both
// close when the test ends.
func openEventEngine(t *testing.T, path string) *boltstore.Engine {
	t.Helper()
	return openStore(t, path, func() time.Time { return eventT0 }).Engine().(*boltstore.Engine)
}

// eventUpdate runs fn in one engine write transaction and fails the test
// on an error.
func eventUpdate(t *testing.T, e *boltstore.Engine, fn func(rec store.Records) error) {
	t.Helper()
	if err := e.Update(t.Context(), fn); err != nil {
		t.Fatal(err)
	}
}

// eventBolt runs fn in one bbolt write transaction on the engine's file.
func eventBolt(t *testing.T, e *boltstore.Engine, fn func(btx *bbolt.Tx) error) {
	t.Helper()
	if err := e.Bolt().Update(fn); err != nil {
		t.Fatal(err)
	}
}

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func ids(es []store.Event) []int64 {
	out := []int64{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestEventsWrittenByEarlierVersionsAreRead(t *testing.T) {
	e := openEventEngine(t, filepath.Join(t.TempDir(), "fleetcam.db"))
	at1, at2 := eventT0, eventT0.Add(time.Minute)
	hour := eventT0.UnixMilli() / int64(time.Hour/time.Millisecond)
	eventBolt(t, e, func(btx *bbolt.Tx) error {
		var err error
		put := func(bucket string, k, v []byte) {
			if err == nil {
				err = btx.Bucket([]byte(bucket)).Put(k, v)
			}
		}
		// Event 1 from before ownership numbers, event 2 of ownership 4.
		put("events", be8(1), []byte(`{"id":1,"imei":"`+eventIMEI+`","organizationId":7,"partnerId":3,"eventType":"button",`+
			`"time":"2026-03-01T12:00:00Z","lat":52.37,"lon":4.89,"speed":0,"severity":2,"status":"new","createdAt":"2026-03-01T12:00:05Z"}`))
		put("events", be8(2), []byte(`{"id":2,"imei":"`+eventIMEI+`","organizationId":7,"partnerId":3,"eventType":"deceleration",`+
			`"time":"2026-03-01T12:01:00Z","lat":52.37,"lon":4.89,"speed":61,"severity":2,"status":"resolved","ownership":4,"createdAt":"2026-03-01T12:01:05Z"}`))
		put("device_events", join([]byte(eventIMEI), []byte{0}, be8(at1.UnixMilli()), be8(1)), []byte("button"))
		put("device_events", join([]byte(eventIMEI), []byte{0}, be8(at2.UnixMilli()), be8(2)), join([]byte("deceleration"), []byte{0}, be8(4)))
		put("org_events", join(be8(eventOrg), be8(at1.UnixMilli()), be8(1)), join(be8(eventOwner), []byte(eventIMEI), []byte{0}, []byte("button")))
		put("org_events", join(be8(eventOrg), be8(at2.UnixMilli()), be8(2)), join(be8(eventOwner), []byte(eventIMEI), []byte{0}, []byte("deceleration")))
		// The count rows are where the total of whole hours is read
		// from: these say 5 events where the index holds 2, so a total
		// taken from them says 5.
		put("org_event_hours", join(be8(eventOrg), be8(hour), be8(eventOwner), []byte("button")), be8(4))
		put("org_event_hours", join(be8(eventOrg), be8(hour), be8(eventOwner), []byte("deceleration")), be8(1))
		put("event_device_ids", join([]byte(eventIMEI), []byte{0}, []byte("a")), be8(1))
		put("event_device_ids", join([]byte(eventIMEI), []byte{0}, []byte("b")), join(be8(2), be8(4)))
		if err == nil {
			err = btx.Bucket([]byte("events")).SetSequence(2)
		}
		return err
	})

	legacy := &store.Device{IMEI: eventIMEI, OrganizationID: eventOrg, CreatedAt: eventT0}
	later := &store.Device{IMEI: eventIMEI, OrganizationID: eventOrg, CreatedAt: eventT0.Add(time.Hour)}
	owner4 := &store.Device{IMEI: eventIMEI, OrganizationID: eventOrg, Ownership: 4, CreatedAt: eventT0}
	window := store.DeviceEventFilter{Start: eventT0, End: eventT0.Add(time.Hour)}
	with := func(f store.DeviceEventFilter, change func(*store.DeviceEventFilter)) store.DeviceEventFilter {
		change(&f)
		return f
	}
	devTests := []struct {
		name string
		f    store.DeviceEventFilter
		want []int64
	}{
		{"every ownership", window, []int64{1, 2}},
		{"a type", with(window, func(f *store.DeviceEventFilter) { f.Types = map[string]bool{"deceleration": true} }), []int64{2}},
		{"a status", with(window, func(f *store.DeviceEventFilter) { f.Status = store.EventStatusResolved }), []int64{2}},
		{"the ownership of the value", with(window, func(f *store.DeviceEventFilter) { f.Holder = owner4 }), []int64{2}},
		{"no ownership, held by the record", with(window, func(f *store.DeviceEventFilter) { f.Holder = legacy }), []int64{1}},
		{"no ownership, recorded before the holder came", with(window, func(f *store.DeviceEventFilter) { f.Holder = later }), []int64{}},
	}
	err := e.View(t.Context(), func(rec store.Records) error {
		ev, err := rec.Events().Get(2)
		if err != nil {
			return err
		}
		if ev.IMEI != eventIMEI || ev.Type != "deceleration" || ev.Ownership != 4 || ev.Speed != 61 || !ev.Time.Equal(at2) {
			t.Errorf("event 2 reads %+v", ev)
		}
		if _, err := rec.Events().Get(3); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("event 3: %v, want not found", err)
		}
		for _, tc := range devTests {
			got, n, err := rec.Events().ByDevice(eventIMEI, tc.f, store.Page{})
			if err != nil {
				return err
			}
			if n != len(tc.want) || !slices.Equal(ids(got), tc.want) {
				t.Errorf("device, %s: %v of %d, want %v", tc.name, ids(got), n, tc.want)
			}
		}
		orgWindow := store.OrgEventFilter{Start: eventT0, End: eventT0.Add(time.Hour - time.Millisecond), PartnerID: eventOwner}
		got, n, err := rec.Events().ByOrganization(eventOrg, orgWindow, store.Page{Limit: 10})
		if err != nil {
			return err
		}
		if !slices.Equal(ids(got), []int64{1, 2}) || n != 2 {
			t.Errorf("organization: %v of %d, want [1 2] of 2", ids(got), n)
		}
		if _, n, err = rec.Events().ByOrganization(eventOrg, orgWindow, store.Page{Limit: 10, Offset: 10}); err != nil {
			return err
		}
		if n != 5 {
			t.Errorf("organization, the whole hour past the page: total %d, want the 5 of its count rows", n)
		}
		got, n, err = rec.Events().ByOrganization(eventOrg, store.OrgEventFilter{Start: eventT0, End: eventT0.Add(time.Hour),
			IMEIs: map[string]bool{eventIMEI: true}, Types: map[string]bool{"button": true}}, store.Page{})
		if err != nil {
			return err
		}
		if !slices.Equal(ids(got), []int64{1}) || n != 1 {
			t.Errorf("organization, a device and type: %v of %d, want [1] of 1", ids(got), n)
		}
		for _, tc := range []struct {
			id   string
			want store.EventDeviceID
		}{
			{"a", store.EventDeviceID{IMEI: eventIMEI, DeviceEventID: "a", EventID: 1}},
			{"b", store.EventDeviceID{IMEI: eventIMEI, DeviceEventID: "b", EventID: 2, Ownership: 4}},
		} {
			if got, err := rec.EventDeviceIDs().Get(eventIMEI, tc.id); err != nil || got != tc.want {
				t.Errorf("device event id %s: %+v %v, want %+v", tc.id, got, err, tc.want)
			}
		}
		if _, err := rec.EventDeviceIDs().Get(eventIMEI, "c"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("device event id c: %v, want not found", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	eventUpdate(t, e, func(rec store.Records) error {
		ev := &store.Event{IMEI: eventIMEI, OrganizationID: eventOrg, PartnerID: eventOwner, Type: "button", Time: eventT0}
		if err := rec.Events().Insert(ev); err != nil {
			return err
		}
		if ev.ID != 3 {
			t.Errorf("the next event is %d, want 3", ev.ID)
		}
		return nil
	})
}

func TestEventsAreWrittenAsBefore(t *testing.T) {
	e := openEventEngine(t, filepath.Join(t.TempDir(), "fleetcam.db"))
	at := eventT0.Add(90*time.Minute + 123*time.Millisecond)
	hour := at.UnixMilli() / int64(time.Hour/time.Millisecond)
	var first, second *store.Event
	eventUpdate(t, e, func(rec store.Records) error {
		first = &store.Event{IMEI: eventIMEI, OrganizationID: eventOrg, PartnerID: eventOwner, Type: "button", Time: at,
			Status: store.EventStatusNew, Ownership: 4, CreatedAt: eventT0}
		second = &store.Event{IMEI: eventIMEI, OrganizationID: eventOrg, PartnerID: eventOwner, Type: "button", Time: at.Add(time.Second),
			Status: store.EventStatusNew, CreatedAt: eventT0}
		for _, ev := range []*store.Event{first, second} {
			if err := rec.Events().Insert(ev); err != nil {
				return err
			}
		}
		if err := rec.EventDeviceIDs().Put(store.EventDeviceID{IMEI: eventIMEI, DeviceEventID: "x", EventID: first.ID, Ownership: 4}); err != nil {
			return err
		}
		return rec.EventDeviceIDs().Put(store.EventDeviceID{IMEI: eventIMEI, DeviceEventID: "y", EventID: second.ID})
	})
	if first.ID != 1 || second.ID != 2 {
		t.Fatalf("ids %d, %d, want 1, 2", first.ID, second.ID)
	}
	hourKey := join(be8(eventOrg), be8(hour), be8(eventOwner), []byte("button"))
	type entry struct {
		bucket string
		key    []byte
		want   []byte // nil: absent
	}
	check := func(when string, entries []entry) {
		t.Helper()
		err := e.Bolt().View(func(btx *bbolt.Tx) error {
			for _, en := range entries {
				if got := btx.Bucket([]byte(en.bucket)).Get(en.key); !bytes.Equal(got, en.want) {
					t.Errorf("%s: %s %q = %q, want %q", when, en.bucket, en.key, got, en.want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	devKey := func(ev *store.Event) []byte {
		return join([]byte(eventIMEI), []byte{0}, be8(ev.Time.UnixMilli()), be8(ev.ID))
	}
	orgKey := func(ev *store.Event) []byte { return join(be8(eventOrg), be8(ev.Time.UnixMilli()), be8(ev.ID)) }
	orgValue := join(be8(eventOwner), []byte(eventIMEI), []byte{0}, []byte("button"))
	check("inserted", []entry{
		{"device_events", devKey(first), join([]byte("button"), []byte{0}, be8(4))},
		{"device_events", devKey(second), []byte("button")},
		{"org_events", orgKey(first), orgValue},
		{"org_events", orgKey(second), orgValue},
		{"org_event_hours", hourKey, be8(2)},
		{"event_device_ids", join([]byte(eventIMEI), []byte{0}, []byte("x")), join(be8(1), be8(4))},
		{"event_device_ids", join([]byte(eventIMEI), []byte{0}, []byte("y")), be8(2)},
	})
	err := e.Bolt().View(func(btx *bbolt.Tx) error {
		var got map[string]any
		if err := json.Unmarshal(btx.Bucket([]byte("events")).Get(be8(1)), &got); err != nil {
			return err
		}
		want := map[string]any{"id": 1.0, "imei": eventIMEI, "organizationId": 7.0, "partnerId": 3.0, "eventType": "button",
			"time": "2026-03-01T13:30:00.123Z", "ownership": 4.0, "status": "new"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("events 1 %s = %v, want %v", k, got[k], v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// An update rewrites the record only; comments take ids of their own.
	eventUpdate(t, e, func(rec store.Records) error {
		first.Status = store.EventStatusResolved
		if err := rec.Events().Update(first); err != nil {
			return err
		}
		for want := int64(1); want <= 2; want++ {
			if id, err := rec.Events().NextCommentID(); err != nil || id != want {
				t.Errorf("comment id %d %v, want %d", id, err, want)
			}
		}
		got, err := rec.Events().Get(first.ID)
		if err == nil && got.Status != store.EventStatusResolved {
			t.Errorf("updated status %q", got.Status)
		}
		return err
	})
	check("updated", []entry{{"org_event_hours", hourKey, be8(2)}, {"device_events", devKey(first), join([]byte("button"), []byte{0}, be8(4))}})

	// Deleting takes the record, its index entries and its count away.
	eventUpdate(t, e, func(rec store.Records) error { return rec.Events().Delete(first) })
	check("one deleted", []entry{
		{"events", be8(1), nil},
		{"device_events", devKey(first), nil},
		{"org_events", orgKey(first), nil},
		{"org_event_hours", hourKey, be8(1)},
	})
	eventUpdate(t, e, func(rec store.Records) error {
		if err := rec.Events().Delete(second); err != nil {
			return err
		}
		return rec.Events().Delete(second) // gone already: no error, no count below zero
	})
	check("both deleted", []entry{{"events", be8(2), nil}, {"org_events", orgKey(second), nil}, {"org_event_hours", hourKey, nil}})
}
