package eventmail

import (
	"strconv"
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

// fixture is a store with one device whose tailgating events are e-mailed
// to two recipients.
type fixture struct {
	t   *testing.T
	clk *clock
	db  *store.DB
	dev *store.Device
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, clk: &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	f.db = storetest.Open(t, storetest.WithClock(f.clk.now))
	t.Cleanup(func() { f.db.Close() })
	f.update(func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Partner")
		if err != nil {
			return err
		}
		org, err := tx.CreateOrganization(p.ID, "Fleet one", nil)
		if err != nil {
			return err
		}
		f.dev = &store.Device{IMEI: "357660100000017", Name: "Truck 1", OrganizationID: org.ID, PartnerID: p.ID}
		if err := tx.AddDevice(f.dev); err != nil {
			return err
		}
		return tx.SetEventRecipients(f.dev.IMEI, store.EventTailgating, []string{"a@fleet.example", "b@fleet.example"})
	})
	return f
}

func (f *fixture) update(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.db.Update(f.t.Context(), store.Actor{Source: "test"}, fn); err != nil {
		f.t.Fatal(err)
	}
}

// ingest stores a tailgating event of the device, as the broker does.
func (f *fixture) ingest() *store.Event {
	f.t.Helper()
	var e *store.Event
	f.update(func(tx *store.Tx) error {
		res, err := tx.IngestEvent(f.dev, store.EventInput{Type: store.EventTailgating, Time: f.clk.now().Add(-time.Minute),
			Lat: 48.137154, Lon: 11.576124, Speed: 60})
		e = res.Event
		return err
	})
	return e
}

func (f *fixture) queue() []store.EventMail {
	f.t.Helper()
	var out []store.EventMail
	if err := f.db.View(f.t.Context(), func(tx *store.Tx) (err error) { out, err = tx.QueuedEventMail(); return err }); err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *fixture) mailer(addr string) *Mailer {
	return New(Options{Store: f.db, SMTP: configs.SMTP{Addr: addr, From: "fleetcam@example.com"},
		PublicURL: "https://fleet.example.com/", Batch: 1})
}

func TestMailerSendsEachRecipientAndEmptiesTheQueue(t *testing.T) {
	f := newFixture(t)
	srv := smtptest.Start(t)
	e := f.ingest()
	n, err := f.mailer(srv.Addr()).RunOnce(t.Context())
	if err != nil || n != 2 {
		t.Fatalf("sent %d: %v", n, err)
	}
	mails := srv.Take()
	if len(mails) != 2 || mails[0].To[0] != "a@fleet.example" || mails[1].To[0] != "b@fleet.example" {
		t.Fatalf("mails %+v", mails)
	}
	for _, want := range []string{"Subject: [fleetcam] tailgating on Truck 1 (IMEI 357660100000017)",
		"Event type: tailgating", "Time:       2026-03-01T11:59:00.000Z", "Location:   48.137154, 11.576124",
		"https://fleet.example.com/v2/devices/357660100000017/events/" + itoa(e.ID)} {
		if !strings.Contains(mails[0].Data, want) {
			t.Errorf("mail lacks %q:\n%s", want, mails[0].Data)
		}
	}
	if q := f.queue(); len(q) != 0 {
		t.Fatalf("queue after sending %+v", q)
	}
}

func TestMailerRetriesAndGivesUp(t *testing.T) {
	f := newFixture(t)
	srv := smtptest.Start(t)
	srv.Reject("b@fleet.example", true)
	f.ingest()
	m := f.mailer(srv.Addr())
	if n, err := m.RunOnce(t.Context()); n != 1 || err != nil {
		t.Fatalf("first round sent %d: %v", n, err)
	}
	srv.Take()
	q := f.queue()
	if len(q) != 1 || q[0].Recipient != "b@fleet.example" || q[0].Attempts != 1 {
		t.Fatalf("queue after a refusal %+v", q)
	}
	// Not due again before the pause is over.
	if n, _ := m.RunOnce(t.Context()); n != 0 || len(srv.Take()) != 0 {
		t.Fatalf("sent %d during the pause", n)
	}
	// Accepted on the next attempt.
	srv.Reject("b@fleet.example", false)
	f.clk.add(store.EventMailRetryMin)
	if n, err := m.RunOnce(t.Context()); n != 1 || err != nil {
		t.Fatalf("retry sent %d: %v", n, err)
	}
	if got := srv.Take(); len(got) != 1 || got[0].To[0] != "b@fleet.example" || len(f.queue()) != 0 {
		t.Fatalf("retry mails %+v, queue %+v", got, f.queue())
	}

	// Refused for a day: given up, and the queue is empty.
	srv.Reject("a@fleet.example", true)
	srv.Reject("b@fleet.example", true)
	f.ingest()
	for range 30 {
		m.RunOnce(t.Context())
		f.clk.add(store.EventMailRetryMax)
	}
	if q := f.queue(); len(q) != 0 || len(srv.Take()) != 0 {
		t.Fatalf("queue after a day of refusals %+v", q)
	}
}

func TestMailerDropsWithoutSMTPOrEvent(t *testing.T) {
	f := newFixture(t)
	f.ingest()
	if n, err := f.mailer("").RunOnce(t.Context()); n != 0 || err != nil || len(f.queue()) != 0 {
		t.Fatalf("without SMTP: sent %d (%v), queue %+v", n, err, f.queue())
	}
	// An event deleted before its e-mail went out is not told of.
	srv := smtptest.Start(t)
	e := f.ingest()
	f.update(func(tx *store.Tx) error { _, err := tx.DeleteEvent(e.ID); return err })
	if n, err := f.mailer(srv.Addr()).RunOnce(t.Context()); n != 0 || err != nil || len(f.queue()) != 0 || len(srv.Take()) != 0 {
		t.Fatalf("deleted event: sent %d (%v), queue %+v", n, err, f.queue())
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
