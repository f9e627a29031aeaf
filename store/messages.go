package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Message kinds recorded for webhook delivery. The webhook dispatcher reads
// the messages bucket as its outbox source: a message is written in the same
// transaction as the record that causes it, so none is lost or invented.
const (
	MessageEvent         = "event"
	MessageGPS           = "gps"
	MessageActivation    = "activation"
	MessageSystem        = "systemMessages"
	MessageAlarm         = "alarm"
	MessageMediaUploaded = "mediaAvailable"
)

// System message types carried by MessageSystem messages.
const (
	SystemDeviceRemoved   = "deviceRemoved"
	SystemDeviceStatus    = "deviceStatus"
	SystemPrivacyMode     = "privacyMode"
	SystemAuxCameraStatus = "auxiliaryCamera"
)

// Message is one fact to tell an organization's webhooks about.
type Message struct {
	Seq            int64           `json:"seq"`
	Kind           string          `json:"kind"`
	SubType        string          `json:"subType,omitempty"`
	OrganizationID int64           `json:"organizationId"`
	PartnerID      int64           `json:"partnerId,omitempty"`
	IMEI           string          `json:"imei,omitempty"`
	Time           time.Time       `json:"time"`
	Payload        json.RawMessage `json:"payload,omitempty"`
}

// Emit appends a message to the outbox source in this transaction. payload
// is encoded as JSON.
func (tx *Tx) Emit(m Message, payload any) error {
	seq, err := tx.nextID(bucketMessages)
	if err != nil {
		return err
	}
	m.Seq = seq
	if m.Time.IsZero() {
		m.Time = tx.now
	}
	if payload != nil {
		raw, err := json.Marshal(payload)
		if err != nil {
			return fmt.Errorf("store: encode message payload: %w", err)
		}
		m.Payload = raw
	}
	tx.signalOutbox()
	return putJSON(tx.bucket(bucketMessages), itob(seq), m)
}

// MessagesAfter returns up to limit messages with a sequence above seq,
// oldest first (all of them when limit is 0). Messages at or below the
// stored webhook cursor may have been pruned (PruneMessages).
func (tx *Tx) MessagesAfter(seq int64, limit int) ([]Message, error) {
	var out []Message
	c := tx.bucket(bucketMessages).Cursor()
	for k, v := c.Seek(itob(seq + 1)); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
		var m Message
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, fmt.Errorf("store: decode message: %w", err)
		}
		out = append(out, m)
	}
	return out, nil
}

// PruneMessages deletes up to limit of the oldest messages at or below the
// stored webhook cursor and reports how many it deleted and whether more
// such messages are left. Nothing reads a message the stored cursor has
// passed: it was turned into deliveries, which carry their own body, and a
// redelivery copies its delivery, not the message. The cursor is read in
// this transaction, so a message is never pruned before the cursor that
// passes it is committed, and pruning later (after a crash, say) only
// catches up.
func (tx *Tx) PruneMessages(limit int) (n int, more bool, err error) {
	cursor := tx.WebhookCursor()
	b := tx.bucket(bucketMessages)
	c := b.Cursor()
	var doomed [][]byte
	for k, _ := c.First(); k != nil && btoi(k) <= cursor; k, _ = c.Next() {
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
