package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func boolp(b bool) *bool { return &b }

func (f *fleetFixture) openAlarms(imei string) map[int64]Alarm {
	f.t.Helper()
	out := map[int64]Alarm{}
	f.view(func(tx *Tx) error {
		as, _, err := tx.Alarms(AlarmFilter{IMEI: imei, Open: boolp(true)}, Sort{}, Page{})
		for _, a := range as {
			out[a.AlarmDefinitionID] = a
		}
		return err
	})
	return out
}

func TestHealthAlarms(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		apply := func(st DeviceHealth) []Alarm {
			t.Helper()
			var raised []Alarm
			f.update(func(tx *Tx) error {
				var err error
				raised, err = tx.ApplyHealthAlarms(dev, st)
				return err
			})
			return raised
		}
		sick := DeviceHealth{RecordingTest: "failed", SDCard: &SDCardHealth{Present: true, Healthy: false},
			PowerConnected: boolp(false), Cameras: []CameraHealth{{ID: 1, Connected: true}, {ID: 2, Connected: false}}}
		raised := apply(sick)
		if len(raised) != 4 {
			t.Fatalf("raised %d alarms, want 4 (recording, SD failing, power, camera)", len(raised))
		}
		open := f.openAlarms(dev.IMEI)
		for _, def := range []int64{AlarmRecordingFailed, AlarmSDCardFailing, AlarmPowerDisconnected, AlarmCameraDisconnected} {
			a, ok := open[def]
			if !ok {
				t.Fatalf("no open alarm %d in %+v", def, open)
			}
			if len(a.Actions) != 1 || a.Actions[0].Type != "open" || a.Actions[0].CreatedByAudienceName != AudienceSystem {
				t.Errorf("alarm %d actions %+v, want one open by the system", def, a.Actions)
			}
		}
		if !strings.Contains(open[AlarmCameraDisconnected].Details, "in-cabin camera (2)") {
			t.Errorf("camera alarm details %q", open[AlarmCameraDisconnected].Details)
		}
		if got := apply(sick); len(got) != 0 {
			t.Fatalf("the same report raised %d more alarms, want none while open", len(got))
		}
		if msgs := f.messages(MessageAlarm); len(msgs) != 4 {
			t.Fatalf("%d alarm messages, want 4", len(msgs))
		} else {
			n := msgs[0].Alarm
			if msgs[0].SubType != "created" || n == nil || n.OrganizationName != "Fleet one" || n.PartnerName != "Partner" ||
				n.Alarm.AlarmDefinitionID == 0 || n.Alarm.IMEI != dev.IMEI {
				t.Errorf("alarm message %+v", msgs[0])
			}
		}

		// A report that leaves members out changes nothing; a healthy one closes.
		apply(DeviceHealth{})
		if len(f.openAlarms(dev.IMEI)) != 4 {
			t.Fatal("a report without health members closed alarms")
		}
		apply(DeviceHealth{RecordingTest: "passed", SDCard: &SDCardHealth{Present: false}, PowerConnected: boolp(true),
			Cameras: []CameraHealth{{ID: 1, Connected: true}, {ID: 2, Connected: true}}})
		open = f.openAlarms(dev.IMEI)
		if len(open) != 1 || open[AlarmSDCardMissing].ID == 0 {
			t.Fatalf("open after recovery %+v, want only SD card missing", open)
		}
		closed := 0
		for _, m := range f.messages(MessageAlarm) {
			if m.SubType == "closed" {
				closed++
			}
		}
		if closed != 4 {
			t.Fatalf("%d closed messages, want 4", closed)
		}
		f.view(func(tx *Tx) error {
			as, _, _ := tx.Alarms(AlarmFilter{IMEI: dev.IMEI, DefinitionID: AlarmRecordingFailed}, Sort{}, Page{})
			if len(as) != 1 || as[0].Open || !as[0].AutoClosed || as[0].LastCloseAt.IsZero() {
				t.Errorf("recording alarm after recovery %+v", as)
			}
			return nil
		})
		// After closing, the problem raises a new alarm.
		if got := apply(DeviceHealth{RecordingTest: "failed"}); len(got) != 1 {
			t.Fatalf("a new failure raised %d alarms, want 1", len(got))
		}
	})
}

func TestOfflineAlarm(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		seen := f.clock.Now()
		f.clock.Advance(23 * time.Hour)
		f.update(func(tx *Tx) error {
			if _, created, err := tx.RaiseOfflineAlarm(dev, seen, 24*time.Hour); created || err != nil {
				t.Errorf("raised after 23h: %v %v", created, err)
			}
			if _, created, err := tx.RaiseOfflineAlarm(dev, time.Time{}, 24*time.Hour); created || err != nil {
				t.Errorf("raised for a device that never connected: %v %v", created, err)
			}
			return nil
		})
		f.clock.Advance(2 * time.Hour)
		f.update(func(tx *Tx) error {
			a, created, err := tx.RaiseOfflineAlarm(dev, seen, 24*time.Hour)
			if !created || err != nil || !strings.Contains(a.Details, "no contact since") {
				t.Errorf("offline alarm %+v %v %v", a, created, err)
			}
			return nil
		})
		f.update(func(tx *Tx) error { _, err := tx.ApplyHealthAlarms(dev, DeviceHealth{}); return err })
		if len(f.openAlarms(dev.IMEI)) != 0 {
			t.Fatal("a status report did not close the offline alarm")
		}
	})
}

func TestSimulatedAlarmAndActions(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		at := time.Date(2026, 3, 10, 8, 0, 0, 0, time.UTC)
		user := Actor{UserID: 7, Email: "ops@example.com", PartnerID: f.partner.ID}
		var id int64
		err := f.db.Update(t.Context(), user, func(tx *Tx) error {
			a, err := tx.SimulateAlarm(dev, AlarmSDCardMissing, at, "drill")
			if err != nil {
				return err
			}
			id = a.ID
			if !a.Simulated || !a.Open || a.UserID != 7 || len(a.Comments) != 1 || a.Comments[0].Details != "drill" ||
				a.Comments[0].CreatedByAudienceName != AudiencePartner || a.Comments[0].CommentorName != "ops@example.com" {
				t.Errorf("simulated alarm %+v", a)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{"read", "close"} {
			if err := f.db.Update(t.Context(), user, func(tx *Tx) error { _, err := tx.ActOnAlarm(id, typ); return err }); err != nil {
				t.Fatal(err)
			}
		}
		err = f.db.Update(t.Context(), user, func(tx *Tx) error { _, err := tx.SimulateAlarm(dev, AlarmSDCardMissing, at, ""); return err })
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), dev.IMEI) || !strings.Contains(err.Error(), "1002") ||
			!strings.Contains(err.Error(), "2026-03-10T08:00:00.000Z") {
			t.Fatalf("second simulation of a closed alarm's triple: %v", err)
		}
		f.update(func(tx *Tx) error {
			if _, err := tx.SimulateAlarm(dev, AlarmSDCardMissing, at.Add(time.Second), ""); err != nil {
				t.Errorf("another createdAt: %v", err)
			}
			if _, err := tx.SimulateAlarm(dev, 42, at, ""); !errors.Is(err, ErrInvalid) {
				t.Errorf("unknown definition: %v", err)
			}
			if _, err := tx.ActOnAlarm(id, "dance"); !errors.Is(err, ErrInvalid) {
				t.Errorf("unknown action: %v", err)
			}
			if _, err := tx.CommentOnAlarm(id, "  "); !errors.Is(err, ErrInvalid) {
				t.Errorf("empty comment: %v", err)
			}
			c, err := tx.CommentOnAlarm(id, "replaced the card")
			if err != nil || c.AlarmID != id {
				t.Errorf("comment %+v %v", c, err)
			}
			a, _ := tx.Alarm(id)
			if a.Open || !a.Read || a.LastReadAt.IsZero() || a.LastCloseAt.IsZero() || len(a.Actions) != 3 || len(a.Comments) != 2 {
				t.Errorf("alarm after read, close and comment: %+v", a)
			}
			return nil
		})
	})
}

func TestRaiseOfflineAlarms(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		gone := f.addDevice(1, f.org, f.partner.ID)
		recent := f.addDevice(2, f.org, f.partner.ID)
		online := f.addDevice(3, f.org, f.partner.ID)
		f.addDevice(4, f.org, f.partner.ID) // never connected
		t0 := f.clock.Now()
		f.update(func(tx *Tx) error {
			for _, l := range []DeviceLink{
				{IMEI: gone.IMEI, Presence: PresenceOffline, LastSeen: t0.Add(-30 * time.Hour), DisconnectedAt: t0.Add(-25 * time.Hour)},
				{IMEI: recent.IMEI, Presence: PresenceOffline, LastSeen: t0.Add(-time.Hour), DisconnectedAt: t0.Add(-time.Hour)},
				{IMEI: online.IMEI, Presence: PresenceOnline, ConnectionID: "c1", LastSeen: t0.Add(-48 * time.Hour)},
			} {
				if err := tx.PutDeviceLink(&l); err != nil {
					return err
				}
			}
			return nil
		})
		for i, want := range []int{1, 0} {
			n, err := f.db.RaiseOfflineAlarms(t.Context(), 24*time.Hour)
			if err != nil || n != want {
				t.Fatalf("run %d raised %d (%v), want %d", i, n, err, want)
			}
		}
		open := f.openAlarms(gone.IMEI)
		if a, ok := open[AlarmDeviceOffline]; !ok || !strings.Contains(a.Details, t0.Add(-25*time.Hour).Format(time.RFC3339)) {
			t.Fatalf("offline alarm of the device gone for 25 hours: %+v", open)
		}
		if len(f.openAlarms(online.IMEI)) != 0 || len(f.openAlarms(recent.IMEI)) != 0 {
			t.Fatal("an online or recently seen device got an offline alarm")
		}
	})
}

func TestApplyStatusReport(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		period := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		st := DeviceHealth{RecordingTest: "failed",
			Cameras:   []CameraHealth{{ID: 1, Connected: true}, {ID: 51, Connected: true, Kind: "wired"}},
			DataUsage: &DataUsage{PeriodStart: period, BytesUp: 10, BytesDown: 20}}
		f.update(func(tx *Tx) error {
			raised, err := tx.ApplyStatusReport(dev, st)
			if err != nil || len(raised) != 1 {
				t.Errorf("raised %d alarms (%v), want 1", len(raised), err)
			}
			// A malformed usage member does not refuse the report.
			_, err = tx.ApplyStatusReport(dev, DeviceHealth{DataUsage: &DataUsage{}})
			return err
		})
		f.view(func(tx *Tx) error {
			ps, _ := tx.DataUsage(dev.IMEI, 0)
			cams, _ := tx.AuxCameras(dev.IMEI)
			if len(ps) != 1 || ps[0].BytesDown != 20 || len(cams) != 1 || !cams[0].Connected || cams[0].Kind != "wired" {
				t.Errorf("usage %+v cameras %+v", ps, cams)
			}
			return nil
		})
	})
}
