package webhooks

import (
	"context"
	"errors"

	"github.com/fleetcam/fleetcam/store"
)

// Fan-out: messages after the cursor become deliveries. A batch whose
// messages reach no URL (GPS of a device no GPS subscription covers, say)
// is only read; the cursor moves past it in memory and is written down
// every cursorSaveEvery and at Close. After a crash such messages are
// routed again, which queues nothing unless settings changed meanwhile. A
// batch that queues deliveries is routed again in a write transaction that
// queues them and advances the stored cursor together. Messages behind the
// stored cursor, and only those, are pruned afterwards (prune.go).
//
// The scheduler's own transactions (fan-out, cursor, pruning, recording
// attempts) run under context.Background: they are short, keep the store
// and the in-memory queue in step, and record attempts already made, so a
// stopping dispatcher finishes them rather than abandoning them.

// fanOutAll turns every message after the cursor into deliveries.
func (d *Dispatcher) fanOutAll() {
	for {
		more, err := d.fanOut()
		if err != nil {
			d.log.Error("fan out webhook messages", "err", err)
			return
		}
		if !more {
			d.saveCursor(false)
			return
		}
	}
}

// needsWrite reports whether routing m changes the store.
func needsWrite(targets []target, m *store.Message) bool {
	return len(targets) > 0 || (m.Kind == store.MessageSystem && m.SubType == store.SystemDeviceRemoved && m.IMEI != "")
}

// fanOut handles one batch of messages after the cursor.
func (d *Dispatcher) fanOut() (more bool, err error) {
	write, last := false, d.cursor
	err = d.db.View(context.Background(), func(tx *store.Tx) error {
		msgs, err := tx.MessagesAfter(d.cursor, fanOutBatch)
		if err != nil {
			return err
		}
		more = len(msgs) == fanOutBatch
		for i := range msgs {
			targets, err := route(tx, &msgs[i])
			if err != nil {
				return err
			}
			if needsWrite(targets, &msgs[i]) {
				write = true
				return nil
			}
			last = msgs[i].Seq
		}
		return nil
	})
	if err != nil || !write {
		if last > d.cursor {
			d.cursor, d.cursorDirty = last, true
		}
		return more, err
	}
	return d.queueBatch()
}

// queueBatch routes one batch after the cursor in a write transaction: it
// queues one delivery per URL and stores the advanced cursor, so a message
// is turned into deliveries exactly once.
func (d *Dispatcher) queueBatch() (more bool, err error) {
	var added []store.QueueEntry
	var types []string
	var cursor int64
	err = d.db.Update(context.Background(), store.Actor{Source: "webhooks"}, func(tx *store.Tx) error {
		added, types = added[:0], types[:0]
		cursor = max(d.cursor, tx.WebhookCursor())
		msgs, err := tx.MessagesAfter(cursor, fanOutBatch)
		if err != nil {
			return err
		}
		more = len(msgs) == fanOutBatch
		for i := range msgs {
			m := &msgs[i]
			targets, err := route(tx, m)
			if err != nil {
				return err
			}
			if len(targets) > 0 {
				if _, _, err := tx.EnsureWebhookSecret(m.OrganizationID, NewSalt); err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
			for _, t := range targets {
				del := &store.Delivery{OrganizationID: m.OrganizationID, URL: t.url, MessageSeq: m.Seq,
					WebhookID: webhookID(m, t.url), Type: webhookType(m.Kind), MessageType: m.SubType,
					IMEI: m.IMEI, MessageTime: m.Time, Body: t.body}
				if err := tx.EnqueueDelivery(del); err != nil {
					return err
				}
				added = append(added, store.QueueEntry{OrganizationID: del.OrganizationID, URL: del.URL,
					IMEI: del.IMEI, DeliveryID: del.ID, NextAttemptAt: del.NextAttemptAt, CreatedAt: del.CreatedAt})
				types = append(types, del.Type)
			}
			if m.Kind == store.MessageSystem && m.SubType == store.SystemDeviceRemoved && m.IMEI != "" {
				if err := tx.DropRemovedDeviceSubscriptions(m.OrganizationID, m.IMEI, m.Time); err != nil {
					return err
				}
			}
			cursor = m.Seq
		}
		return tx.SetWebhookCursor(cursor)
	})
	if err != nil {
		return false, err
	}
	d.cursor, d.cursorDirty, d.cursorSaved, d.stored = cursor, false, d.now(), cursor
	d.mu.Lock()
	for _, e := range added {
		d.q.add(e)
	}
	d.mu.Unlock()
	for _, t := range types {
		d.metrics.fannedOut.WithLabelValues(store.MetricLabel(t)).Inc()
	}
	return more, nil
}

// saveCursor writes the in-memory cursor down when it ran ahead, at most
// every cursorSaveEvery unless now is set.
func (d *Dispatcher) saveCursor(now bool) {
	if !d.cursorDirty || (!now && d.now().Sub(d.cursorSaved) < cursorSaveEvery) {
		return
	}
	err := d.db.Update(context.Background(), store.Actor{Source: "webhooks"}, func(tx *store.Tx) error {
		if tx.WebhookCursor() >= d.cursor {
			return nil
		}
		return tx.SetWebhookCursor(d.cursor)
	})
	if err != nil {
		d.log.Error("save webhook cursor", "err", err)
		return
	}
	d.cursorDirty, d.cursorSaved, d.stored = false, d.now(), max(d.stored, d.cursor)
}
