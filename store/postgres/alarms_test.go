package postgres

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// alarmFixture is the directory seedAlarms inserts: two partners, an
// organization of each, and devices of both, with their names.
type alarmFixture struct {
	partners  map[int64]string
	orgs      map[int64]string
	devices   map[string]string
	p, q      int64 // partners
	org, org2 int64
	imeis     []string
}

// alarmTime is a time with microseconds, which timestamptz keeps.
var alarmTime = time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)

// seedAlarms inserts the directory rows alarms refer to: partners P and
// Q, organizations Fleet (of P) and Ärger (of Q), and five devices, one
// without a name and two named alike.
func seedAlarms(t *testing.T, e *Engine) alarmFixture {
	t.Helper()
	s := seeder{t, e, alarmTime}
	f := alarmFixture{partners: map[int64]string{}, orgs: map[int64]string{}, devices: map[string]string{}}
	partner := func(name string) int64 {
		id := s.partner(name).ID
		f.partners[id] = name
		return id
	}
	org := func(name string, partner int64) int64 {
		id := s.organization(store.Organization{Name: name, PartnerID: partner, SSOSalt: []byte{0},
			Retention: store.Retention{PurgeDays: 31}}).ID
		f.orgs[id] = name
		return id
	}
	f.p, f.q = partner("P"), partner("Q")
	f.org, f.org2 = org("Fleet", f.p), org("Ärger", f.q)
	for i, d := range []struct {
		name     string
		org, ptn int64
	}{{"Truck ÄRGER", f.org, f.p}, {"van", f.org, f.p}, {"", f.org, f.q}, {"Van", f.org2, f.q}, {"\u212Aelvin bus", f.org2, f.q}} {
		imei := "35000000000000" + string(rune('1'+i))
		s.device(store.Device{IMEI: imei, Name: d.name, OrganizationID: d.org, PartnerID: d.ptn, Ownership: 1})
		f.devices[imei] = d.name
		f.imeis = append(f.imeis, imei)
	}
	return f
}

// newAlarm makes a new alarm of imei in org with an open action, as the
// store does, taking its ids from the engine.
func newAlarm(t *tx, imei string, org, partner, def int64, at time.Time) (*store.Alarm, error) {
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

// TestAlarmInsertGetPut stores an alarm with its notes, reads it back
// whole, replaces it (new, changed and dropped notes) and reads that back.
func TestAlarmInsertGetPut(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	f := seedAlarms(t, e)
	var a *store.Alarm
	write(t, e, func(t *tx) error {
		var err error
		if a, err = newAlarm(t, f.imeis[0], f.org, f.p, store.AlarmSDCardMissing, alarmTime); err != nil {
			return err
		}
		a.UserID = 7
		note, err := t.Alarms().NextNoteID()
		if err != nil {
			return err
		}
		a.Comments = append(a.Comments, store.AlarmComment{ID: note, AlarmID: a.ID, Details: "Simulated alarm",
			CreatedByAudienceName: store.AudienceOrganization, CreatedByID: 7, CommentorName: "Ann", CreatedAt: alarmTime})
		return t.Alarms().Insert(a)
	})
	get := func() *store.Alarm {
		t.Helper()
		var got *store.Alarm
		read(t, e, func(t *tx) error {
			var err error
			got, err = t.Alarms().Get(a.ID)
			return err
		})
		return got
	}
	if got := get(); !reflect.DeepEqual(got, a) {
		t.Fatalf("Get after Insert:\n got %+v\nwant %+v", got, a)
	}

	later := alarmTime.Add(time.Hour)
	write(t, e, func(t *tx) error {
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
	write(t, e, func(t *tx) error {
		a.Comments = []store.AlarmComment{}
		a.Actions = a.Actions[1:]
		return t.Alarms().Put(a)
	})
	if got := get(); !reflect.DeepEqual(got, a) {
		t.Fatalf("Get after a Put dropping notes:\n got %+v\nwant %+v", got, a)
	}

	ctx := context.Background()
	err := e.view(ctx, func(t *tx) error { _, err := t.Alarms().Get(a.ID + 100); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of an alarm never stored: %v; want ErrNotFound", err)
	}
	err = e.update(ctx, func(t *tx) error {
		b := *a
		b.ID += 100
		return t.Alarms().Put(&b)
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Put of an alarm never stored: %v; want ErrNotFound", err)
	}
	err = e.update(ctx, func(t *tx) error { return t.Alarms().Insert(a) })
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("Insert of an id stored: %v; want ErrConflict", err)
	}
}

// TestAlarmIDs draws alarm and note ids: each greater than the one before,
// LastID the greatest drawn even in a transaction that did not commit, and
// comments and actions from one sequence.
func TestAlarmIDs(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	read(t, e, func(t *tx) error {
		if last, err := t.Alarms().LastID(); err != nil || last != 0 {
			return errors.Join(err, errors.New("LastID of a new database is not 0"))
		}
		return nil
	})
	var ids, notes []int64
	write(t, e, func(t *tx) error {
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
	boom := errors.New("boom")
	var dropped int64
	err := e.update(context.Background(), func(t *tx) error {
		var err error
		dropped, err = t.Alarms().NextID()
		return errors.Join(err, boom)
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	for i := 1; i < 3; i++ {
		if ids[i] <= ids[i-1] || notes[i] <= notes[i-1] {
			t.Fatalf("ids %v, note ids %v; want each greater than the one before", ids, notes)
		}
	}
	if dropped <= ids[2] {
		t.Fatalf("NextID after %v gave %d", ids, dropped)
	}
	read(t, e, func(r *tx) error {
		if last, err := r.Alarms().LastID(); err != nil || last != dropped {
			t.Errorf("LastID = %d, %v; want %d, the last id drawn, though its transaction failed", last, err, dropped)
		}
		return nil
	})
}

// TestAlarmTriples checks triples to the millisecond, their take-over by a
// second alarm and that they outlive a purge.
func TestAlarmTriples(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	f := seedAlarms(t, e)
	imei, def := f.imeis[1], store.AlarmCameraDisconnected
	taken := func(at time.Time) bool {
		t.Helper()
		var ok bool
		read(t, e, func(t *tx) error {
			var err error
			ok, err = t.Alarms().TripleTaken(imei, def, at)
			return err
		})
		return ok
	}
	at := time.Date(2026, 2, 3, 4, 5, 6, 789_654_321, time.UTC)
	if taken(at) {
		t.Fatal("a triple is taken in an empty database")
	}
	var first, second *store.Alarm
	write(t, e, func(t *tx) error {
		var err error
		if first, err = newAlarm(t, imei, f.org, f.p, def, at); err != nil {
			return err
		}
		first.Open = false
		return t.Alarms().Insert(first)
	})
	for _, c := range []struct {
		at   time.Time
		want bool
	}{
		{at, true},
		{at.Truncate(time.Millisecond), true},
		{at.Truncate(time.Millisecond).Add(999 * time.Microsecond), true},
		{at.In(time.FixedZone("CET", 3600)), true},
		{at.Truncate(time.Millisecond).Add(time.Millisecond), false},
		{at.Truncate(time.Millisecond).Add(-time.Nanosecond), false},
	} {
		if got := taken(c.at); got != c.want {
			t.Errorf("TripleTaken at %s = %v; want %v", c.at.Format(time.RFC3339Nano), got, c.want)
		}
	}
	if taken2 := func() bool {
		var ok bool
		read(t, e, func(t *tx) error {
			var err error
			ok, err = t.Alarms().TripleTaken(imei, store.AlarmPowerDisconnected, at)
			return err
		})
		return ok
	}(); taken2 {
		t.Error("a triple of another definition is taken")
	}
	write(t, e, func(t *tx) error {
		var err error
		if second, err = newAlarm(t, imei, f.org, f.p, def, at.Add(time.Microsecond)); err != nil {
			return err
		}
		return t.Alarms().Insert(second)
	})
	var holder int64
	if err := e.pool.QueryRow(context.Background(), `SELECT alarm_id FROM alarm_triples`).Scan(&holder); err != nil || holder != second.ID {
		t.Errorf("the triple is held by alarm %d, %v; want %d, the last inserted with it", holder, err, second.ID)
	}
	write(t, e, func(r *tx) error {
		second.Open = false
		if err := r.Alarms().Put(second); err != nil {
			return err
		}
		n, _, err := r.Alarms().Purge(store.AlarmPurge{Cutoffs: store.Cutoffs{f.org: at.Add(time.Hour)}, Limit: 10})
		if err == nil && n != 2 {
			t.Errorf("purged %d alarms; want 2", n)
		}
		return err
	})
	if !taken(at) {
		t.Error("a purged alarm's triple is free")
	}
}
