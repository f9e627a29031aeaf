package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestAlarmRows: what the schema keeps beyond the contract (the engine
// suite tests the alarms themselves): an alarm id inserted twice and a
// second recipient of one kind, address, partner and organization are
// conflicts, LastID counts an id drawn in a transaction that failed, a
// purge refuses a malformed resume position, and a purged alarm's notes
// go with it.
func TestAlarmRows(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	f := seedAlarms(t, e)
	ctx := context.Background()
	var a *store.Alarm
	recipient := &store.AlarmRecipient{Kind: store.RecipientHealth, Email: "b@example.com", PartnerID: f.Q,
		CreatedByAudienceName: store.AudiencePartner, CreatedAt: alarmTime}
	write(t, e, func(r *tx) (err error) {
		if a, err = newAlarm(r, f.IMEIs[0], f.Org, f.P, store.AlarmSDCardMissing, alarmTime); err != nil {
			return err
		}
		a.Open = false
		note, err := r.Alarms().NextNoteID()
		if err != nil {
			return err
		}
		a.Comments = []store.AlarmComment{{ID: note, AlarmID: a.ID, Details: "x",
			CreatedByAudienceName: store.AudienceSystem, CreatedAt: alarmTime}}
		if err := r.Alarms().Insert(a); err != nil {
			return err
		}
		return r.AlarmRecipients().Insert(recipient)
	})
	for name, fn := range map[string]func(r *tx) error{
		"an alarm id inserted twice": func(r *tx) error { return r.Alarms().Insert(a) },
		"a second recipient of one kind, address, partner and organization": func(r *tx) error {
			dup := *recipient
			return r.AlarmRecipients().Insert(&dup)
		},
	} {
		if err := e.update(ctx, fn); !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: %v; want ErrConflict", name, err)
		}
	}
	boom := errors.New("boom")
	var dropped int64
	err := e.update(ctx, func(r *tx) (err error) {
		dropped, err = r.Alarms().NextID()
		return errors.Join(err, boom)
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	read(t, e, func(r *tx) error {
		if last, err := r.Alarms().LastID(); err != nil || last != dropped {
			t.Errorf("LastID = %d, %v; want %d, the last id drawn, though its transaction failed", last, err, dropped)
		}
		return nil
	})
	cut := store.Cutoffs{f.Org: alarmTime.Add(time.Hour)}
	err = e.update(ctx, func(r *tx) error {
		_, _, err := r.Alarms().Purge(store.AlarmPurge{Cutoffs: cut, From: []byte("x"), Limit: 3})
		return err
	})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Purge from a malformed position: %v; want ErrInvalid", err)
	}
	write(t, e, func(r *tx) error {
		n, _, err := r.Alarms().Purge(store.AlarmPurge{Cutoffs: cut, Limit: 3})
		if err == nil && n != 1 {
			t.Errorf("purged %d alarms; want 1", n)
		}
		return err
	})
	var notes int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM alarm_notes`).Scan(&notes); err != nil || notes != 0 {
		t.Errorf("%d notes of the purged alarm remain (%v)", notes, err)
	}
}

// TestAlarmTriples checks triples to the millisecond, their take-over by a
// second alarm and that they outlive a purge.
func TestAlarmTriples(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	f := seedAlarms(t, e)
	imei, def := f.IMEIs[1], store.AlarmCameraDisconnected
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
		if first, err = newAlarm(t, imei, f.Org, f.P, def, at); err != nil {
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
		if second, err = newAlarm(t, imei, f.Org, f.P, def, at.Add(time.Microsecond)); err != nil {
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
		n, _, err := r.Alarms().Purge(store.AlarmPurge{Cutoffs: store.Cutoffs{f.Org: at.Add(time.Hour)}, Limit: 10})
		if err == nil && n != 2 {
			t.Errorf("purged %d alarms; want 2", n)
		}
		return err
	})
	if !taken(at) {
		t.Error("a purged alarm's triple is free")
	}
}
