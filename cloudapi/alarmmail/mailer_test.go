package alarmmail

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/alarmmail/smtptest"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestMailer(t *testing.T) {
	srv := smtptest.Start(t)
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	db := storetest.Open(t, storetest.WithClock(clk.now))
	defer db.Close()
	var dev, otherDev *store.Device
	var org, other *store.Organization
	update := func(fn func(tx *store.Tx) error) {
		t.Helper()
		if err := db.Update(t.Context(), store.Actor{Source: "test"}, fn); err != nil {
			t.Fatal(err)
		}
	}
	update(func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		if org, err = tx.CreateOrganization(p.ID, "Fleet one", nil); err != nil {
			return err
		}
		if other, err = tx.CreateOrganization(p.ID, "Fleet two", nil); err != nil {
			return err
		}
		dev = &store.Device{IMEI: "357660100000017", Name: "Truck 1", OrganizationID: org.ID, PartnerID: p.ID}
		otherDev = &store.Device{IMEI: "357660100000025", Name: "Van 2", OrganizationID: other.ID, PartnerID: p.ID}
		if err := tx.AddDevice(dev); err != nil {
			return err
		}
		if err := tx.AddDevice(otherDev); err != nil {
			return err
		}
		for _, r := range []*store.AlarmRecipient{
			{Kind: store.RecipientAlarms, Email: "recording@one.example", OrganizationID: org.ID, PartnerID: p.ID, AlarmDefinitions: []int64{store.AlarmRecordingFailed}},
			{Kind: store.RecipientHealth, Email: "health@one.example", OrganizationID: org.ID, PartnerID: p.ID, ReportIntervalSeconds: 3600},
			{Kind: store.RecipientAlarms, Email: "ops@partner.example", PartnerID: p.ID},
			{Kind: store.RecipientAlarms, Email: "fleet@two.example", OrganizationID: other.ID, PartnerID: p.ID},
		} {
			if err := tx.AddAlarmRecipient(r); err != nil {
				return err
			}
		}
		return nil
	})
	m := New(Options{Store: db, SMTP: configs.SMTP{Addr: srv.Addr(), From: "alarms@fleetcam.test"}})
	run := func() map[string]smtptest.Mail {
		t.Helper()
		if _, err := m.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := map[string]smtptest.Mail{}
		for _, ml := range srv.Take() {
			got[strings.Join(ml.To, ",")] = ml
		}
		return got
	}

	update(func(tx *store.Tx) error {
		_, err := tx.ApplyHealthAlarms(dev, store.DeviceHealth{RecordingTest: "failed", SDCard: &store.SDCardHealth{Present: false}})
		return err
	})
	clk.add(time.Minute)
	update(func(tx *store.Tx) error {
		_, err := tx.SimulateAlarm(dev, store.AlarmPowerDisconnected, clk.now(), "drill: cable pulled\r\nBcc: evil@example.com")
		return err
	})
	got := run()
	if len(got) != 3 {
		t.Fatalf("%d messages to %v, want 3 (not the other organization's recipient)", len(got), keys(got))
	}
	rec := got["recording@one.example"]
	if !strings.Contains(rec.Data, "Subject: [fleetcam] Alarm: Recording health test failed on Truck 1 (357660100000017)") ||
		strings.Contains(rec.Data, "SD card missing") || rec.From != "alarms@fleetcam.test" {
		t.Fatalf("recording recipient's message:\n%s", rec.Data)
	}
	health := got["health@one.example"]
	for _, want := range []string{"3 new alarm(s)", "Recording health test failed", "SD card missing", "Power disconnected",
		"Simulated:    yes", "Comment:      drill: cable pulled  Bcc: evil@example.com", "What to do:", "Fleet one"} {
		if !strings.Contains(health.Data, want) {
			t.Fatalf("health recipient's message lacks %q:\n%s", want, health.Data)
		}
	}
	if strings.Contains(health.Data, "\r\nBcc:") {
		t.Fatal("a comment injected a header line")
	}
	if len(run()) != 0 {
		t.Fatal("the same alarms were reported twice")
	}

	// A new alarm: the hourly recipient waits, the others get it at once.
	update(func(tx *store.Tx) error {
		if _, _, err := tx.RaiseAlarm(dev, store.AlarmCameraDisconnected, clk.now(), "in-cabin camera (2) disconnected"); err != nil {
			return err
		}
		_, _, err := tx.RaiseAlarm(otherDev, store.AlarmRecordingFailed, clk.now(), "")
		return err
	})
	srv.Reject("ops@partner.example", true)
	if _, err := m.RunOnce(context.Background()); err == nil {
		t.Fatal("a rejected recipient did not report an error")
	}
	got = map[string]smtptest.Mail{}
	for _, ml := range srv.Take() {
		got[strings.Join(ml.To, ",")] = ml
	}
	if len(got) != 1 || got["fleet@two.example"].Data == "" {
		t.Fatalf("messages to %v, want only Fleet two's recipient", keys(got))
	}
	srv.Reject("ops@partner.example", false)
	got = run()
	if len(got) != 1 || !strings.Contains(got["ops@partner.example"].Data, "2 new alarms") {
		t.Fatalf("after the SMTP server recovered: %v", keys(got))
	}
	clk.add(time.Hour)
	got = run()
	if len(got) != 1 || !strings.Contains(got["health@one.example"].Data, "Camera disconnected") ||
		strings.Contains(got["health@one.example"].Data, "SD card missing") {
		t.Fatalf("after the hour: %v", keys(got))
	}

	off := New(Options{Store: db})
	if _, err := off.RunOnce(context.Background()); !errors.Is(err, ErrDisabled) {
		t.Fatalf("without smtp.addr: %v", err)
	}
}

func keys(m map[string]smtptest.Mail) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
