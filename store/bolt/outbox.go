package bolt

import "github.com/fleetcam/fleetcam/store"

// The counters of the webhook outbox: bucket webhook_outbox, "cursor" and
// "generation" → 8 bytes big-endian.

var (
	keyCursor     = []byte("cursor")
	keyGeneration = []byte("generation")
)

// WebhookOutbox implements store.WebhookRecords.
func (t *tx) WebhookOutbox() store.WebhookOutboxRecords { return webhookOutbox{t} }

type webhookOutbox struct{ t *tx }

// Cursor implements store.WebhookOutboxRecords.
func (o webhookOutbox) Cursor() (int64, error) { return o.counter(keyCursor), nil }

// SetCursor implements store.WebhookOutboxRecords.
func (o webhookOutbox) SetCursor(seq int64) error { return o.put(keyCursor, seq) }

// Generation implements store.WebhookOutboxRecords.
func (o webhookOutbox) Generation() (int64, error) { return o.counter(keyGeneration), nil }

// IncrementGeneration implements store.WebhookOutboxRecords.
func (o webhookOutbox) IncrementGeneration() error {
	return o.put(keyGeneration, o.counter(keyGeneration)+1)
}

// counter reads a counter; one missing or not 8 bytes long is 0.
func (o webhookOutbox) counter(key []byte) int64 {
	v := o.t.bucket(bucketOutbox).Get(key)
	if len(v) != 8 {
		return 0
	}
	return btoi(v)
}

func (o webhookOutbox) put(key []byte, v int64) error {
	return o.t.bucket(bucketOutbox).Put(key, itob(v))
}
