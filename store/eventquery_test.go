package store_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// seedEvents ingests n events per device, one a minute from eventT0, with
// types alternating between deceleration and cellPhoneUseBeep.
func (f *eventFixture) seedEvents(n int, devs ...*Device) {
	f.t.Helper()
	f.update(func(tx *Tx) error {
		for _, d := range devs {
			for i := 0; i < n; i++ {
				typ := EventDeceleration
				if i%2 == 1 {
					typ = EventCellPhoneUseBeep
				}
				_, err := tx.IngestEvent(d, EventInput{DeviceEventID: strconv.Itoa(i), Type: typ, Speed: 50,
					Time: eventT0.Add(time.Duration(i) * time.Minute)})
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func TestDeviceEventsPageAndCount(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.seedEvents(10, f.dev, f.dev2)
		var page []Event
		var total int
		f.update(func(tx *Tx) error {
			var err error
			page, total, err = tx.DeviceEvents(f.dev.IMEI, eventT0.Add(2*time.Minute), eventT0.Add(7*time.Minute), Page{Limit: 3, Offset: 2})
			return err
		})
		if total != 6 {
			t.Fatalf("count %d, want 6 (minutes 2 to 7 inclusive)", total)
		}
		if len(page) != 3 {
			t.Fatalf("page of %d", len(page))
		}
		for i, e := range page {
			if want := eventT0.Add(time.Duration(4+i) * time.Minute); !e.Time.Equal(want) || e.IMEI != f.dev.IMEI {
				t.Fatalf("page[%d] = %s at %s, want %s", i, e.IMEI, e.Time, want)
			}
		}
	})
}

func TestOrgEventsFilters(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.seedEvents(6, f.dev, f.dev2, f.foreign)
		span := EventQuery{Start: eventT0, End: eventT0.Add(time.Hour)}
		tests := []struct {
			name  string
			q     func(EventQuery) EventQuery
			total int
			check func(e Event) bool
		}{
			{"every device of the organization", func(q EventQuery) EventQuery { return q }, 18, nil},
			{"a partner sees only its own devices", func(q EventQuery) EventQuery { q.PartnerID = f.partner; return q }, 12,
				func(e Event) bool { return e.PartnerID == f.partner }},
			{"the other partner", func(q EventQuery) EventQuery { q.PartnerID = f.other; return q }, 6,
				func(e Event) bool { return e.IMEI == f.foreign.IMEI }},
			{"named types only", func(q EventQuery) EventQuery { q.Types = map[string]bool{EventDeceleration: true}; return q }, 9,
				func(e Event) bool { return e.Type == EventDeceleration }},
			{"beeps when named", func(q EventQuery) EventQuery { q.Types = map[string]bool{EventCellPhoneUseBeep: true}; return q }, 9,
				func(e Event) bool { return e.Type == EventCellPhoneUseBeep }},
			{"scoped devices", func(q EventQuery) EventQuery { q.IMEIs = map[string]bool{f.dev2.IMEI: true}; return q }, 6,
				func(e Event) bool { return e.IMEI == f.dev2.IMEI }},
			{"time window", func(q EventQuery) EventQuery { q.End = eventT0.Add(90 * time.Second); return q }, 6, nil},
			{"status", func(q EventQuery) EventQuery { q.Status = EventStatusResolved; return q }, 0, nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var page []Event
				var total int
				f.update(func(tx *Tx) error {
					var err error
					page, total, err = tx.OrgEvents(f.org.ID, tc.q(span), Page{Limit: 100})
					return err
				})
				if total != tc.total || len(page) != tc.total {
					t.Fatalf("total %d page %d, want %d", total, len(page), tc.total)
				}
				for i, e := range page {
					if i > 0 && e.Time.Before(page[i-1].Time) {
						t.Fatalf("not ordered by time at %d", i)
					}
					if tc.check != nil && !tc.check(e) {
						t.Fatalf("unexpected event %+v", e)
					}
				}
			})
		}
	})
}

func TestDeleteEventUnindexes(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.seedEvents(3, f.dev)
		f.update(func(tx *Tx) error {
			page, _, err := tx.DeviceEvents(f.dev.IMEI, eventT0, eventT0.Add(time.Hour), Page{})
			if err != nil {
				return err
			}
			_, err = tx.DeleteEvent(page[1].ID)
			return err
		})
		if n := f.eventCount(f.dev); n != 2 {
			t.Fatalf("%d events after delete", n)
		}
		f.update(func(tx *Tx) error {
			_, total, err := tx.OrgEvents(f.org.ID, EventQuery{Start: eventT0, End: eventT0.Add(time.Hour)}, Page{})
			if total != 2 {
				t.Fatalf("organization index still counts %d", total)
			}
			return err
		})
		entries, _, _ := f.db.AuditLog(t.Context(), AuditFilter{Action: "event.delete"}, Page{})
		if len(entries) != 1 {
			t.Fatalf("%d audit entries", len(entries))
		}
	})
}

func TestPurgeEvents(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.update(func(tx *Tx) error {
			for i := 0; i < 5; i++ {
				_, err := tx.IngestEvent(f.dev, EventInput{DeviceEventID: strconv.Itoa(i), Type: EventButton,
					Time: eventT0.Add(time.Duration(i) * time.Hour), Files: []EventFile{{CameraID: 1, FileID: strconv.Itoa(i), FileType: FileSnapshot}}})
				if err != nil {
					return err
				}
			}
			return nil
		})
		var n1, n2 int
		f.update(func(tx *Tx) error {
			var err error
			if n1, err = tx.PurgeEvents(f.org.ID, eventT0.Add(3*time.Hour), 2); err != nil {
				return err
			}
			n2, err = tx.PurgeEvents(f.org.ID, eventT0.Add(3*time.Hour), 2)
			return err
		})
		if n1 != 2 || n2 != 1 || f.eventCount(f.dev) != 2 {
			t.Fatalf("purged %d then %d, %d left", n1, n2, f.eventCount(f.dev))
		}
		if m := f.media(MediaRef{IMEI: f.dev.IMEI, CameraID: 1, FileType: FileSnapshot, FileID: "0"}); m != nil {
			t.Fatal("media of a purged event stayed")
		}
		if m := f.media(MediaRef{IMEI: f.dev.IMEI, CameraID: 1, FileType: FileSnapshot, FileID: "3"}); m == nil {
			t.Fatal("media of a kept event went")
		}
	})
}

// BenchmarkEventPage times one page of the organization and device event
// queries over a store seeded with FLEETCAM_BENCH_EVENTS events (200,000 by
// default) spread over 100 devices and 30 days.
func BenchmarkEventPage(b *testing.B) {
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("FLEETCAM_BENCH_EVENTS")); err == nil && v > 0 {
		n = v
	}
	f := newEventFixture(b)
	var devs []*Device
	f.update(func(tx *Tx) error {
		for i := 0; i < 100; i++ {
			d := &Device{IMEI: eventIMEI(1000 + i), Name: fmt.Sprint("Bench ", i), OrganizationID: f.org.ID, PartnerID: f.partner}
			if err := tx.AddDevice(d); err != nil {
				return err
			}
			devs = append(devs, d)
		}
		return nil
	})
	step := 30 * 24 * time.Hour / time.Duration(n)
	const batch = 20_000
	for done := 0; done < n; done += batch {
		f.update(func(tx *Tx) error {
			for i := done; i < min(done+batch, n); i++ {
				e := &Event{IMEI: devs[i%100].IMEI, OrganizationID: f.org.ID, PartnerID: f.partner, Type: EventDeceleration,
					Time: eventT0.Add(time.Duration(i) * step), Severity: SeverityMedium, Status: EventStatusNew,
					Files: []EventFile{{CameraID: 1, FileID: strconv.Itoa(i), FileType: FileVideo}}}
				if err := tx.StoreEvent(e); err != nil {
					return err
				}
			}
			return nil
		})
	}
	q := EventQuery{Start: eventT0.Add(10 * 24 * time.Hour), End: eventT0.Add(31 * 24 * time.Hour),
		Types: map[string]bool{EventDeceleration: true}, PartnerID: f.partner}
	b.Run("organization", func(b *testing.B) {
		for b.Loop() {
			err := f.db.View(b.Context(), func(tx *Tx) error {
				page, total, err := tx.OrgEvents(f.org.ID, q, Page{Limit: 100, Offset: 5000})
				if err == nil && (len(page) != 100 || total == 0) {
					err = fmt.Errorf("page %d of %d", len(page), total)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("device", func(b *testing.B) {
		for b.Loop() {
			err := f.db.View(b.Context(), func(tx *Tx) error {
				page, _, err := tx.DeviceEvents(devs[7].IMEI, q.Start, q.End, Page{Limit: 100, Offset: 100})
				if err == nil && len(page) != 100 {
					err = fmt.Errorf("page %d", len(page))
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestOrgEventList: an organization's event list joins each event with its
// device's current name and can keep the events of the devices a device
// filter selects now.
func TestOrgEventList(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.seedEvents(2, f.dev, f.dev2, f.foreign)
		var group *Group
		f.update(func(tx *Tx) error {
			var err error
			if group, err = tx.CreateGroup(f.org.ID, "Vans"); err != nil {
				return err
			}
			f.dev2.GroupID = group.ID
			if err := tx.UpdateDevice(f.dev2, "device.update"); err != nil {
				return err
			}
			f.dev.Name = "Renamed"
			return tx.UpdateDevice(f.dev, "device.update")
		})
		names := map[string]string{f.dev.IMEI: "Renamed", f.dev2.IMEI: "Truck 2", f.foreign.IMEI: "Truck 3"}
		span := EventQuery{Start: eventT0, End: eventT0.Add(time.Hour)}
		tests := []struct {
			name      string
			q         func(EventQuery) EventQuery
			page      Page
			wantIMEIs []string
			wantTotal int
		}{
			{"every event with its device's name", func(q EventQuery) EventQuery { return q }, Page{Limit: 100},
				[]string{f.dev.IMEI, f.dev2.IMEI, f.foreign.IMEI, f.dev.IMEI, f.dev2.IMEI, f.foreign.IMEI}, 6},
			{"a page", func(q EventQuery) EventQuery { return q }, Page{Limit: 2, Offset: 3},
				[]string{f.dev.IMEI, f.dev2.IMEI}, 6},
			{"the devices of a group", func(q EventQuery) EventQuery {
				q.Devices = &DeviceFilter{OrganizationID: f.org.ID, GroupID: group.ID}
				return q
			}, Page{Limit: 100}, []string{f.dev2.IMEI, f.dev2.IMEI}, 2},
			{"one device of the partner", func(q EventQuery) EventQuery {
				q.Devices = &DeviceFilter{OrganizationID: f.org.ID, PartnerID: f.partner, IMEI: f.dev.IMEI}
				return q
			}, Page{Limit: 100}, []string{f.dev.IMEI, f.dev.IMEI}, 2},
			{"a device of another partner", func(q EventQuery) EventQuery {
				q.Devices = &DeviceFilter{OrganizationID: f.org.ID, PartnerID: f.partner, IMEI: f.foreign.IMEI}
				return q
			}, Page{Limit: 100}, []string{}, 0},
			{"devices and IMEIs both apply", func(q EventQuery) EventQuery {
				q.Devices = &DeviceFilter{OrganizationID: f.org.ID, GroupID: group.ID}
				q.IMEIs = map[string]bool{f.dev.IMEI: true}
				return q
			}, Page{Limit: 100}, []string{}, 0},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f.update(func(tx *Tx) error {
					got, total, err := tx.OrgEventList(f.org.ID, tc.q(span), tc.page)
					if err != nil {
						return err
					}
					imeis := []string{}
					for _, e := range got {
						imeis = append(imeis, e.IMEI)
						if e.DeviceName != names[e.IMEI] {
							t.Errorf("event %d of %s names its device %q, want %q", e.ID, e.IMEI, e.DeviceName, names[e.IMEI])
						}
					}
					if !slices.Equal(imeis, tc.wantIMEIs) || total != tc.wantTotal {
						t.Errorf("got %v of %d, want %v of %d", imeis, total, tc.wantIMEIs, tc.wantTotal)
					}
					return nil
				})
			})
		}
	})
}

// eventIDs lists the ids of es, in order.
func eventIDs(es []Event) []int64 {
	ids := []int64{}
	for i := range es {
		ids = append(ids, es[i].ID)
	}
	return ids
}

// TestOrgEventsPagesEveryWindow: an organization's event pages and totals
// are those of its stored events in time order, for windows on and off
// hour boundaries, partner and type filters, pages before, inside and
// after the events, and after deletes and a purge.
func TestOrgEventsPagesEveryWindow(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		rnd := rand.New(rand.NewPCG(7, 11))
		types := []string{EventDeceleration, EventButton, EventCellPhoneUseBeep}
		devs := []*Device{f.dev, f.dev2, f.foreign}
		t0 := eventT0.Truncate(time.Hour)
		var stored []Event
		f.update(func(tx *Tx) error {
			for i := range 3000 {
				at := t0.Add(time.Duration(rnd.Int64N(int64(30 * time.Hour))))
				if i%50 == 0 {
					at = t0.Add(time.Duration(rnd.IntN(30)) * time.Hour) // exactly on an hour
				}
				e := &Event{IMEI: devs[i%3].IMEI, OrganizationID: f.org.ID, PartnerID: devs[i%3].PartnerID,
					Type: types[rnd.IntN(len(types))], Time: at, Severity: SeverityMedium, Status: EventStatusNew}
				if err := tx.StoreEvent(e); err != nil {
					return err
				}
				stored = append(stored, *e)
			}
			return nil
		})
		byTime := func(a, b Event) int { return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.ID, b.ID)) }
		slices.SortFunc(stored, byTime)
		// expect is the page and total of q among the stored events.
		// Each event is looked at in place: under the race detector,
		// copying each of the 3,000 for each of the 600 pages took about a
		// quarter of the test's CPU.
		expect := func(q EventQuery, p Page) ([]int64, int) {
			var kept []int64
			for i := range stored {
				e := &stored[i]
				if !e.Time.Before(q.Start) && !e.Time.After(q.End) && (q.PartnerID == 0 || e.PartnerID == q.PartnerID) &&
					(q.Types == nil || q.Types[e.Type]) {
					kept = append(kept, e.ID)
				}
			}
			return Paginate(kept, p)
		}
		check := func(round int) {
			t.Helper()
			for range 300 {
				start := t0.Add(time.Duration(rnd.Int64N(int64(32*time.Hour))) - time.Hour)
				if rnd.IntN(4) == 0 {
					start = start.Truncate(time.Hour)
				}
				end := start.Add(time.Duration(rnd.Int64N(int64(20 * time.Hour))))
				if rnd.IntN(4) == 0 {
					end = end.Truncate(time.Hour).Add(-time.Millisecond)
				}
				q := EventQuery{Start: start, End: end}
				if rnd.IntN(2) == 0 {
					q.PartnerID = f.partner
				}
				if rnd.IntN(3) == 0 {
					q.Types = map[string]bool{types[rnd.IntN(len(types))]: true}
				}
				p := Page{Limit: 1 + rnd.IntN(150), Offset: rnd.IntN(400)}
				err := f.db.View(t.Context(), func(tx *Tx) error {
					got, gotN, err := tx.OrgEvents(f.org.ID, q, p)
					if err != nil {
						return err
					}
					want, wantN := expect(q, p)
					if gotN != wantN || !slices.Equal(eventIDs(got), want) {
						t.Fatalf("round %d, %s to %s, partner %d, types %v, page %+v: %d events %v, want %d %v",
							round, start, end, q.PartnerID, q.Types, p, gotN, eventIDs(got), wantN, want)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		check(1)
		// Deleting and purging keep the pages and totals in step.
		cutoff := t0.Add(5 * time.Hour)
		f.update(func(tx *Tx) error {
			for _, e := range stored[1000:1200] {
				if _, err := tx.DeleteEvent(e.ID); err != nil {
					return err
				}
			}
			n, err := tx.PurgeEvents(f.org.ID, cutoff, 300)
			if err == nil && n != 300 {
				t.Errorf("purged %d events, want 300", n)
			}
			return err
		})
		stored = slices.Delete(stored, 1000, 1200)
		for i := 0; i < 300; i++ {
			if !stored[i].Time.Before(cutoff) {
				t.Fatalf("the purge reached %s, past the cutoff", stored[i].Time)
			}
		}
		stored = stored[300:]
		check(2)
	})
}

// TestPurgeEventsInBatchesAcrossOrganizations: the retention purge takes
// each organization's due events in batches that run on from one
// organization into the next, and keeps the rest.
func TestPurgeEventsInBatchesAcrossOrganizations(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		var second *Device
		f.update(func(tx *Tx) error {
			o, err := tx.CreateOrganization(f.partner, "Second fleet", nil)
			if err != nil {
				return err
			}
			second = &Device{IMEI: eventIMEI(4), Name: "Truck 4", OrganizationID: o.ID, PartnerID: f.partner}
			if err := tx.AddDevice(second); err != nil {
				return err
			}
			for _, id := range []int64{f.org.ID, o.ID} {
				org, err := tx.Organization(id)
				if err != nil {
					return err
				}
				org.Retention.PurgeDays = 7
				if err := tx.UpdateOrganization(org); err != nil {
					return err
				}
			}
			return nil
		})
		for _, d := range []*Device{f.dev, second} {
			for i := range 5 {
				f.ingest(d, EventInput{DeviceEventID: strconv.Itoa(i), Type: EventButton, Time: eventT0.Add(time.Duration(i) * time.Hour)})
			}
			f.ingest(d, EventInput{DeviceEventID: "kept", Type: EventButton, Time: eventT0.AddDate(0, 0, 20)})
		}
		res, err := f.db.Purge(t.Context(), eventT0.AddDate(0, 0, 21), PurgeSettings{Batch: 2})
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted["events"] != 10 {
			t.Errorf("purged %d events, want 10", res.Deleted["events"])
		}
		for _, d := range []*Device{f.dev, second} {
			f.update(func(tx *Tx) error {
				left, n, err := tx.DeviceEvents(d.IMEI, eventT0.AddDate(0, 0, -1), eventT0.AddDate(0, 0, 30), Page{})
				if err == nil && (n != 1 || left[0].DeviceEventID != "kept") {
					t.Errorf("%s keeps %d events %v, want only the recent one", d.IMEI, n, eventIDs(left))
				}
				return err
			})
		}
	})
}

// TestOrgEventPagesAfterCopy: an organization's event pages and totals on
// a PostgreSQL store filled by a copy, from either engine, are those of
// the copied events, also after deletes on the copy: the copy brings what
// the pages count whole hours from along with the events.
func TestOrgEventPagesAfterCopy(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		rnd := rand.New(rand.NewPCG(31, 37))
		types := []string{EventDeceleration, EventButton, EventCellPhoneUseBeep}
		devs := []*Device{f.dev, f.dev2, f.foreign}
		t0 := eventT0.Truncate(time.Hour)
		var stored []Event
		f.update(func(tx *Tx) error {
			for i := range 800 {
				at := t0.Add(time.Duration(rnd.Int64N(int64(24*time.Hour/time.Millisecond))) * time.Millisecond)
				if i%40 == 0 {
					at = t0.Add(time.Duration(rnd.IntN(24)) * time.Hour)
				}
				e := &Event{IMEI: devs[i%3].IMEI, OrganizationID: f.org.ID, PartnerID: devs[i%3].PartnerID,
					Type: types[rnd.IntN(len(types))], Time: at, Severity: SeverityMedium, Status: EventStatusNew}
				if err := tx.StoreEvent(e); err != nil {
					return err
				}
				stored = append(stored, *e)
			}
			return nil
		})
		dst := openCopyPostgres(t, storetest.NewClock(copyT0))
		copyStore(t, f.db, dst)
		slices.SortFunc(stored, func(a, b Event) int { return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.ID, b.ID)) })
		check := func(step string) {
			t.Helper()
			windows := [][2]time.Time{
				{t0, t0.Add(24 * time.Hour)},
				{t0.Add(time.Hour), t0.Add(5*time.Hour - time.Millisecond)},
				{t0.Add(90 * time.Minute), t0.Add(20*time.Hour + 10*time.Minute)},
			}
			for _, w := range windows {
				for _, q := range []EventQuery{
					{Start: w[0], End: w[1]},
					{Start: w[0], End: w[1], PartnerID: f.partner},
					{Start: w[0], End: w[1], Types: map[string]bool{EventButton: true}},
				} {
					var kept []Event
					for _, e := range stored {
						if !e.Time.Before(q.Start) && !e.Time.After(q.End) && (q.PartnerID == 0 || e.PartnerID == q.PartnerID) &&
							(q.Types == nil || q.Types[e.Type]) {
							kept = append(kept, e)
						}
					}
					for _, p := range []Page{{Limit: 50}, {Limit: 50, Offset: len(kept) / 2}, {Limit: 50, Offset: len(kept) - 10}} {
						want, wantN := Paginate(kept, p)
						err := dst.View(t.Context(), func(tx *Tx) error {
							got, n, err := tx.OrgEvents(f.org.ID, q, p)
							if err == nil && (n != wantN || !slices.Equal(eventIDs(got), eventIDs(want))) {
								t.Errorf("%s: %s to %s, partner %d, types %v, page %+v: %d events %v, want %d %v", step,
									q.Start, q.End, q.PartnerID, q.Types, p, n, eventIDs(got), wantN, eventIDs(want))
							}
							return err
						})
						if err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
		check("after the copy")
		err := dst.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
			for _, e := range stored[100:250] {
				if _, err := tx.DeleteEvent(e.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		stored = slices.Delete(stored, 100, 250)
		check("after deletes on the copy")
	})
}

// TestOrgEventListOfRemovedDevice: the events of a removed device stay in
// its organization's list, with no device name, and count as before.
func TestOrgEventListOfRemovedDevice(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.seedEvents(4, f.dev, f.foreign)
		f.update(func(tx *Tx) error { return tx.RemoveDevice(f.foreign.IMEI) })
		f.update(func(tx *Tx) error {
			got, total, err := tx.OrgEventList(f.org.ID, EventQuery{Start: eventT0, End: eventT0.Add(time.Hour)}, Page{Limit: 3, Offset: 2})
			if err != nil {
				return err
			}
			var names []string
			for _, e := range got {
				names = append(names, e.IMEI+" "+e.DeviceName)
			}
			want := []string{f.dev.IMEI + " Truck 1", f.foreign.IMEI + " ", f.dev.IMEI + " Truck 1"}
			if total != 8 || !slices.Equal(names, want) {
				t.Errorf("%d events %q, want 8 %q", total, names, want)
			}
			return nil
		})
	})
}
