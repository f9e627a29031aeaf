package store_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// settingsFixture is a store with one organization of devices.
type settingsFixture struct {
	t     *testing.T
	db    *DB
	org   *Organization
	imeis []string
}

// settingsIMEI returns the n-th test IMEI: 14 digits and a Luhn check digit.
func settingsIMEI(n int) string {
	body := fmt.Sprintf("35766010%06d", n)
	for d := 0; d <= 9; d++ {
		if s := body + string(rune('0'+d)); ValidIMEI(s) {
			return s
		}
	}
	panic("no check digit")
}

func newSettingsFixture(t *testing.T, devices int) *settingsFixture {
	t.Helper()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db := storetest.Open(t, storetest.WithClock(func() time.Time { return now }))
	f := &settingsFixture{t: t, db: db}
	f.update(func(tx *Tx) error {
		p, err := tx.CreatePartner("P")
		if err != nil {
			return err
		}
		if f.org, err = tx.CreateOrganization(p.ID, "Org", []byte("salt")); err != nil {
			return err
		}
		for i := 0; i < devices; i++ {
			imei := settingsIMEI(i + 1)
			if err := tx.AddDevice(&Device{IMEI: imei, OrganizationID: f.org.ID, PartnerID: p.ID}); err != nil {
				return err
			}
			f.imeis = append(f.imeis, imei)
		}
		return nil
	})
	return f
}

func (f *settingsFixture) update(fn func(tx *Tx) error) {
	f.t.Helper()
	if err := f.db.Update(f.t.Context(), Actor{UserID: 42, Source: "test"}, fn); err != nil {
		f.t.Fatal(err)
	}
}

func (f *settingsFixture) effective(imei string) *Effective {
	f.t.Helper()
	var e *Effective
	if err := f.db.View(f.t.Context(), func(tx *Tx) (err error) { e, err = tx.EffectiveSettings(imei); return err }); err != nil {
		f.t.Fatal(err)
	}
	return e
}

func (f *settingsFixture) audit(action string) []AuditEntry {
	f.t.Helper()
	out, _, err := f.db.AuditLog(f.t.Context(), AuditFilter{Action: action}, Page{})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func TestEffectiveSettingsLayers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newSettingsFixture(t, 2)
		own, inherits := f.imeis[0], f.imeis[1]
		if e := f.effective(own); e.Device != DefaultDeviceConfig() || e.PrivacyMode != PrivacyModeOff || e.PrivacyModeSet || e.Version != 0 {
			t.Fatalf("defaults: %+v", e)
		}
		orgCfg := DefaultDeviceConfig()
		orgCfg.Brightness = 10
		f.update(func(tx *Tx) error {
			return tx.PutOrgSettings(&OrgSettings{OrganizationID: f.org.ID, Device: &orgCfg}, "test")
		})
		devCfg := DefaultDeviceConfig()
		devCfg.Brightness = 200
		f.update(func(tx *Tx) error {
			return tx.PutDeviceSettings(&DeviceSettings{IMEI: own, Device: &devCfg}, "test")
		})
		if e := f.effective(own); e.Device.Brightness != 200 || e.Version != 2 {
			t.Fatalf("own settings: brightness %d version %d", e.Device.Brightness, e.Version)
		}
		if e := f.effective(inherits); e.Device.Brightness != 10 || e.Version != 1 {
			t.Fatalf("organization default: brightness %d version %d", e.Device.Brightness, e.Version)
		}
	})
}

func TestUpdateOrgDeviceSettings(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newSettingsFixture(t, 3)
		var changed []string
		f.update(func(tx *Tx) (err error) {
			changed, err = tx.UpdateOrgDeviceSettings(f.org.ID, "device.events", func(ds *DeviceSettings) error {
				ev := DefaultEventConfig()
				ev.LaneWeavingTimes = 7
				ds.Events = &ev
				return nil
			})
			return err
		})
		if len(changed) != 3 {
			t.Fatalf("changed %v", changed)
		}
		for _, imei := range f.imeis {
			if e := f.effective(imei); e.Events.LaneWeavingTimes != 7 || e.Version != 1 {
				t.Fatalf("%s: %+v", imei, e)
			}
		}
		if n := len(f.audit("device.events")); n != 3 {
			t.Fatalf("%d audit entries, want 3", n)
		}
	})
}

func TestEventSettingDefaults(t *testing.T) {
	t.Parallel()
	off, on, speed := false, true, 40
	c := DefaultEventConfig()
	c.Events = map[string]EventSetting{
		"smoking":      {Enabled: true, VisualAlert: &off, MinimumSpeedKmh: &speed},
		"acceleration": {Enabled: true, AudioAlert: &on, DataType: DataSnapshot},
		"jolt":         {Enabled: false},
	}
	tests := []struct {
		name        string
		event       string
		audioAlarms bool
		want        ResolvedEvent
	}{
		{"absent follows audioAlarms on", "foodDrink", true, ResolvedEvent{Enabled: true, DataType: DataVideo, VisualAlert: true, AudioAlert: true, MinimumSpeedKmh: 5}},
		{"absent follows audioAlarms off", "foodDrink", false, ResolvedEvent{Enabled: true, DataType: DataVideo, VisualAlert: true, MinimumSpeedKmh: 5}},
		{"visual switched off", "smoking", true, ResolvedEvent{Enabled: true, DataType: DataVideo, AudioAlert: true, MinimumSpeedKmh: 40}},
		{"audio forced on", "acceleration", false, ResolvedEvent{Enabled: true, DataType: DataSnapshot, VisualAlert: true, AudioAlert: true}},
		{"disabled", "jolt", true, ResolvedEvent{DataType: DataVideo, VisualAlert: true, AudioAlert: true}},
		{"text only", "accOn", true, ResolvedEvent{Enabled: true, DataType: DataNone, VisualAlert: true, AudioAlert: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Setting(tc.event, tc.audioAlarms); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	cl := c.Clone()
	*cl.Events["smoking"].MinimumSpeedKmh = 99
	if *c.Events["smoking"].MinimumSpeedKmh != 40 {
		t.Fatal("Clone shares pointers")
	}
}

func TestSetPrivacyMode(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newSettingsFixture(t, 1)
		imei := f.imeis[0]
		var before string
		f.update(func(tx *Tx) (err error) { before, err = tx.SetPrivacyMode(imei, PrivacyModeOn, true); return err })
		if before != PrivacyModeOff {
			t.Fatalf("before %q", before)
		}
		e := f.effective(imei)
		if e.PrivacyMode != PrivacyModeOn || !e.PrivacyModeSet || e.Version != 1 {
			t.Fatalf("effective %+v", e)
		}
		entries := f.audit("device.privacyMode")
		if len(entries) != 1 {
			t.Fatalf("%d audit entries", len(entries))
		}
		a := entries[0]
		if a.UserID != 42 || a.EntityID != imei || a.Time.IsZero() ||
			string(a.Before) != `{"deviceId":"`+imei+`","privacyMode":"disabled"}` ||
			string(a.After) != `{"deviceId":"`+imei+`","privacyMode":"general"}` {
			t.Fatalf("audit entry %+v before %s after %s", a, a.Before, a.After)
		}
		msgs := allMessages(t, f.db)
		var got []PrivacyFact
		for _, m := range msgs {
			if m.Kind == MessageSystem && m.SubType == SystemPrivacyMode {
				if m.IMEI != imei || m.OrganizationID != f.org.ID || m.Privacy == nil ||
					!m.Time.Equal(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) {
					t.Fatalf("message %+v", m)
				}
				got = append(got, *m.Privacy)
			}
		}
		if len(got) != 1 || got[0] != (PrivacyFact{Change: "mode", Before: "off", After: "on", InitiatedBy: 42, Pending: true}) {
			t.Fatalf("messages %+v", got)
		}

		// Setting the same mode again changes nothing.
		f.update(func(tx *Tx) (err error) { before, err = tx.SetPrivacyMode(imei, PrivacyModeOn, false); return err })
		if before != PrivacyModeOn || f.effective(imei).Version != 1 || len(f.audit("device.privacyMode")) != 1 {
			t.Fatal("a repeated mode wrote a change")
		}
		err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { _, err := tx.SetPrivacyMode(imei, "general", false); return err })
		if err == nil {
			t.Fatal("store accepted mode general")
		}
	})
}

func TestRemovedDeviceForgetsSettings(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newSettingsFixture(t, 1)
		imei := f.imeis[0]
		cfg := DefaultDeviceConfig()
		cfg.HotspotEnabled = true
		f.update(func(tx *Tx) error { return tx.PutDeviceSettings(&DeviceSettings{IMEI: imei, Device: &cfg}, "test") })
		f.update(func(tx *Tx) error { return tx.RemoveDevice(imei) })
		f.update(func(tx *Tx) error {
			return tx.AddDevice(&Device{IMEI: imei, OrganizationID: f.org.ID, PartnerID: f.org.PartnerID})
		})
		e := f.effective(imei)
		if e.Device.HotspotEnabled || e.Version != 0 || e.HotspotPassword != DefaultHotspotPassword {
			t.Fatalf("a re-added device kept its old settings: %+v", e)
		}
	})
}
