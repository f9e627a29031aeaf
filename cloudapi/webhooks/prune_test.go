package webhooks

import (
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/prometheus/client_golang/prometheus"
)

// manual stops the environment's dispatcher and returns one prepared as
// Start prepares it but without its goroutines, so a test drives fan-out
// and pruning step by step.
func (e *env) manual() *Dispatcher {
	e.t.Helper()
	e.d.Close()
	e.reg = prometheus.NewRegistry()
	d, err := New(e.cfg, e.db, e.key, nil, e.reg, e.clock.Now)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := d.loadCursor(); err != nil {
		e.t.Fatal(err)
	}
	d.cursorSaved = d.now()
	return d
}

// seqs lists the sequences of messages.
func seqs(ms []store.Message) (first, last int64, n int) {
	if len(ms) == 0 {
		return 0, 0, 0
	}
	return ms[0].Seq, ms[len(ms)-1].Seq, len(ms)
}

// Pruning goes exactly as far as the stored cursor: not over messages the
// dispatcher passed only in memory, and all the way once that is stored.
func TestPruneFollowsTheStoredCursor(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, nil)
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/")} })
	d := e.manual()
	pruned := func() {
		t.Helper()
		d.lastPrune = time.Time{} // as a Nudge does
		if d.prune() {
			t.Fatal("a backlog left by a few hundred messages")
		}
	}

	// GPS nobody receives: passed in memory, the stored cursor stays.
	e.gps(devX, 300)
	d.fanOutAll()
	pruned()
	if first, last, n := seqs(e.messages()); e.storedCursor() != 0 || n != 300 || first != 1 || last != 300 {
		t.Fatalf("stored cursor %d, messages %d..%d (%d), want 0 and all 300 kept", e.storedCursor(), first, last, n)
	}

	// Events are queued in a transaction that stores the cursor past them
	// and the GPS before them; GPS after them is passed in memory only.
	e.event(devX, 1, "accident")
	e.event(devX, 2, "accident")
	d.fanOutAll()
	if e.storedCursor() != 302 || len(e.messages()) != 302 {
		t.Fatalf("after queueing: stored cursor %d, %d messages, want 302 and 302", e.storedCursor(), len(e.messages()))
	}
	e.gps(devX, 5)
	d.fanOutAll()

	// What the stored cursor passed goes; what follows it stays until the
	// cursor is saved.
	pruned()
	if first, last, n := seqs(e.messages()); n != 5 || first != 303 || last != 307 {
		t.Fatalf("messages %d..%d (%d), want 303..307 after the stored cursor", first, last, n)
	}
	if ds := e.deliveries(store.DeliveryFilter{Status: store.DeliveryPending}); len(ds) != 2 || len(ds[0].Body) == 0 {
		t.Fatalf("pending deliveries %+v, want the two events with their bodies", ds)
	}
	e.clock.Advance(cursorSaveEvery)
	d.fanOutAll()
	pruned()
	if e.storedCursor() != 307 || len(e.messages()) != 0 {
		t.Fatalf("stored cursor %d, %d messages, want 307 and none", e.storedCursor(), len(e.messages()))
	}
	if got := e.metric("fleetcam_webhook_messages_pruned_total", nil); got != 307 {
		t.Fatalf("fleetcam_webhook_messages_pruned_total %v, want 307", got)
	}

	// The queued deliveries do not need their messages.
	e.start()
	rs := rc.wait(e, 2)
	if got := eventIDs(rs); got != devX+":1 "+devX+":2" {
		t.Fatalf("delivered %s", got)
	}
	e.waitFor("both delivered", func() bool {
		return len(e.deliveries(store.DeliveryFilter{Status: store.DeliveryDelivered})) == 2
	})
}

// A backlog is taken up in transactions of pruneBatch, at most pruneRounds
// of them per pass, and the next pass carries on without waiting.
func TestPruneTakesUpABacklogInBoundedPasses(t *testing.T) {
	e := newEnv(t)
	d := e.manual()
	total := pruneRounds*pruneBatch + 100
	e.gps(devX, total)
	e.clock.Advance(cursorSaveEvery)
	d.fanOutAll()
	if e.storedCursor() != int64(total) {
		t.Fatalf("stored cursor %d, want %d", e.storedCursor(), total)
	}
	if !d.prune() {
		t.Fatal("no backlog reported")
	}
	if first, _, n := seqs(e.messages()); n != 100 || first != int64(pruneRounds*pruneBatch+1) {
		t.Fatalf("after one pass %d messages from %d, want 100 from %d", n, first, pruneRounds*pruneBatch+1)
	}
	if d.prune() || len(e.messages()) != 0 {
		t.Fatalf("after the second pass %d messages", len(e.messages()))
	}
	if got := e.metric("fleetcam_webhook_messages_pruned_total", nil); got != float64(total) {
		t.Fatalf("fleetcam_webhook_messages_pruned_total %v, want %d", got, total)
	}
}

// With the dispatcher running, the messages bucket holds only what has not
// been consumed: round after round of GPS and events, it comes back to
// empty instead of growing.
func TestMessagesStayBounded(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, nil)
	e.settings(func(s *store.WebhookSettings) { s.EventURLs = []string{rc.url("/")} })
	const rounds, perRound = 8, 500
	for round := range rounds {
		e.gps(devY, perRound)
		if round%2 == 0 {
			e.event(devX, round, "accident") // stores the cursor as it queues
		} else {
			e.advance(cursorSaveEvery) // GPS alone: the cursor is saved on time
		}
		e.waitFor("consumed messages pruned", func() bool {
			e.d.Nudge()
			return len(e.messages()) == 0
		})
	}
	e.waitFor("every event delivered", func() bool {
		return len(e.deliveries(store.DeliveryFilter{Status: store.DeliveryDelivered})) == rounds/2
	})
	ids := map[string]int{}
	for _, r := range rc.requests() {
		ids[r.id()]++
	}
	if len(ids) != rounds/2 || len(rc.requests()) != rounds/2 {
		t.Fatalf("%d requests with %d webhook-ids, want %d each once", len(rc.requests()), len(ids), rounds/2)
	}
	if e.storedCursor() != rounds*perRound+rounds/2 {
		t.Fatalf("stored cursor %d, want %d", e.storedCursor(), rounds*perRound+rounds/2)
	}
}
