package postgres

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// TestOpenAlarms records, replaces and forgets open alarms by device and
// definition; a device's records go with the device.
func TestOpenAlarms(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	fx := seedAlarms(t, e)
	var a, b, c *store.Alarm
	write(t, e, func(r *tx) error {
		for i, p := range []**store.Alarm{&a, &b, &c} {
			var err error
			if *p, err = newAlarm(r, fx.IMEIs[i%2], fx.Org, fx.P, store.AlarmSDCardMissing, alarmTime.Add(time.Duration(i)*time.Second)); err != nil {
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
	one, two := fx.IMEIs[0], fx.IMEIs[1]
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
	t.Parallel()
	e := openPrepared(t)
	fx := seedAlarms(t, e)
	ctx := context.Background()
	imei := fx.IMEIs[0]
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
	other := fx.IMEIs[1]
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

// TestStatusReadAhead runs what a status report reads and writes in a
// group commit that read its devices ahead: the health state, the open
// alarms and the auxiliary cameras are answered without a round trip, the
// writes are held back, each read after a write sees it, and what the
// transaction committed is what it wrote.
func TestStatusReadAhead(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	fx := seedAlarms(t, e)
	one, two := fx.IMEIs[0], fx.IMEIs[1]
	var a *store.Alarm
	cams := []store.AuxCamera{{CameraID: 51, SerialNumber: "S51", Kind: "wifi", Paired: true}}
	write(t, e, func(r *tx) (err error) {
		if a, err = newAlarm(r, one, fx.Org, fx.P, store.AlarmSDCardMissing, alarmTime); err != nil {
			return err
		}
		return errors.Join(r.Alarms().Insert(a), r.OpenAlarms().Put(one, store.AlarmSDCardMissing, a.ID),
			r.DeviceHealthStates().Put(&store.HealthState{IMEI: one, RecordingTest: "failed", ReportedAt: alarmTime}),
			r.AuxCameras().Put(one, cams))
	})
	later := alarmTime.Add(time.Minute)
	write(t, e, func(r *tx) error {
		p := pipeOf(r)
		if err := r.Prefetch(store.ReadAhead{IMEIs: []string{one, two}, Now: later}); err != nil {
			return err
		}
		p.StartJob(1)
		trips := p.trips
		h, err := r.DeviceHealthStates().Get(one)
		if err != nil || h.RecordingTest != "failed" || !h.ReportedAt.Equal(alarmTime) {
			t.Errorf("health state read ahead: %+v, %v", h, err)
		}
		if _, err := r.DeviceHealthStates().Get(two); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("health state of a device that never reported: %v, want not found", err)
		}
		if id, err := r.OpenAlarms().Get(one, store.AlarmSDCardMissing); err != nil || id != a.ID {
			t.Errorf("open alarm read ahead: %d, %v; want %d", id, err, a.ID)
		}
		if id, err := r.OpenAlarms().Get(two, store.AlarmSDCardMissing); err != nil || id != 0 {
			t.Errorf("open alarm of a device with none: %d, %v", id, err)
		}
		if got, err := r.AuxCameras().Get(one); err != nil || !reflect.DeepEqual(got, cams) {
			t.Errorf("cameras read ahead: %+v, %v; want %+v", got, err, cams)
		}
		if _, err := r.AuxCameras().Get(two); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("cameras of a device without a list: %v, want not found", err)
		}
		dev, err := r.Devices().Get(two)
		if err != nil {
			return err
		}
		dev.Name = "renamed in a group commit"
		err = errors.Join(r.DeviceHealthStates().Put(&store.HealthState{IMEI: one, RecordingTest: "passed", ReportedAt: later}),
			r.OpenAlarms().Delete(one, store.AlarmSDCardMissing),
			r.OpenAlarms().Put(two, store.AlarmPowerDisconnected, a.ID),
			r.Devices().Put(dev))
		if err != nil {
			return err
		}
		if id, err := r.OpenAlarms().Get(one, store.AlarmSDCardMissing); err != nil || id != 0 {
			t.Errorf("open alarm after its delete: %d, %v", id, err)
		}
		if id, err := r.OpenAlarms().Get(two, store.AlarmPowerDisconnected); err != nil || id != a.ID {
			t.Errorf("open alarm after its put: %d, %v; want %d", id, err, a.ID)
		}
		if p.trips != trips || len(p.queued) != 4 {
			t.Errorf("%d round trips and %d writes queued for a status report read ahead; want 0 and 4", p.trips-trips, len(p.queued))
		}
		if h, err := r.DeviceHealthStates().Get(one); err != nil || h.RecordingTest != "passed" {
			t.Errorf("health state read after its write: %+v, %v", h, err)
		}
		return nil
	})
	read(t, e, func(r *tx) error {
		h, err := r.DeviceHealthStates().Get(one)
		if err != nil || h.RecordingTest != "passed" || !h.ReportedAt.Equal(later) {
			t.Errorf("health state committed: %+v, %v", h, err)
		}
		if id, err := r.OpenAlarms().Get(one, store.AlarmSDCardMissing); err != nil || id != 0 {
			t.Errorf("open alarm deleted: %d, %v", id, err)
		}
		if id, err := r.OpenAlarms().Get(two, store.AlarmPowerDisconnected); err != nil || id != a.ID {
			t.Errorf("open alarm put: %d, %v; want %d", id, err, a.ID)
		}
		if d, err := r.Devices().Get(two); err != nil || d.Name != "renamed in a group commit" {
			t.Errorf("device put in a group commit: %+v, %v", d, err)
		}
		return nil
	})
}

// TestQueuedDeviceUpdateLosesToAConcurrentRemoval: a group commit's held
// back update of a device that another transaction removed after this one
// read it fails the transaction as a serialisation conflict, never as an
// update of nothing, and the transaction run again finds the device gone.
func TestQueuedDeviceUpdateLosesToAConcurrentRemoval(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	fx := seedAlarms(t, e)
	imei := fx.IMEIs[0]
	ctx := context.Background()
	attempts := 0
	err := e.updateAt(ctx, pgx.RepeatableRead, 0, func(r *tx) error {
		attempts++
		if err := r.Prefetch(store.ReadAhead{IMEIs: []string{imei}, Now: alarmTime}); err != nil {
			return err
		}
		pipeOf(r).StartJob(1)
		dev, err := r.Devices().Get(imei)
		if err != nil {
			return err
		}
		if attempts == 1 {
			if _, err := e.pool.Exec(ctx, `DELETE FROM devices WHERE imei = $1`, imei); err != nil {
				t.Fatal(err)
			}
		}
		dev.Name = "gone meanwhile"
		if err := r.Devices().Put(dev); err != nil {
			t.Errorf("held back update: %v", err)
		}
		_, err = r.Devices().Get(fx.IMEIs[1])
		return err
	})
	if attempts != 2 || !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after a concurrent removal: %d attempts, %v; want 2, the second finding the device gone", attempts, err)
	}
}
