package postgres

import (
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Event ids drawn ahead. An event's id comes from the events' identity
// sequence. Drawn by the INSERT itself (RETURNING id), each event would
// cost a round trip of its own in a group commit, since the rules need the
// id at once (the webhook message, the device's own event id, the answer
// to the caller carry it). Instead a group commit's read-ahead (Prefetch)
// draws the ids its events will take, in its one round trip, and an event
// takes the next one and queues its INSERT with the id given, so that it
// goes with the transaction's next statement.
//
// The ids are drawn at the start of the transaction that gives them, and
// what it does not give is dropped with it, so ids rise as events are
// stored, as when each INSERT drew its own: a device's later event, stored
// by a later transaction on whichever node, has a greater id. An id drawn
// is never given again (nextval is not rolled back); one not given is
// simply not used.
//
// How many to draw the transaction cannot know before its jobs run: it
// draws twice as many as the engine's transactions asked for since the
// last draw (an event takes one), at most one per job. A load of GPS alone
// draws none; the first events after a quiet spell draw their own ids,
// and the batches after them draw ahead.

// drawEventIDs draws $1 ids of the events' identity sequence, after
// lockEventsForIDs: a bulk transaction (bulk.go) gives the ids past the
// sequence's value under its lock on the events and moves the sequence
// past them only when it ends, so ids are drawn ahead under the lock an
// INSERT takes, which waits for it.
const (
	lockEventsForIDs = `LOCK TABLE ONLY events IN ROW EXCLUSIVE MODE`
	drawEventIDs     = `SELECT nextval(pg_get_serial_sequence('events', 'id')) FROM generate_series(1, $1)`
)

// eventDemand counts the event ids an engine's transactions asked for
// since its last draw, given or not, which sizes the next.
type eventDemand struct{ asked atomic.Int64 }

// toDraw is how many ids a transaction of jobs jobs draws, and starts the
// count again.
func (d *eventDemand) toDraw(jobs int) int {
	if d == nil {
		return 0
	}
	return min(jobs, 2*int(d.asked.Swap(0)))
}

// takeEventID returns the next event id t drew ahead, if one is left; it
// counts the ask either way.
func (t *tx) takeEventID() (int64, bool) {
	if t.demand != nil {
		t.demand.asked.Add(1)
	}
	if len(t.eventIDs) == 0 {
		return 0, false
	}
	id := t.eventIDs[0]
	t.eventIDs = t.eventIDs[1:]
	return id, true
}

// queueEventIDs queues the draw of n ids.
func queueEventIDs(b *pgx.Batch, n int) {
	b.Queue(lockEventsForIDs)
	b.Queue(drawEventIDs, n)
}

// readEventIDs keeps the ids queueEventIDs draws.
func (t *tx) readEventIDs(br pgx.BatchResults) error {
	if _, err := br.Exec(); err != nil {
		return classify(err)
	}
	rows, err := br.Query()
	if err != nil {
		return classify(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return classify(err)
	}
	t.eventIDs = append(t.eventIDs, ids...)
	return nil
}
