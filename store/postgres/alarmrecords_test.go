package postgres

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestOpenAlarms records, replaces and forgets open alarms by device and
// definition; a device's records go with the device.
func TestOpenAlarms(t *testing.T) {
	e := openPrepared(t)
	fx := seedAlarms(t, e)
	var a, b, c *store.Alarm
	write(t, e, func(r *tx) error {
		for i, p := range []**store.Alarm{&a, &b, &c} {
			var err error
			if *p, err = newAlarm(r, fx.imeis[i%2], fx.org, fx.p, store.AlarmSDCardMissing, alarmTime.Add(time.Duration(i)*time.Second)); err != nil {
				return err
			}
			if err := r.Alarms().Insert(*p); err != nil {
				return err
			}
		}
		return nil
	})
	get := func(imei string, def int64) int64 {
		t.Helper()
		var id int64
		read(t, e, func(r *tx) error {
			var err error
			id, err = r.OpenAlarms().Get(imei, def)
			return err
		})
		return id
	}
	one, two := fx.imeis[0], fx.imeis[1]
	if id := get(one, store.AlarmSDCardMissing); id != 0 {
		t.Fatalf("Get of nothing recorded = %d; want 0", id)
	}
	write(t, e, func(r *tx) error {
		return errors.Join(r.OpenAlarms().Put(one, store.AlarmSDCardMissing, a.ID),
			r.OpenAlarms().Put(one, store.AlarmPowerDisconnected, a.ID),
			r.OpenAlarms().Put(two, store.AlarmSDCardMissing, b.ID))
	})
	if got := get(one, store.AlarmSDCardMissing); got != a.ID {
		t.Errorf("Get = %d; want %d", got, a.ID)
	}
	write(t, e, func(r *tx) error { return r.OpenAlarms().Put(one, store.AlarmSDCardMissing, c.ID) })
	if got := get(one, store.AlarmSDCardMissing); got != c.ID {
		t.Errorf("Get after a second Put = %d; want %d", got, c.ID)
	}
	write(t, e, func(r *tx) error {
		return errors.Join(r.OpenAlarms().Delete(one, store.AlarmSDCardMissing),
			r.OpenAlarms().Delete(one, store.AlarmSDCardMissing), // none recorded: no error
			r.OpenAlarms().Delete(two, store.AlarmRecordingFailed))
	})
	if got := get(one, store.AlarmSDCardMissing); got != 0 {
		t.Errorf("Get after Delete = %d; want 0", got)
	}
	if got := get(one, store.AlarmPowerDisconnected); got != a.ID {
		t.Errorf("Delete of one definition forgot another: %d; want %d", got, a.ID)
	}
	write(t, e, func(r *tx) error { return r.OpenAlarms().DeleteDevice(one) })
	if got, other := get(one, store.AlarmPowerDisconnected), get(two, store.AlarmSDCardMissing); got != 0 || other != b.ID {
		t.Errorf("after DeleteDevice: %d and the other device's %d; want 0 and %d", got, other, b.ID)
	}
	if _, err := e.pool.Exec(context.Background(), `DELETE FROM devices WHERE imei = $1`, two); err != nil {
		t.Fatal(err)
	}
	if got := get(two, store.AlarmSDCardMissing); got != 0 {
		t.Errorf("a removed device's open alarm is still recorded: %d", got)
	}
}

// TestDeviceHealthStates stores, replaces and deletes health states.
func TestDeviceHealthStates(t *testing.T) {
	e := openPrepared(t)
	fx := seedAlarms(t, e)
	ctx := context.Background()
	imei := fx.imeis[0]
	err := e.view(ctx, func(r *tx) error { _, err := r.DeviceHealthStates().Get(imei); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a state never stored: %v; want ErrNotFound", err)
	}
	get := func() *store.HealthState {
		t.Helper()
		var h *store.HealthState
		read(t, e, func(r *tx) error {
			var err error
			h, err = r.DeviceHealthStates().Get(imei)
			return err
		})
		return h
	}
	for _, h := range []store.HealthState{
		{IMEI: imei, ReportedAt: alarmTime},
		{IMEI: imei, RecordingTest: "failed", AdasCalibrated: true, ReportedAt: alarmTime.Add(time.Minute)},
		{IMEI: imei, RecordingTest: "passed", ReportedAt: alarmTime.Add(time.Hour)},
	} {
		write(t, e, func(r *tx) error { return r.DeviceHealthStates().Put(&h) })
		if got := get(); !reflect.DeepEqual(*got, h) {
			t.Errorf("Get = %+v; want %+v", *got, h)
		}
	}
	write(t, e, func(r *tx) error {
		return errors.Join(r.DeviceHealthStates().Delete(imei), r.DeviceHealthStates().Delete(imei))
	})
	err = e.view(ctx, func(r *tx) error { _, err := r.DeviceHealthStates().Get(imei); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: %v; want ErrNotFound", err)
	}
	other := fx.imeis[1]
	write(t, e, func(r *tx) error {
		return r.DeviceHealthStates().Put(&store.HealthState{IMEI: other, ReportedAt: alarmTime})
	})
	if _, err := e.pool.Exec(ctx, `DELETE FROM devices WHERE imei = $1`, other); err != nil {
		t.Fatal(err)
	}
	err = e.view(ctx, func(r *tx) error { _, err := r.DeviceHealthStates().Get(other); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a removed device's health state: %v; want ErrNotFound", err)
	}
}

// TestAlarmRecipients inserts, reads, replaces, lists and deletes
// recipients.
func TestAlarmRecipients(t *testing.T) {
	e := openPrepared(t)
	fx := seedAlarms(t, e)
	ctx := context.Background()
	rs := []*store.AlarmRecipient{
		{Kind: store.RecipientAlarms, Email: "a@example.com", ReportIntervalSeconds: 60, PartnerID: fx.p,
			OrganizationID: fx.org, AlarmDefinitions: []int64{store.AlarmSDCardMissing, store.AlarmRecordingFailed},
			CreatedByAudienceName: store.AudienceOrganization, CreatedByID: 4, LastAlarmID: 12, CreatedAt: alarmTime},
		// partner-wide, every definition
		{Kind: store.RecipientHealth, Email: "b@example.com", ReportIntervalSeconds: 3600, PartnerID: fx.q,
			CreatedByAudienceName: store.AudiencePartner, CreatedAt: alarmTime},
		{Kind: store.RecipientAlarms, Email: "a@example.com", PartnerID: fx.p, CreatedByAudienceName: store.AudienceSystem,
			CreatedAt: alarmTime},
	}
	write(t, e, func(r *tx) error {
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
		read(t, e, func(r *tx) error {
			var err error
			l, err = r.AlarmRecipients().List()
			return err
		})
		return l
	}
	if got, want := list(), []store.AlarmRecipient{*rs[0], *rs[1], *rs[2]}; !reflect.DeepEqual(got, want) {
		t.Fatalf("List:\n got %+v\nwant %+v", got, want)
	}
	rs[0].AlarmDefinitions, rs[0].LastAlarmID, rs[0].LastReportAt = nil, 40, alarmTime.Add(time.Hour)
	write(t, e, func(r *tx) error { return r.AlarmRecipients().Put(rs[0]) })
	read(t, e, func(r *tx) error {
		got, err := r.AlarmRecipients().Get(rs[0].ID)
		if err == nil && !reflect.DeepEqual(got, rs[0]) {
			t.Errorf("Get after Put:\n got %+v\nwant %+v", got, rs[0])
		}
		return err
	})

	err := e.update(ctx, func(r *tx) error {
		dup := *rs[1]
		return r.AlarmRecipients().Insert(&dup)
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second recipient of the same kind, address, partner and organization: %v; want ErrConflict", err)
	}
	err = e.update(ctx, func(r *tx) error {
		gone := *rs[1]
		gone.ID = rs[2].ID + 10
		return r.AlarmRecipients().Put(&gone)
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Put of a recipient never stored: %v; want ErrNotFound", err)
	}
	write(t, e, func(r *tx) error {
		return errors.Join(r.AlarmRecipients().Delete(rs[1].ID), r.AlarmRecipients().Delete(rs[1].ID))
	})
	err = e.view(ctx, func(r *tx) error { _, err := r.AlarmRecipients().Get(rs[1].ID); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a deleted recipient: %v; want ErrNotFound", err)
	}
	if got, want := list(), []store.AlarmRecipient{*rs[0], *rs[2]}; !reflect.DeepEqual(got, want) {
		t.Errorf("List after Delete:\n got %+v\nwant %+v", got, want)
	}
	var next *store.AlarmRecipient
	write(t, e, func(r *tx) error {
		next = &store.AlarmRecipient{Kind: store.RecipientHealth, Email: "c@example.com", PartnerID: fx.p,
			CreatedByAudienceName: store.AudiencePartner, CreatedAt: alarmTime}
		return r.AlarmRecipients().Insert(next)
	})
	if next.ID <= rs[2].ID {
		t.Errorf("a recipient inserted after deletes has id %d; want more than %d", next.ID, rs[2].ID)
	}
}
