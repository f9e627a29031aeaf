package webhooks

import (
	"context"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Pruning: once the stored cursor has passed a message, nothing reads it
// again (a delivery carries its own body, a redelivery copies its
// delivery), so the scheduler deletes such messages in a step of its own
// after each fan-out rather than inside queueBatch or saveCursor:
//
//   - queueBatch holds the store's only writer while ingest waits for it;
//     deletions there would lengthen exactly the transaction that sits
//     between device messages and their acknowledgement.
//   - The backlog is not bounded by a fan-out batch. Messages that need no
//     delivery (GPS of a device no GPS subscription covers, say) are passed
//     in memory and the cursor is stored only every cursorSaveEvery,
//     thousands of messages at a time under load; an older store starts with
//     every message it ever recorded. A step of its own takes that up in
//     transactions of pruneBatch, at most pruneRounds per pass, so neither
//     one transaction nor one pass of the scheduler runs long.
//   - Without a backlog it runs at most every pruneEvery: about one extra
//     commit a second, whatever the ingest rate.
//
// store.Tx.PruneMessages reads the stored cursor in its own transaction and
// deletes from the oldest message up, so pruning never runs ahead of a
// committed cursor, and a crash between storing the cursor and pruning
// leaves messages that the next prune (after the restart: the first pass)
// deletes.
//
// pruneBatch is 2,048 keys. Deleting from the front of the bucket costs
// about half a microsecond a key (emptied leaf pages are freed, not
// rewritten), so one prune holds the writer for 1–2 ms and commits in 2–3
// ms, measured on a store of 240,000 GPS messages: about as long as one
// group commit of device messages, which is what ingest may wait for. Twice
// that doubles the wait; half of it doubles the commits for a backlog. A
// second of ingest at a few thousand messages a second is one or two
// prunes.

// loadCursor reads the stored cursor and whether messages it passed are
// still in the store.
func (d *Dispatcher) loadCursor() error {
	return d.db.View(context.Background(), func(tx *store.Tx) error {
		d.cursor = tx.WebhookCursor()
		d.stored, d.prunedTo = d.cursor, d.cursor
		oldest, err := tx.MessagesAfter(0, 1)
		if err != nil {
			return err
		}
		if len(oldest) > 0 && oldest[0].Seq <= d.cursor {
			d.prunedTo = oldest[0].Seq - 1
		}
		return nil
	})
}

// prune deletes the messages the stored cursor has passed and reports
// whether some are left for the next pass.
func (d *Dispatcher) prune() (backlog bool) {
	if d.stored <= d.prunedTo || (!d.pruneBacklog && time.Since(d.lastPrune) < pruneEvery) {
		return false
	}
	d.lastPrune = time.Now()
	target := d.stored
	for range pruneRounds {
		var n int
		var more bool
		err := d.db.Update(context.Background(), store.Actor{Source: "webhooks"}, func(tx *store.Tx) error {
			var err error
			n, more, err = tx.PruneMessages(pruneBatch)
			return err
		})
		if err != nil {
			d.log.Error("prune webhook messages", "err", err)
			d.pruneBacklog = false
			return false
		}
		d.metrics.pruned.Add(float64(n))
		if !more {
			d.prunedTo, d.pruneBacklog = target, false
			return false
		}
	}
	d.pruneBacklog = true
	return true
}
