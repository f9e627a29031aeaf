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

// alarmTests are the tests of alarms and their recipients.
var alarmTests = []test{
	{"AlarmInsertGetPut", testAlarmInsertGetPut},
	{"AlarmIDs", testAlarmIDs},
	{"AlarmRecipients", testAlarmRecipients},
	{"AlarmList", testAlarmList},
	{"AlarmPurge", testAlarmPurge},
	{"AlarmListNamesAreCurrent", testAlarmListNamesAreCurrent},
	{"AlarmListNamesOfTheirOwner", testAlarmListNamesOfTheirOwner},
}

// AlarmFixture is the directory SeedAlarms inserts: two partners, an
// organization of each, and devices of both, with their names.
type AlarmFixture struct {
	Partners  map[int64]string  // names by id
	Orgs      map[int64]string  // names by id
	Devices   map[string]string // names by IMEI
	P, Q      int64             // partners
	Org, Org2 int64
	IMEIs     []string
}

// AlarmTime is a time with microseconds, which every engine keeps.
var AlarmTime = time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)

// SeedAlarms inserts the directory records alarms refer to: partners P and
// Q, organizations Fleet (of P) and Ärger (of Q), and five devices, one
// without a name and two named alike.
func SeedAlarms(t *testing.T, e store.Engine) AlarmFixture {
	t.Helper()
	s := seeder{t, e, AlarmTime}
	f := AlarmFixture{Partners: map[int64]string{}, Orgs: map[int64]string{}, Devices: map[string]string{}}
	partner := func(name string) int64 {
		id := s.partner(name).ID
		f.Partners[id] = name
		return id
	}
	org := func(name string, partner int64) int64 {
		id := s.organization(store.Organization{Name: name, PartnerID: partner, SSOSalt: []byte{0},
			Retention: store.Retention{PurgeDays: 31}}).ID
		f.Orgs[id] = name
		return id
	}
	f.P, f.Q = partner("P"), partner("Q")
	f.Org, f.Org2 = org("Fleet", f.P), org("Ärger", f.Q)
	for i, d := range []struct {
		name     string
		org, ptn int64
	}{{"Truck ÄRGER", f.Org, f.P}, {"van", f.Org, f.P}, {"", f.Org, f.Q}, {"Van", f.Org2, f.Q}, {"\u212Aelvin bus", f.Org2, f.Q}} {
		imei := "35000000000000" + string(rune('1'+i))
		s.device(store.Device{IMEI: imei, Name: d.name, OrganizationID: d.org, PartnerID: d.ptn, Ownership: 1})
		f.Devices[imei] = d.name
		f.IMEIs = append(f.IMEIs, imei)
	}
	return f
}

// NewAlarm makes a new alarm of imei in org with an open action, as the
// store does, taking its ids from the engine.
func NewAlarm(t store.Records, imei string, org, partner, def int64, at time.Time) (*store.Alarm, error) {
	id, err := t.Alarms().NextID()
	if err != nil {
		return nil, err
	}
	note, err := t.Alarms().NextNoteID()
	if err != nil {
		return nil, err
	}
	return &store.Alarm{ID: id, IMEI: imei, OrganizationID: org, PartnerID: partner, AlarmDefinitionID: def,
		Details: "details", CreatedAt: at, Open: true, Comments: []store.AlarmComment{},
		Actions: []store.AlarmAction{{ID: note, AlarmID: id, Type: store.AlarmActionOpen,
			CreatedByAudienceName: store.AudienceSystem, CreatedAt: at, UpdatedAt: at}}}, nil
}

// testAlarmInsertGetPut stores an alarm with its notes, reads it back
// whole, replaces it (new, changed and dropped notes) and reads that back.
func testAlarmInsertGetPut(t *testing.T, e store.Engine) {
	f := SeedAlarms(t, e)
	var a *store.Alarm
	write(t, e, func(t store.Records) error {
		var err error
		if a, err = NewAlarm(t, f.IMEIs[0], f.Org, f.P, store.AlarmSDCardMissing, AlarmTime); err != nil {
			return err
		}
		a.UserID = 7
		note, err := t.Alarms().NextNoteID()
		if err != nil {
			return err
		}
		a.Comments = append(a.Comments, store.AlarmComment{ID: note, AlarmID: a.ID, Details: "Simulated alarm",
			CreatedByAudienceName: store.AudienceOrganization, CreatedByID: 7, CommentorName: "Ann", CreatedAt: AlarmTime})
		return t.Alarms().Insert(a)
	})
	get := func() *store.Alarm {
		t.Helper()
		var got *store.Alarm
		read(t, e, func(t store.Records) error {
			var err error
			got, err = t.Alarms().Get(a.ID)
			return err
		})
		return got
	}
	if got := get(); !reflect.DeepEqual(got, a) {
		t.Fatalf("Get after Insert:\n got %+v\nwant %+v", got, a)
	}

	later := AlarmTime.Add(time.Hour)
	write(t, e, func(t store.Records) error {
		note, err := t.Alarms().NextNoteID()
		if err != nil {
			return err
		}
		a.Open, a.LastCloseAt, a.AutoClosed, a.Read, a.LastReadAt = false, later, true, true, later
		a.Details = "closed"
		a.Actions = append(a.Actions, store.AlarmAction{ID: note, AlarmID: a.ID, Type: store.AlarmActionClose,
			CreatedByAudienceName: store.AudiencePartner, CreatedByID: 3, CreatedAt: later, UpdatedAt: later})
		a.Comments[0].Details = "edited"
		return t.Alarms().Put(a)
	})
	if got := get(); !reflect.DeepEqual(got, a) {
		t.Fatalf("Get after Put:\n got %+v\nwant %+v", got, a)
	}
	write(t, e, func(t store.Records) error {
		a.Comments = []store.AlarmComment{}
		a.Actions = a.Actions[1:]
		return t.Alarms().Put(a)
	})
	if got := get(); !reflect.DeepEqual(got, a) {
		t.Fatalf("Get after a Put dropping notes:\n got %+v\nwant %+v", got, a)
	}

	ctx := t.Context()
	err := e.View(ctx, func(t store.Records) error { _, err := t.Alarms().Get(a.ID + 100); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of an alarm never stored: %v; want ErrNotFound", err)
	}
	err = e.Update(ctx, func(t store.Records) error {
		b := *a
		b.ID += 100
		return t.Alarms().Put(&b)
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Put of an alarm never stored: %v; want ErrNotFound", err)
	}
}

// testAlarmIDs draws alarm and note ids: each greater than the one before,
// LastID the greatest drawn, and comments and actions from one sequence.
func testAlarmIDs(t *testing.T, e store.Engine) {
	read(t, e, func(t store.Records) error {
		if last, err := t.Alarms().LastID(); err != nil || last != 0 {
			return errors.Join(err, errors.New("LastID of a new database is not 0"))
		}
		return nil
	})
	var ids, notes []int64
	write(t, e, func(t store.Records) error {
		ids, notes = nil, nil
		for range 3 {
			id, err := t.Alarms().NextID()
			if err != nil {
				return err
			}
			note, err := t.Alarms().NextNoteID()
			if err != nil {
				return err
			}
			ids, notes = append(ids, id), append(notes, note)
		}
		return nil
	})
	for i := 1; i < 3; i++ {
		if ids[i] <= ids[i-1] || notes[i] <= notes[i-1] {
			t.Fatalf("ids %v, note ids %v; want each greater than the one before", ids, notes)
		}
	}
	read(t, e, func(r store.Records) error {
		if last, err := r.Alarms().LastID(); err != nil || last != ids[2] {
			t.Errorf("LastID = %d, %v; want %d, the last id drawn", last, err, ids[2])
		}
		return nil
	})
	write(t, e, func(r store.Records) error {
		if id, err := r.Alarms().NextID(); err != nil || id <= ids[2] {
			t.Errorf("NextID after %v gave %d, %v", ids, id, err)
		}
		return nil
	})
}

// testAlarmRecipients inserts, reads, replaces, lists and deletes
// recipients.
func testAlarmRecipients(t *testing.T, e store.Engine) {
	fx := SeedAlarms(t, e)
	ctx := t.Context()
	rs := []*store.AlarmRecipient{
		{Kind: store.RecipientAlarms, Email: "a@example.com", ReportIntervalSeconds: 60, PartnerID: fx.P,
			OrganizationID: fx.Org, AlarmDefinitions: []int64{store.AlarmSDCardMissing, store.AlarmRecordingFailed},
			CreatedByAudienceName: store.AudienceOrganization, CreatedByID: 4, LastAlarmID: 12, CreatedAt: AlarmTime},
		// partner-wide, every definition
		{Kind: store.RecipientHealth, Email: "b@example.com", ReportIntervalSeconds: 3600, PartnerID: fx.Q,
			CreatedByAudienceName: store.AudiencePartner, CreatedAt: AlarmTime},
		{Kind: store.RecipientAlarms, Email: "a@example.com", PartnerID: fx.P, CreatedByAudienceName: store.AudienceSystem,
			CreatedAt: AlarmTime},
	}
	write(t, e, func(r store.Records) error {
		for _, rc := range rs {
			if err := r.AlarmRecipients().Insert(rc); err != nil {
				return err
			}
		}
		return nil
	})
	if rs[0].ID <= 0 || rs[1].ID <= rs[0].ID || rs[2].ID <= rs[1].ID {
		t.Fatalf("recipient ids %d, %d, %d; want each greater than the one before", rs[0].ID, rs[1].ID, rs[2].ID)
	}
	list := func() []store.AlarmRecipient {
		t.Helper()
		var l []store.AlarmRecipient
		read(t, e, func(r store.Records) error {
			var err error
			l, err = r.AlarmRecipients().List()
			return err
		})
		return l
	}
	if got, want := list(), []store.AlarmRecipient{*rs[0], *rs[1], *rs[2]}; !reflect.DeepEqual(got, want) {
		t.Fatalf("List:\n got %+v\nwant %+v", got, want)
	}
	rs[0].AlarmDefinitions, rs[0].LastAlarmID, rs[0].LastReportAt = nil, 40, AlarmTime.Add(time.Hour)
	write(t, e, func(r store.Records) error { return r.AlarmRecipients().Put(rs[0]) })
	read(t, e, func(r store.Records) error {
		got, err := r.AlarmRecipients().Get(rs[0].ID)
		if err == nil && !reflect.DeepEqual(got, rs[0]) {
			t.Errorf("Get after Put:\n got %+v\nwant %+v", got, rs[0])
		}
		return err
	})

	err := e.Update(ctx, func(r store.Records) error {
		gone := *rs[1]
		gone.ID = rs[2].ID + 10
		return r.AlarmRecipients().Put(&gone)
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Put of a recipient never stored: %v; want ErrNotFound", err)
	}
	write(t, e, func(r store.Records) error {
		return errors.Join(r.AlarmRecipients().Delete(rs[1].ID), r.AlarmRecipients().Delete(rs[1].ID))
	})
	err = e.View(ctx, func(r store.Records) error { _, err := r.AlarmRecipients().Get(rs[1].ID); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a deleted recipient: %v; want ErrNotFound", err)
	}
	if got, want := list(), []store.AlarmRecipient{*rs[0], *rs[2]}; !reflect.DeepEqual(got, want) {
		t.Errorf("List after Delete:\n got %+v\nwant %+v", got, want)
	}
	var next *store.AlarmRecipient
	write(t, e, func(r store.Records) error {
		next = &store.AlarmRecipient{Kind: store.RecipientHealth, Email: "c@example.com", PartnerID: fx.P,
			CreatedByAudienceName: store.AudiencePartner, CreatedAt: AlarmTime}
		return r.AlarmRecipients().Insert(next)
	})
	if next.ID <= rs[2].ID {
		t.Errorf("a recipient inserted after deletes has id %d; want more than %d", next.ID, rs[2].ID)
	}
}

// alarmIDs are the ids of list, in its order.
func alarmIDs(list []store.Alarm) []int64 {
	return idList(list, func(a *store.Alarm) int64 { return a.ID })
}

// recordNames are the names of the directory records as a transaction
// reads them, as the store looks them up for the alarm list: a record
// that is gone has the empty name.
type recordNames struct{ r store.Records }

func (n recordNames) DeviceName(a *store.Alarm) string {
	if d, err := n.r.Devices().Get(a.IMEI); err == nil && a.HeldBy(d) {
		return d.Name
	}
	return ""
}

func (n recordNames) OrganizationName(id int64) string {
	if o, err := n.r.Organizations().Get(id); err == nil {
		return o.Name
	}
	return ""
}

func (n recordNames) PartnerName(id int64) string {
	if p, err := n.r.Partners().Get(id); err == nil {
		return p.Name
	}
	return ""
}

// goneIMEI is a device alarms were raised for that is no longer stored.
const goneIMEI = "350000000000099"

// seedAlarmList inserts ten alarms over the fixture's devices and one that
// is gone, and returns them in id order:
//
//	   device           org    partner  definition (severity)  open  read  created at AlarmTime plus
//	1  1 Truck ÄRGER    Fleet  P        recording failed (60)  yes   no    3µs
//	2  2 van            Fleet  P        SD card failing (50)   yes   yes   2µs
//	3  3 (no name)      Fleet  Q        camera (40)            no    yes   1µs
//	4  4 Van            Ärger  Q        power (40)             yes   no    0
//	5  5 Kelvin bus     Ärger  Q        offline (30)           no    no    1ms
//	6  gone             Ärger  Q        SD card missing (60)   yes   no    2ms
//	7  1 Truck ÄRGER    Fleet  P        SD card failing (50)   no    no    -1h
//	8  2 van            Fleet  P        power (40)             yes   yes   2ms 1µs
//	9  4 Van            Ärger  Q        SD card missing (60)   yes   no    3ms
//	10 3 (no name)      Fleet  Q        offline (30)           yes   no    1h
//
// Alarms 1 to 4 share a millisecond in the reverse of their id order, as
// do 6 and 8; "Kelvin" begins with the Kelvin sign (U+212A), whose lower
// case is k. Alarms 1 and 6 have a comment.
func seedAlarmList(t *testing.T, e store.Engine, f AlarmFixture) []store.Alarm {
	t.Helper()
	rows := []struct {
		imei       string
		def        int64
		open, read bool
		at         time.Duration
	}{
		{f.IMEIs[0], store.AlarmRecordingFailed, true, false, 3 * time.Microsecond},
		{f.IMEIs[1], store.AlarmSDCardFailing, true, true, 2 * time.Microsecond},
		{f.IMEIs[2], store.AlarmCameraDisconnected, false, true, time.Microsecond},
		{f.IMEIs[3], store.AlarmPowerDisconnected, true, false, 0},
		{f.IMEIs[4], store.AlarmDeviceOffline, false, false, time.Millisecond},
		{goneIMEI, store.AlarmSDCardMissing, true, false, 2 * time.Millisecond},
		{f.IMEIs[0], store.AlarmSDCardFailing, false, false, -time.Hour},
		{f.IMEIs[1], store.AlarmPowerDisconnected, true, true, 2*time.Millisecond + time.Microsecond},
		{f.IMEIs[3], store.AlarmSDCardMissing, true, false, 3 * time.Millisecond},
		{f.IMEIs[2], store.AlarmDeviceOffline, true, false, time.Hour},
	}
	owner := map[string][2]int64{f.IMEIs[0]: {f.Org, f.P}, f.IMEIs[1]: {f.Org, f.P}, f.IMEIs[2]: {f.Org, f.Q},
		f.IMEIs[3]: {f.Org2, f.Q}, f.IMEIs[4]: {f.Org2, f.Q}, goneIMEI: {f.Org2, f.Q}}
	var all []store.Alarm
	write(t, e, func(r store.Records) error {
		all = nil
		for i, row := range rows {
			at := AlarmTime.Add(row.at)
			a, err := NewAlarm(r, row.imei, owner[row.imei][0], owner[row.imei][1], row.def, at)
			if err != nil {
				return err
			}
			a.Open, a.Read = row.open, row.read
			if i == 0 || i == 5 {
				note, err := r.Alarms().NextNoteID()
				if err != nil {
					return err
				}
				a.Comments = append(a.Comments, store.AlarmComment{ID: note, AlarmID: a.ID, Details: fmt.Sprint("comment ", i+1),
					CreatedByAudienceName: store.AudiencePartner, CreatedByID: 2, CommentorName: "Bo", CreatedAt: at})
			}
			if err := r.Alarms().Insert(a); err != nil {
				return err
			}
			all = append(all, *a)
		}
		return nil
	})
	return all
}

// testAlarmList lists the alarms of seedAlarmList through every filter,
// in every order and a page at a time, and expects the alarms the table
// above says.
func testAlarmList(t *testing.T, e store.Engine) {
	fx := SeedAlarms(t, e)
	inserted := seedAlarmList(t, e, fx)
	// ids are the ids of alarms n, numbered from 1 as in the table.
	ids := func(ns ...int) []int64 {
		out := []int64{}
		for _, n := range ns {
			out = append(out, inserted[n-1].ID)
		}
		return out
	}
	yes, no := true, false
	probe := inserted[1].CreatedAt // AlarmTime + 2µs
	fleet := map[int64]bool{fx.Org: true}
	filters := []struct {
		f    store.AlarmFilter
		want []int64
	}{
		{store.AlarmFilter{}, ids(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)},
		{store.AlarmFilter{OrganizationIDs: fleet}, ids(1, 2, 3, 7, 8, 10)},
		{store.AlarmFilter{OrganizationIDs: map[int64]bool{fx.Org: false, fx.Org2: true}}, ids(4, 5, 6, 9)},
		{store.AlarmFilter{OrganizationIDs: map[int64]bool{}}, ids()},
		{store.AlarmFilter{PartnerID: fx.Q}, ids(3, 4, 5, 6, 9, 10)},
		{store.AlarmFilter{PartnerID: fx.Q, OrganizationIDs: fleet}, ids(3, 10)},
		{store.AlarmFilter{IMEI: fx.IMEIs[1]}, ids(2, 8)},
		{store.AlarmFilter{IMEI: goneIMEI}, ids(6)},
		{store.AlarmFilter{DefinitionID: store.AlarmSDCardFailing}, ids(2, 7)},
		{store.AlarmFilter{DefinitionName: "sd CARD"}, ids(2, 6, 7, 9)},
		{store.AlarmFilter{DefinitionName: "nothing like it"}, ids()},
		{store.AlarmFilter{Severity: 40}, ids(3, 4, 8)},
		{store.AlarmFilter{Severity: 35}, ids()},
		{store.AlarmFilter{Severity: 60, DefinitionName: "card"}, ids(6, 9)},
		{store.AlarmFilter{Open: &yes}, ids(1, 2, 4, 6, 8, 9, 10)},
		{store.AlarmFilter{Open: &no, Read: &yes}, ids(3)},
		{store.AlarmFilter{Read: &no}, ids(1, 4, 5, 6, 7, 9, 10)},
		{store.AlarmFilter{Start: probe}, ids(1, 2, 5, 6, 8, 9, 10)},
		{store.AlarmFilter{Start: probe.Add(time.Nanosecond)}, ids(1, 5, 6, 8, 9, 10)},
		{store.AlarmFilter{End: probe}, ids(2, 3, 4, 7)},
		{store.AlarmFilter{End: probe.Add(-time.Nanosecond)}, ids(3, 4, 7)},
		{store.AlarmFilter{Start: probe.Add(-2 * time.Millisecond), End: probe.Add(2*time.Millisecond + 500*time.Nanosecond)}, ids(1, 2, 3, 4, 5, 6, 8)},
		{store.AlarmFilter{AfterID: inserted[6].ID}, ids(8, 9, 10)},
		{store.AlarmFilter{DeviceName: "ärger"}, ids(1, 7)},
		{store.AlarmFilter{DeviceName: "VAN"}, ids(2, 4, 8, 9)},
		{store.AlarmFilter{DeviceName: "kelvin"}, ids(5)},
		{store.AlarmFilter{DeviceName: "u"}, ids(1, 5, 7)},
		{store.AlarmFilter{DeviceName: "nowhere"}, ids()},
		{store.AlarmFilter{DeviceName: "a", Open: &yes, OrganizationIDs: fleet}, ids(2, 8)},
	}
	// Each order, ascending (equal keys by id); descending is its reverse.
	orders := []struct {
		key  string
		want []int64
	}{
		{"", ids(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)},
		// To the millisecond.
		{store.AlarmByCreatedAt, ids(7, 1, 2, 3, 4, 5, 6, 8, 9, 10)},
		// Byte order: "" < "Truck ÄRGER" < "Van" < "van" < "\u212Aelvin bus".
		{store.AlarmByDeviceName, ids(3, 6, 10, 1, 7, 4, 9, 2, 8, 5)},
		{store.AlarmByIMEI, ids(1, 7, 2, 8, 3, 10, 4, 9, 5, 6)},
		// "Fleet" < "Ärger".
		{store.AlarmByOrganizationName, ids(1, 2, 3, 7, 8, 10, 4, 5, 6, 9)},
		{store.AlarmByPartnerName, ids(1, 2, 7, 8, 3, 4, 5, 6, 9, 10)},
		{store.AlarmBySeverity, ids(5, 10, 3, 4, 8, 2, 7, 1, 6, 9)},
		// "Camera…" < "Device offline…" < "Power…" < "Recording…" < "SD card failing" < "SD card missing".
		{store.AlarmByDefinitionName, ids(3, 5, 10, 4, 8, 1, 2, 7, 6, 9)},
	}
	pages := []store.Page{{}, {Limit: 5}, {Limit: 7, Offset: 3}, {Offset: 8}, {Limit: 5, Offset: 100}}
	read(t, e, func(r store.Records) error {
		names := recordNames{r}
		for _, c := range filters {
			got, total, err := r.Alarms().List(c.f, store.Sort{}, store.Page{}, names)
			if err != nil {
				return fmt.Errorf("filter %+v: %w", c.f, err)
			}
			if !slices.Equal(alarmIDs(got), c.want) || total != len(c.want) {
				t.Errorf("filter %+v: %v of %d; want %v", c.f, alarmIDs(got), total, c.want)
			}
		}
		for _, c := range orders {
			for _, desc := range []bool{false, true} {
				want := slices.Clone(c.want)
				if desc {
					slices.Reverse(want)
				}
				s := store.Sort{Key: c.key, Desc: desc}
				for _, p := range pages {
					got, total, err := r.Alarms().List(store.AlarmFilter{}, s, p, names)
					if err != nil {
						return fmt.Errorf("sort %+v, page %+v: %w", s, p, err)
					}
					if w := pageOf(want, p); !slices.Equal(alarmIDs(got), w) || total != len(want) {
						t.Errorf("sort %+v, page %+v: %v of %d; want %v of %d", s, p, alarmIDs(got), total, w, len(want))
					}
				}
			}
		}
		// A filter, an order and a page together.
		got, total, err := r.Alarms().List(store.AlarmFilter{PartnerID: fx.Q}, store.Sort{Key: store.AlarmByDeviceName, Desc: true},
			store.Page{Limit: 3, Offset: 1}, names)
		if err != nil || !slices.Equal(alarmIDs(got), ids(9, 4, 10)) || total != 6 {
			t.Errorf("partner Q's by device name, descending, the second to fourth: %v of %d, %v; want %v of 6", alarmIDs(got), total, err, ids(9, 4, 10))
		}
		// Each listed alarm is whole, as inserted.
		all, _, err := r.Alarms().List(store.AlarmFilter{}, store.Sort{}, store.Page{}, names)
		if err != nil {
			return err
		}
		wantEqual(t, "the alarms listed", all, inserted)
		_, _, err = r.Alarms().List(store.AlarmFilter{}, store.Sort{Key: "colour"}, store.Page{}, names)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("a list sorted by an unknown key: %v; want ErrInvalid", err)
		}
		return nil
	})
}

// testAlarmPurge purges the alarms of seedAlarmList in batches of one:
// closed alarms of an organization with a cutoff, created before it to the
// nanosecond, go (alarms 3 and 7 of Fleet, 5 of Ärger); their triples
// stay.
func testAlarmPurge(t *testing.T, e store.Engine) {
	fx := SeedAlarms(t, e)
	all := seedAlarmList(t, e, fx)
	edge := all[2] // alarm 3: closed, of Fleet
	undo := errors.New("undo")
	err := e.Update(t.Context(), func(r store.Records) error {
		if _, _, err := r.Alarms().Purge(store.AlarmPurge{Cutoffs: store.Cutoffs{fx.Org: edge.CreatedAt}, Limit: 10}); err != nil {
			return err
		}
		if _, err := r.Alarms().Get(edge.ID); err != nil {
			t.Errorf("a purge with the cutoff at its createdAt deleted alarm %d: %v", edge.ID, err)
		}
		return undo
	})
	if !errors.Is(err, undo) {
		t.Fatal(err)
	}
	fleet := store.Cutoffs{fx.Org: edge.CreatedAt.Add(time.Nanosecond)}
	if total, _ := purgeAll(t, e, 1, func(r store.Records, from []byte) (int, []byte, error) {
		return r.Alarms().Purge(store.AlarmPurge{Cutoffs: fleet, From: from, Limit: 1})
	}); total != 2 {
		t.Errorf("purged %d alarms; want 2", total)
	}
	write(t, e, func(r store.Records) error {
		for _, p := range []store.AlarmPurge{{Limit: 10}, {Cutoffs: store.Cutoffs{fx.Org2: time.Unix(0, 0)}, Limit: 10}} {
			if n, next, err := r.Alarms().Purge(p); err != nil || n != 0 || next != nil {
				t.Errorf("Purge(%+v) = %d, %x, %v; want nothing", p, n, next, err)
			}
		}
		// A batch without a limit.
		n, next, err := r.Alarms().Purge(store.AlarmPurge{Cutoffs: store.Cutoffs{fx.Org2: all[4].CreatedAt.Add(time.Hour)}})
		if err != nil || n != 1 || next != nil {
			t.Errorf("Purge of Ärger's without a limit = %d, %x, %v; want alarm 5", n, next, err)
		}
		return nil
	})
	gone := map[int64]bool{all[2].ID: true, all[4].ID: true, all[6].ID: true}
	read(t, e, func(r store.Records) error {
		for _, a := range all {
			_, err := r.Alarms().Get(a.ID)
			if g := errors.Is(err, store.ErrNotFound); g != gone[a.ID] {
				t.Errorf("alarm %d: gone %v (%v); want %v", a.ID, g, err, gone[a.ID])
			}
			if taken, err := r.Alarms().TripleTaken(a.IMEI, a.AlarmDefinitionID, a.CreatedAt); err != nil || !taken {
				t.Errorf("the triple of alarm %d is free after the purge (%v)", a.ID, err)
			}
		}
		return nil
	})
}

// testAlarmListNamesAreCurrent renames and removes directory records: the
// list sorts and filters by the names as they are now.
func testAlarmListNamesAreCurrent(t *testing.T, e store.Engine) {
	f := SeedAlarms(t, e)
	inserted := seedAlarmList(t, e, f)
	write(t, e, func(r store.Records) error {
		d, err := r.Devices().Get(f.IMEIs[1])
		if err != nil {
			return err
		}
		d.Name = "zebra"
		if err := r.Devices().Put(d); err != nil {
			return err
		}
		if err := r.Devices().Delete(f.IMEIs[0]); err != nil {
			return err
		}
		o, err := r.Organizations().Get(f.Org2)
		if err != nil {
			return err
		}
		o.Name = "Aardvark"
		return r.Organizations().Put(o)
	})
	read(t, e, func(r store.Records) error {
		names := recordNames{r}
		for _, c := range []struct {
			f    store.AlarmFilter
			s    store.Sort
			want []int64
		}{
			{store.AlarmFilter{DeviceName: "ZEB"}, store.Sort{}, []int64{inserted[1].ID, inserted[7].ID}},
			{store.AlarmFilter{DeviceName: "ärger"}, store.Sort{}, []int64{}},
			// Alarms 1 and 7 of the removed device have no name now.
			{store.AlarmFilter{DeviceName: "", OrganizationIDs: map[int64]bool{f.Org: true}}, store.Sort{Key: store.AlarmByDeviceName},
				[]int64{inserted[0].ID, inserted[2].ID, inserted[6].ID, inserted[9].ID, inserted[1].ID, inserted[7].ID}},
			// "Aardvark" < "Fleet".
			{store.AlarmFilter{}, store.Sort{Key: store.AlarmByOrganizationName}, []int64{inserted[3].ID, inserted[4].ID,
				inserted[5].ID, inserted[8].ID, inserted[0].ID, inserted[1].ID, inserted[2].ID, inserted[6].ID, inserted[7].ID, inserted[9].ID}},
		} {
			got, total, err := r.Alarms().List(c.f, c.s, store.Page{}, names)
			if err != nil {
				return err
			}
			if !slices.Equal(alarmIDs(got), c.want) || total != len(c.want) {
				t.Errorf("filter %+v, sort %+v: %v of %d; want %v", c.f, c.s, alarmIDs(got), total, c.want)
			}
		}
		return nil
	})
}

// testAlarmListNamesOfTheirOwner: an alarm recorded while its device was
// with another organization or partner has no device name to filter or
// sort by, since the device's name now is its new owner's.
func testAlarmListNamesOfTheirOwner(t *testing.T, e store.Engine) {
	fx := SeedAlarms(t, e)
	var own, before, otherPartner *store.Alarm
	write(t, e, func(r store.Records) error {
		var err error
		// IMEIs[1] ("van") is with Org and P now.
		if own, err = NewAlarm(r, fx.IMEIs[1], fx.Org, fx.P, store.AlarmSDCardFailing, AlarmTime); err != nil {
			return err
		}
		if before, err = NewAlarm(r, fx.IMEIs[1], fx.Org2, fx.Q, store.AlarmSDCardFailing, AlarmTime.Add(time.Millisecond)); err != nil {
			return err
		}
		if otherPartner, err = NewAlarm(r, fx.IMEIs[1], fx.Org, fx.Q, store.AlarmSDCardFailing, AlarmTime.Add(2*time.Millisecond)); err != nil {
			return err
		}
		for _, a := range []*store.Alarm{own, before, otherPartner} {
			if err := r.Alarms().Insert(a); err != nil {
				return err
			}
		}
		return nil
	})
	read(t, e, func(r store.Records) error {
		names := recordNames{r}
		got, total, err := r.Alarms().List(store.AlarmFilter{DeviceName: "van", IMEI: fx.IMEIs[1]}, store.Sort{}, store.Page{}, names)
		if err != nil {
			return err
		}
		if want := []int64{own.ID}; !slices.Equal(alarmIDs(got), want) || total != 1 {
			t.Errorf("alarms of the device named van: %v of %d; want %v", alarmIDs(got), total, want)
		}
		// By device name: the nameless two first, by id, then its own.
		got, _, err = r.Alarms().List(store.AlarmFilter{IMEI: fx.IMEIs[1]}, store.Sort{Key: store.AlarmByDeviceName}, store.Page{}, names)
		if err != nil {
			return err
		}
		if want := []int64{before.ID, otherPartner.ID, own.ID}; !slices.Equal(alarmIDs(got), want) {
			t.Errorf("the device's alarms by device name: %v; want %v", alarmIDs(got), want)
		}
		return nil
	})
}
