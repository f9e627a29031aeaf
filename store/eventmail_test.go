package store_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// advance moves the fixture's clock on by d.
func (f *eventFixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func TestEventMailQueue(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newEventFixture(t)
		f.recipients(EventTailgating, "a@fleet.example", "b@fleet.example")
		f.recipients(EventCellPhoneUse, "c@fleet.example")

		// An event that fails its transaction queues nothing.
		boom := errors.New("boom")
		err := f.db.Update(t.Context(), Actor{Source: "device"}, func(tx *Tx) error {
			if _, err := tx.IngestEvent(f.dev, EventInput{Type: EventTailgating, Time: eventT0, Speed: 60}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) || len(f.eventMail()) != 0 {
			t.Fatalf("rolled back ingest: %v, queue %+v", err, f.eventMail())
		}
		// Another type, and the other device, queue nothing.
		f.ingest(f.dev, EventInput{Type: EventAccOn, Time: eventT0})
		f.ingest(f.dev2, EventInput{Type: EventTailgating, Time: eventT0, Speed: 60})
		if q := f.eventMail(); len(q) != 0 {
			t.Fatalf("queued %+v", q)
		}
		res := f.ingest(f.dev, EventInput{Type: EventTailgating, Time: eventT0, Speed: 60})
		q := f.eventMail()
		if len(q) != 2 || q[0].Recipient != "a@fleet.example" || q[1].Recipient != "b@fleet.example" ||
			q[0].EventID != res.Event.ID || !q[0].QueuedAt.Equal(f.clock()) {
			t.Fatalf("queue %+v for event %d", q, res.Event.ID)
		}

		due := func() []EventMail {
			t.Helper()
			var out []EventMail
			if err := f.db.View(t.Context(), func(tx *Tx) (err error) { out, err = tx.DueEventMail(10); return err }); err != nil {
				t.Fatal(err)
			}
			return out
		}
		// A sent job goes; a failed one waits a minute, then two...
		f.update(func(tx *Tx) error { return tx.EventMailDone(q[0]) })
		fail := func(m EventMail) bool {
			t.Helper()
			var gaveUp bool
			f.update(func(tx *Tx) (err error) { gaveUp, err = tx.EventMailFailed(m); return err })
			return gaveUp
		}
		if fail(q[1]) {
			t.Fatal("gave up at once")
		}
		if d := due(); len(d) != 0 {
			t.Fatalf("due right after a failure: %+v", d)
		}
		f.advance(EventMailRetryMin)
		d := due()
		if len(d) != 1 || d[0].Attempts != 1 || d[0].Recipient != "b@fleet.example" {
			t.Fatalf("due after a minute: %+v", d)
		}
		fail(d[0])
		f.advance(EventMailRetryMin)
		if d := due(); len(d) != 0 {
			t.Fatalf("due a minute after the second failure: %+v", d)
		}
		f.advance(EventMailRetryMin)
		d = due()
		if len(d) != 1 || d[0].Attempts != 2 {
			t.Fatalf("due two minutes after the second failure: %+v", d)
		}
		// ...and is given up a day after it was queued.
		f.advance(EventMailGiveUp)
		if !fail(due()[0]) || len(f.eventMail()) != 0 {
			t.Fatalf("not given up after a day: %+v", f.eventMail())
		}
	})
}
