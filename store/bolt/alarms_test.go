package bolt_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// The layout of the alarm buckets: what earlier versions wrote is read,
// and what is written now is what they wrote.

var alarmT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	alarmIMEI = "352045100000029"
	alarmOrg  = int64(7)
)

var alarmDev = &store.Device{IMEI: alarmIMEI, OrganizationID: alarmOrg, PartnerID: 3}

// openAlarmStore opens a store at a new path; it closes when the test ends.
func openAlarmStore(t *testing.T, clock *storetest.Clock) (*store.DB, *bbolt.DB) {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "fleetcam.db"), store.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, db.Engine().(*boltstore.Engine).Bolt()
}

func alarmUpdate(t *testing.T, db *store.DB, fn func(tx *store.Tx) error) {
	t.Helper()
	if err := db.Update(t.Context(), store.Actor{Source: "system"}, fn); err != nil {
		t.Fatal(err)
	}
}

// alarmBE8 is v as 8 bytes big-endian, as every id, definition and time
// of the alarm keys.
func alarmBE8(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// alarmKey is imei, 0, then the 8-byte parts: the keys of alarm_open and
// alarm_triples.
func alarmKey(imei string, parts ...int64) []byte {
	k := append([]byte(imei), 0)
	for _, p := range parts {
		k = append(k, alarmBE8(p)...)
	}
	return k
}

func TestAlarmsWrittenByEarlierVersionsAreRead(t *testing.T) {
	db, b := openAlarmStore(t, storetest.NewClock(alarmT0.Add(time.Hour)))
	simulatedAt := alarmT0.Add(-time.Hour)
	err := b.Update(func(btx *bbolt.Tx) error {
		alarms := btx.Bucket([]byte("alarms"))
		for id, raw := range map[int64]string{
			1: `{"id":1,"imei":"352045100000029","organizationId":7,"partnerId":3,"alarmDefinitionId":1002,` +
				`"details":"SD card is not mounted","createdAt":"2026-03-01T12:00:00Z","open":true,"read":false,"comments":[],` +
				`"actions":[{"id":1,"alarmId":1,"type":"open","createdByAudienceName":"fleetcam","createdById":0,` +
				`"createdAt":"2026-03-01T12:00:00Z","updatedAt":"2026-03-01T12:00:00Z"}]}`,
			2: `{"id":2,"imei":"352045100000029","organizationId":7,"partnerId":3,"alarmDefinitionId":1005,` +
				`"details":"Power disconnected (simulated)","createdAt":"2026-03-01T11:00:00Z","lastCloseAt":"2026-03-01T11:30:00Z",` +
				`"open":false,"read":false,"simulated":true,"comments":[{"id":3,"alarmId":2,"details":"drill",` +
				`"createdByAudienceName":"partner","createdById":9,"commentorName":"Ops","createdAt":"2026-03-01T11:00:00Z"}],` +
				`"actions":[]}`,
		} {
			if err := alarms.Put(alarmBE8(id), []byte(raw)); err != nil {
				return err
			}
		}
		if err := alarms.SetSequence(2); err != nil {
			return err
		}
		if err := btx.Bucket([]byte("alarm_notes")).SetSequence(3); err != nil {
			return err
		}
		if err := btx.Bucket([]byte("alarm_open")).Put(alarmKey(alarmIMEI, store.AlarmSDCardMissing), alarmBE8(1)); err != nil {
			return err
		}
		triples := btx.Bucket([]byte("alarm_triples"))
		if err := triples.Put(alarmKey(alarmIMEI, store.AlarmSDCardMissing, alarmT0.UnixMilli()), alarmBE8(1)); err != nil {
			return err
		}
		if err := triples.Put(alarmKey(alarmIMEI, store.AlarmPowerDisconnected, simulatedAt.UnixMilli()), alarmBE8(2)); err != nil {
			return err
		}
		health := `{"imei":"352045100000029","recordingTestResult":"failed","adasCalibrated":true,"reportedAt":"2026-03-01T12:00:00Z"}`
		if err := btx.Bucket([]byte("device_health_state")).Put([]byte(alarmIMEI), []byte(health)); err != nil {
			return err
		}
		recipients := btx.Bucket([]byte("alarm_recipients"))
		recipient := `{"id":1,"kind":"alarms","email":"ops@example.com","reportIntervalSeconds":3600,"partnerId":3,` +
			`"organizationId":7,"alarmDefinitions":[1002],"createdByAudienceName":"partner","createdById":9,"lastAlarmId":1,` +
			`"createdAt":"2026-03-01T10:00:00Z"}`
		if err := recipients.Put(alarmBE8(1), []byte(recipient)); err != nil {
			return err
		}
		return recipients.SetSequence(1)
	})
	if err != nil {
		t.Fatal(err)
	}

	alarmUpdate(t, db, func(tx *store.Tx) error {
		a, err := tx.Alarm(2)
		if err != nil {
			return err
		}
		if a.IMEI != alarmIMEI || a.AlarmDefinitionID != store.AlarmPowerDisconnected || a.Open || !a.Simulated ||
			!a.CreatedAt.Equal(simulatedAt) || len(a.Comments) != 1 || a.Comments[0].CommentorName != "Ops" {
			t.Errorf("alarm 2 as stored before: %+v", a)
		}
		// The open index still holds alarm 1 for its device and definition.
		got, created, err := tx.RaiseAlarm(alarmDev, store.AlarmSDCardMissing, alarmT0.Add(time.Hour), "")
		if err != nil || created || got.ID != 1 {
			t.Errorf("raising the open alarm again: %+v created %v (%v), want alarm 1", got, created, err)
		}
		// A closed alarm's triple still blocks a simulation.
		if _, err := tx.SimulateAlarm(alarmDev, store.AlarmPowerDisconnected, simulatedAt, ""); !errors.Is(err, store.ErrConflict) {
			t.Errorf("simulating a stored triple: %v, want ErrConflict", err)
		}
		// A system alarm at a stored triple's time moves a millisecond on.
		moved, _, err := tx.RaiseAlarm(alarmDev, store.AlarmPowerDisconnected, simulatedAt, "")
		if err != nil {
			return err
		}
		if moved.ID != 3 || !moved.CreatedAt.Equal(simulatedAt.Add(time.Millisecond)) || moved.Actions[0].ID != 4 {
			t.Errorf("new alarm %d created %s with action %d, want alarm 3 a millisecond on with action 4 (the sequences go on)",
				moved.ID, moved.CreatedAt, moved.Actions[0].ID)
		}
		h, err := tx.DeviceHealthState(alarmIMEI)
		if err != nil || h.RecordingTest != "failed" || !h.AdasCalibrated || !h.ReportedAt.Equal(alarmT0) {
			t.Errorf("health state %+v (%v)", h, err)
		}
		r, err := tx.AlarmRecipient(1)
		if err != nil || r.Email != "ops@example.com" || r.LastAlarmID != 1 || len(r.AlarmDefinitions) != 1 {
			t.Errorf("recipient %+v (%v)", r, err)
		}
		next := &store.AlarmRecipient{Kind: store.RecipientHealth, Email: "duty@example.com", PartnerID: 3}
		if err := tx.AddAlarmRecipient(next); err != nil {
			return err
		}
		if next.ID != 2 || next.LastAlarmID != 3 {
			t.Errorf("new recipient %d with cursor %d, want 2 at alarm 3", next.ID, next.LastAlarmID)
		}
		return nil
	})
}

func TestAlarmsAreWrittenAsEarlierVersionsWrote(t *testing.T) {
	db, b := openAlarmStore(t, storetest.NewClock(alarmT0))
	var a *store.Alarm
	alarmUpdate(t, db, func(tx *store.Tx) error {
		var err error
		if a, _, err = tx.RaiseAlarm(alarmDev, store.AlarmRecordingFailed, alarmT0.Add(500*time.Microsecond), "failed"); err != nil {
			return err
		}
		if _, err := tx.ApplyHealthAlarms(alarmDev, store.DeviceHealth{RecordingTest: "failed"}); err != nil {
			return err
		}
		return tx.AddAlarmRecipient(&store.AlarmRecipient{Kind: store.RecipientAlarms, Email: "ops@example.com", PartnerID: 3})
	})
	err := b.View(func(btx *bbolt.Tx) error {
		var stored map[string]any
		if err := json.Unmarshal(btx.Bucket([]byte("alarms")).Get(alarmBE8(a.ID)), &stored); err != nil {
			t.Fatalf("alarm %d under its 8-byte id: %v", a.ID, err)
		}
		if stored["imei"] != alarmIMEI || stored["alarmDefinitionId"] != float64(store.AlarmRecordingFailed) || stored["open"] != true {
			t.Errorf("stored alarm %v", stored)
		}
		if got := btx.Bucket([]byte("alarms")).Sequence(); got != uint64(a.ID) {
			t.Errorf("alarms sequence %d, want %d", got, a.ID)
		}
		if got := btx.Bucket([]byte("alarm_notes")).Sequence(); got != uint64(a.Actions[0].ID) {
			t.Errorf("alarm_notes sequence %d, want %d", got, a.Actions[0].ID)
		}
		open := btx.Bucket([]byte("alarm_open")).Get(alarmKey(alarmIMEI, store.AlarmRecordingFailed))
		if !bytes.Equal(open, alarmBE8(a.ID)) {
			t.Errorf("alarm_open entry %x, want %x", open, alarmBE8(a.ID))
		}
		triple := btx.Bucket([]byte("alarm_triples")).Get(alarmKey(alarmIMEI, store.AlarmRecordingFailed, alarmT0.UnixMilli()))
		if !bytes.Equal(triple, alarmBE8(a.ID)) {
			t.Errorf("alarm_triples entry %x, want %x (createdAt in unix ms)", triple, alarmBE8(a.ID))
		}
		var h store.HealthState
		if err := json.Unmarshal(btx.Bucket([]byte("device_health_state")).Get([]byte(alarmIMEI)), &h); err != nil || h.RecordingTest != "failed" {
			t.Errorf("health state under the IMEI: %+v (%v)", h, err)
		}
		var r store.AlarmRecipient
		if err := json.Unmarshal(btx.Bucket([]byte("alarm_recipients")).Get(alarmBE8(1)), &r); err != nil || r.Email != "ops@example.com" {
			t.Errorf("recipient under id 1: %+v (%v)", r, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Closing frees the device and definition.
	alarmUpdate(t, db, func(tx *store.Tx) error { _, err := tx.ActOnAlarm(a.ID, store.AlarmActionClose); return err })
	b.View(func(btx *bbolt.Tx) error {
		if v := btx.Bucket([]byte("alarm_open")).Get(alarmKey(alarmIMEI, store.AlarmRecordingFailed)); v != nil {
			t.Errorf("alarm_open entry %x left after the close", v)
		}
		return nil
	})
}

func TestAlarmPurgeBatchesAndKeepsTriples(t *testing.T) {
	db, b := openAlarmStore(t, storetest.NewClock(alarmT0))
	elsewhere := &store.Device{IMEI: "352045100000037", OrganizationID: alarmOrg + 1, PartnerID: 3}
	// Alarms 1 and 2 are closed and older than the cutoff: they go. Alarm 3
	// is open, 4 was created after the cutoff, 5 is of an organization
	// without one: they stay.
	alarms := []struct {
		dev   *store.Device
		def   int64
		at    time.Time
		close bool
	}{
		{alarmDev, store.AlarmSDCardMissing, alarmT0.Add(-time.Hour), true},
		{alarmDev, store.AlarmPowerDisconnected, alarmT0.Add(-2 * time.Hour), true},
		{alarmDev, store.AlarmRecordingFailed, alarmT0.Add(-3 * time.Hour), false},
		{alarmDev, store.AlarmSDCardFailing, alarmT0, true},
		{elsewhere, store.AlarmSDCardMissing, alarmT0.Add(-time.Hour), true},
	}
	var ids []int64
	alarmUpdate(t, db, func(tx *store.Tx) error {
		for _, s := range alarms {
			a, err := tx.SimulateAlarm(s.dev, s.def, s.at, "")
			if err != nil {
				return err
			}
			ids = append(ids, a.ID)
			if s.close {
				if _, err := tx.ActOnAlarm(a.ID, store.AlarmActionClose); err != nil {
					return err
				}
			}
		}
		return nil
	})
	e := db.Engine()
	purge := store.AlarmPurge{Cutoffs: store.Cutoffs{alarmOrg: alarmT0}, Limit: 1}
	var batches []int
	for {
		var n int
		err := e.Update(t.Context(), func(rec store.Records) error {
			var err error
			n, purge.From, err = rec.Alarms().Purge(purge)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, n)
		if purge.From == nil {
			break
		}
		if len(batches) > len(ids) {
			t.Fatalf("batches %v do not end", batches)
		}
	}
	if len(batches) != 3 || batches[0] != 1 || batches[1] != 1 || batches[2] != 0 {
		t.Errorf("batches deleted %v, want 1, 1 and 0 with limit 1", batches)
	}
	b.View(func(btx *bbolt.Tx) error {
		for i, id := range ids {
			stored := btx.Bucket([]byte("alarms")).Get(alarmBE8(id)) != nil
			if want := i >= 2; stored != want {
				t.Errorf("alarm %d stored %v, want %v", id, stored, want)
			}
		}
		if n := btx.Bucket([]byte("alarm_triples")).Stats().KeyN; n != len(ids) {
			t.Errorf("%d triples after the purge, want all %d", n, len(ids))
		}
		return nil
	})
	err := db.Update(t.Context(), store.Actor{}, func(tx *store.Tx) error {
		_, err := tx.SimulateAlarm(alarmDev, store.AlarmSDCardMissing, alarmT0.Add(-time.Hour), "")
		return err
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("simulating a purged alarm's triple: %v, want ErrConflict", err)
	}
}
