package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fleetcam/fleetcam/store"
)

// Messages of the webhook outbox: bucket messages, seq → Message. Sequences
// come from the bucket's sequence, which keeps counting when the bucket is
// emptied, so keys only grow and pruning deletes from the front.

// Messages implements store.WebhookRecords.
func (t *tx) Messages() store.MessageRecords { return messages{t} }

type messages struct{ t *tx }

// Append implements store.MessageRecords.
func (m messages) Append(msg *store.Message) error {
	if err := m.t.drawID(bucketMessages, &msg.Seq); err != nil {
		return err
	}
	return m.put(msg)
}

// put stores msg under its sequence.
func (m messages) put(msg *store.Message) error {
	return putJSON(m.t.bucket(bucketMessages), itob(msg.Seq), msg)
}

// After implements store.MessageRecords.
func (m messages) After(seq int64, limit int) ([]store.Message, error) {
	var out []store.Message
	c := m.t.bucket(bucketMessages).Cursor()
	for k, v := c.Seek(itob(seq + 1)); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
		var msg store.Message
		if err := json.Unmarshal(v, &msg); err != nil {
			return nil, fmt.Errorf("store: decode message: %w", err)
		}
		out = append(out, msg)
	}
	return out, nil
}

// DeleteThrough implements store.MessageRecords.
func (m messages) DeleteThrough(seq int64, limit int) (n int, more bool, err error) {
	b := m.t.bucket(bucketMessages)
	c := b.Cursor()
	var doomed [][]byte
	for k, _ := c.First(); k != nil && btoi(k) <= seq; k, _ = c.Next() {
		if limit > 0 && len(doomed) >= limit {
			more = true
			break
		}
		doomed = append(doomed, bytes.Clone(k))
	}
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return 0, false, err
		}
	}
	return len(doomed), more, nil
}
