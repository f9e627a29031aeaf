package store

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
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
}

func TestOrgEventsFilters(t *testing.T) {
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
}

func TestDeleteEventUnindexes(t *testing.T) {
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
	entries, _, _ := f.db.AuditLog(AuditFilter{Action: "event.delete"}, Page{})
	if len(entries) != 1 {
		t.Fatalf("%d audit entries", len(entries))
	}
}

func TestPurgeEvents(t *testing.T) {
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
				if err := tx.storeEvent(e); err != nil {
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
			err := f.db.View(func(tx *Tx) error {
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
			err := f.db.View(func(tx *Tx) error {
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
}
