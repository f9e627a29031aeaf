package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fleetcam/fleetcam/store"
)

// appendMessages appends msgs in one transaction and returns them with
// their sequences.
func appendMessages(t *testing.T, e *Engine, msgs ...store.Message) []store.Message {
	t.Helper()
	write(t, e, func(t2 *tx) error {
		for i := range msgs {
			if err := t2.Messages().Append(&msgs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return msgs
}

// messagesAfter reads the messages after seq, up to limit.
func messagesAfter(t *testing.T, e *Engine, seq int64, limit int) []store.Message {
	t.Helper()
	var out []store.Message
	read(t, e, func(t2 *tx) (err error) { out, err = t2.Messages().After(seq, limit); return err })
	return out
}

// TestMessagesKeepTheirFacts appends a message of every kind of fact, and
// one with an already rendered payload, and reads each back as it was.
func TestMessagesKeepTheirFacts(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	const imei = "490154203237518"
	msgs := appendMessages(t, e,
		store.Message{Kind: store.MessageEvent, OrganizationID: f.org, PartnerID: f.partner, IMEI: imei, Time: webhookTime,
			Event: &store.EventFact{ID: 7, Type: "harshBraking", Time: webhookTime.Add(-time.Minute), Lat: 52.370216,
				Lon: 4.895168, Speed: 12.5, Metadata: `{"g":0.4}`, Severity: 2,
				GeoFence: &store.GeoFenceFact{ID: 3, Name: "Depot", Path: "entered"},
				Driver:   &store.EventDriver{ID: 9, FirstName: "Ann"}}},
		store.Message{Kind: store.MessageGPS, OrganizationID: f.org, IMEI: imei, Time: webhookTime,
			GPS: []store.GPSPoint{{Lat: 1.5, Lon: -2.25}, {Lat: 1.75, Lon: -2.5}}},
		store.Message{Kind: store.MessageActivation, SubType: "deviceActivation", OrganizationID: f.org, IMEI: imei,
			Time: webhookTime, Activation: &store.ActivationFact{EventID: 11}},
		store.Message{Kind: store.MessageSystem, SubType: store.SystemDeviceStatus, OrganizationID: f.org2, IMEI: imei,
			Time: webhookTime, Presence: &store.PresenceFact{Status: "online", Previous: "offline"}},
		store.Message{Kind: store.MessageSystem, SubType: store.SystemPrivacyMode, OrganizationID: f.org, IMEI: imei,
			Time: webhookTime, Privacy: &store.PrivacyFact{Change: "mode", Before: "off", After: "on", InitiatedBy: 4, Pending: true}},
		store.Message{Kind: store.MessageSystem, SubType: store.SystemDeviceRemoved, OrganizationID: f.org, IMEI: imei,
			Time: webhookTime, Removed: &store.RemovedFact{Name: "Van 1"}},
		// A message of an earlier version: its rendered payload, byte for
		// byte in meaning, and no fact.
		store.Message{Kind: store.MessageSystem, SubType: store.SystemDeviceRemoved, OrganizationID: f.org, IMEI: imei,
			Time: webhookTime, Payload: json.RawMessage(`{"name":"Alpha","serialNumber":"490154203237518","time":1772366400}`)},
	)
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Seq <= msgs[i-1].Seq {
			t.Fatalf("sequences %d then %d; want them growing", msgs[i-1].Seq, msgs[i].Seq)
		}
	}
	got := messagesAfter(t, e, 0, 0)
	if len(got) != len(msgs) {
		t.Fatalf("%d messages; want %d", len(got), len(msgs))
	}
	for i := range msgs {
		want, have := msgs[i], got[i]
		if !jsonEqual(t, want.Payload, have.Payload) {
			t.Errorf("message %d payload %s; want %s", want.Seq, have.Payload, want.Payload)
		}
		want.Payload, have.Payload = nil, nil
		if !reflect.DeepEqual(have, want) {
			t.Errorf("message %d reads as\n%+v\nwant\n%+v", want.Seq, have, want)
		}
	}
	if got[len(got)-1].Removed != nil {
		t.Error("the message with a payload has a fact")
	}
}

func TestMessagesAfterAndDeleteThrough(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	var batch []store.Message
	for range 10 {
		batch = append(batch, store.Message{Kind: store.MessageGPS, OrganizationID: f.org, Time: webhookTime})
	}
	msgs := appendMessages(t, e, batch...)
	seq := func(i int) int64 { return msgs[i].Seq }
	seqs := func(ms []store.Message) []int64 {
		var out []int64
		for _, m := range ms {
			out = append(out, m.Seq)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		after int64
		limit int
		want  []int64
	}{
		{"all", 0, 0, seqs(msgs)},
		{"limited", 0, 3, seqs(msgs[:3])},
		{"after a sequence", seq(6), 0, seqs(msgs[7:])},
		{"after a sequence, limited", seq(2), 2, seqs(msgs[3:5])},
		{"after the last", seq(9), 5, nil},
	} {
		if got := seqs(messagesAfter(t, e, c.after, c.limit)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v; want %v", c.name, got, c.want)
		}
	}

	deleteThrough := func(through int64, limit int) (n int, more bool) {
		write(t, e, func(t2 *tx) (err error) { n, more, err = t2.Messages().DeleteThrough(through, limit); return err })
		return n, more
	}
	// Through the 6th, 4 at a time: 4 and more, then 2 and no more.
	if n, more := deleteThrough(seq(5), 4); n != 4 || !more {
		t.Errorf("first batch deleted %d, more %v; want 4 and more", n, more)
	}
	if n, more := deleteThrough(seq(5), 4); n != 2 || more {
		t.Errorf("second batch deleted %d, more %v; want 2 and no more", n, more)
	}
	if got := seqs(messagesAfter(t, e, 0, 0)); !reflect.DeepEqual(got, seqs(msgs[6:])) {
		t.Errorf("left %v; want %v", got, seqs(msgs[6:]))
	}
	// Exactly limit left: all deleted, and none more.
	if n, more := deleteThrough(seq(7), 2); n != 2 || more {
		t.Errorf("deleted %d, more %v; want 2 and no more", n, more)
	}
	// Limit 0: every one through seq.
	if n, more := deleteThrough(seq(9), 0); n != 2 || more {
		t.Errorf("deleted %d, more %v; want the last 2 and no more", n, more)
	}
	if n, more := deleteThrough(seq(9), 0); n != 0 || more {
		t.Errorf("deleted %d from nothing, more %v", n, more)
	}
	// The sequence carries on after the table was emptied.
	next := appendMessages(t, e, store.Message{Kind: store.MessageGPS, OrganizationID: f.org, Time: webhookTime})
	if next[0].Seq <= seq(9) {
		t.Errorf("sequence %d after the table was emptied; want above %d", next[0].Seq, seq(9))
	}
}

// TestMessageSequencesFollowCommits checks that no transaction draws a
// sequence while another that drew one has not ended: a second appender
// waits for the first, then draws a higher sequence.
func TestMessageSequencesFollowCommits(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	ctx := context.Background()
	begin := func() *tx {
		pt, err := e.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pt.Rollback(ctx) })
		return &tx{ctx: ctx, pg: pt}
	}
	msg := func() *store.Message {
		return &store.Message{Kind: store.MessageGPS, OrganizationID: f.org, Time: webhookTime}
	}

	a := begin()
	first := msg()
	if err := a.Messages().Append(first); err != nil {
		t.Fatal(err)
	}
	// An appender that will not wait fails rather than draw a sequence
	// while a holds one.
	impatient := begin()
	if _, err := impatient.pg.Exec(ctx, `SET LOCAL lock_timeout = '1ms'`); err != nil {
		t.Fatal(err)
	}
	var pe *pgconn.PgError
	if err := impatient.Messages().Append(msg()); !errors.As(err, &pe) || pe.Code != "55P03" {
		t.Fatalf("a second appender while the first is open: %v; want a lock timeout", err)
	}

	// One that waits draws its sequence once a has committed.
	second := msg()
	done := make(chan error, 1)
	go func() {
		b := begin()
		err := b.Messages().Append(second)
		if err == nil {
			err = b.pg.Commit(ctx)
		}
		done <- err
	}()
	waitForAdvisoryWaiter(t, e)
	var visible []store.Message
	read(t, e, func(t2 *tx) (err error) { visible, err = t2.Messages().After(0, 0); return err })
	if len(visible) != 0 {
		t.Fatalf("messages visible before either commit: %+v", visible)
	}
	if err := a.pg.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if second.Seq <= first.Seq {
		t.Fatalf("the later commit has sequence %d, the earlier %d", second.Seq, first.Seq)
	}
}

// waitForAdvisoryWaiter returns once some session waits for an advisory
// lock, polling pg_locks for up to ten seconds.
func waitForAdvisoryWaiter(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting bool
		err := e.pool.QueryRow(context.Background(),
			`SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no session waits for the appenders' lock")
		}
	}
}

// TestConcurrentAppendersAreNotSkipped runs appenders in parallel while a
// reader moves a cursor as the webhook dispatcher does, past the highest
// sequence it read: it still reads every message.
func TestConcurrentAppendersAreNotSkipped(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	ctx := context.Background()
	const writers, each = 8, 25
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				err := e.update(ctx, func(t2 *tx) error {
					return t2.Messages().Append(&store.Message{Kind: store.MessageGPS, OrganizationID: f.org, Time: webhookTime})
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(stop) }()
	seen := map[int64]bool{}
	var cursor int64
	read := func() {
		var msgs []store.Message
		read(t, e, func(t2 *tx) (err error) { msgs, err = t2.Messages().After(cursor, 7); return err })
		for _, m := range msgs {
			seen[m.Seq] = true
			cursor = m.Seq
		}
	}
	for finished := false; !finished; {
		select {
		case <-stop:
			finished = true
		default:
		}
		read()
	}
	for before := -1; before != len(seen); {
		before = len(seen)
		read()
	}
	if len(seen) != writers*each {
		t.Fatalf("the reader saw %d messages of %d", len(seen), writers*each)
	}
}
