package postgres

import (
	"sync"

	"github.com/jackc/pgx/v5"
)

// Event ids drawn ahead. An event's id comes from the events' identity
// sequence. Drawn by the INSERT itself (RETURNING id), each event would
// cost a round trip of its own in a group commit, since the rules need the
// id at once (the webhook message, the device's own event id, the answer
// to the caller carry it). Instead an engine keeps a few ids drawn ahead:
// a group commit's read-ahead (Prefetch) tops them up in its one round
// trip, and an event takes the next one and queues its INSERT with the id
// given, so that it goes with the transaction's next statement.
//
// An id drawn is never given again, whatever happens to the transaction
// that drew it (nextval is not rolled back); one taken by a transaction
// that then failed is simply not used, as with RETURNING. The ids one
// engine gives rise in the order it gives them; the nodes of a cluster
// draw from the one sequence, so ids stay unique but do not follow the
// events' order across nodes (they never did: two transactions commit in
// either order). What a node held when it stopped is never used.

// eventIDsAhead is how many ids a top-up draws beyond what the batch may
// use, so that a run of small batches does not draw each time.
const eventIDsAhead = 32

// drawEventIDs draws $1 ids of the events' identity sequence, after
// lockEventsForIDs: a bulk transaction (bulk.go) gives the ids past the
// sequence's value under its lock on the events and moves the sequence
// past them only when it ends, so ids are drawn ahead under the lock an
// INSERT takes, which waits for it.
const (
	lockEventsForIDs = `LOCK TABLE ONLY events IN ROW EXCLUSIVE MODE`
	drawEventIDs     = `SELECT nextval(pg_get_serial_sequence('events', 'id')) FROM generate_series(1, $1)`
)

// idPool holds the event ids an engine drew ahead, in the order drawn.
// asked counts the ids asked for since the last top-up, given or not,
// which sizes the next.
type idPool struct {
	mu    sync.Mutex
	ids   []int64
	asked int
}

// take returns the next id drawn ahead, if one is left.
func (p *idPool) take() (int64, bool) {
	if p == nil {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked++
	if len(p.ids) == 0 {
		return 0, false
	}
	id := p.ids[0]
	p.ids = p.ids[1:]
	return id, true
}

// shortfall is how many ids to draw before a batch of jobs jobs: none
// while the ids left cover twice what was asked since the last top-up
// (bounded by jobs: a device's message ingests one event at most), else
// enough to cover that with eventIDsAhead to spare. A load of GPS alone
// draws none; the first events after a quiet spell draw their ids one by
// one, and the next batch draws ahead for them.
func (p *idPool) shortfall(jobs int) int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	want := min(jobs, 2*p.asked)
	p.asked = 0
	if len(p.ids) >= want || want == 0 {
		return 0
	}
	return want - len(p.ids) + eventIDsAhead
}

// add keeps the ids a top-up drew.
func (p *idPool) add(ids []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids = append(p.ids, ids...)
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
	t.eventIDs.add(ids)
	return nil
}
