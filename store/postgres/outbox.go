package postgres

import "github.com/fleetcam/fleetcam/store"

// The counters of the webhook outbox: the one row of webhook_outbox, which
// the migration inserts with both at 0.

// WebhookOutbox implements store.WebhookRecords.
func (t *tx) WebhookOutbox() store.WebhookOutboxRecords { return webhookOutbox{t} }

type webhookOutbox struct{ t *tx }

// Cursor implements store.WebhookOutboxRecords.
func (o webhookOutbox) Cursor() (int64, error) {
	return queryValue[int64](o.t, `SELECT cursor_seq FROM webhook_outbox WHERE id = 1`)
}

// SetCursor implements store.WebhookOutboxRecords.
func (o webhookOutbox) SetCursor(seq int64) error {
	_, err := o.t.exec(`UPDATE webhook_outbox SET cursor_seq = $1 WHERE id = 1`, seq)
	return err
}

// Generation implements store.WebhookOutboxRecords.
func (o webhookOutbox) Generation() (int64, error) {
	return queryValue[int64](o.t, `SELECT generation FROM webhook_outbox WHERE id = 1`)
}

// setGeneration stores g as the generation.
func (o webhookOutbox) setGeneration(g int64) error {
	_, err := o.t.exec(`UPDATE webhook_outbox SET generation = $1 WHERE id = 1`, g)
	return err
}

// IncrementGeneration implements store.WebhookOutboxRecords.
func (o webhookOutbox) IncrementGeneration() error {
	_, err := o.t.exec(`UPDATE webhook_outbox SET generation = generation + 1 WHERE id = 1`)
	return err
}
