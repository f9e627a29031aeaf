package store

import (
	"encoding/json"
	"time"
)

// Message kinds recorded for webhook delivery. The webhook dispatcher reads
// the messages as its outbox source: a message is written in the same
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

// Message is one fact to tell an organization's webhooks about. The store
// records what happened as typed data, never a webhook body: exactly one of
// the fact fields is set, by the kind and sub-type, and cloudapi/webhooks
// renders the body from it (messagefacts.go).
type Message struct {
	Seq            int64     `json:"seq"`
	Kind           string    `json:"kind"`
	SubType        string    `json:"subType,omitempty"`
	OrganizationID int64     `json:"organizationId"`
	PartnerID      int64     `json:"partnerId,omitempty"`
	IMEI           string    `json:"imei,omitempty"`
	Time           time.Time `json:"time"`

	// The fact, one of these.
	Event      *EventFact      `json:"event,omitempty"`      // MessageEvent, MessageMediaUploaded
	GPS        []GPSPoint      `json:"gps,omitempty"`        // MessageGPS
	Activation *ActivationFact `json:"activation,omitempty"` // MessageActivation of EventDeviceActivation
	Presence   *PresenceFact   `json:"presence,omitempty"`   // SystemDeviceStatus
	Removed    *RemovedFact    `json:"removed,omitempty"`    // SystemDeviceRemoved
	Alarm      *AlarmFact      `json:"alarm,omitempty"`      // MessageAlarm
	AuxCamera  *AuxCameraFact  `json:"auxCamera,omitempty"`  // SystemAuxCameraStatus (also as MessageActivation), SystemAuxCameraPairing
	AuxSearch  *AuxSearchFact  `json:"auxSearch,omitempty"`  // SystemAuxCameraPairing after a search
	Privacy    *PrivacyFact    `json:"privacy,omitempty"`    // SystemPrivacyMode

	// Payload is the webhook data object, already rendered, of a message
	// recorded before the store recorded typed facts. Such rows may still
	// wait in the outbox after an upgrade; webhooks sends their payload as
	// it is. New messages carry a fact instead.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Emit appends a message to the outbox source in this transaction; a
// message without a time takes the transaction's.
func (tx *Tx) Emit(m Message) error {
	if m.Time.IsZero() {
		m.Time = tx.now
	}
	tx.signalOutbox()
	return tx.rec.Messages().Append(&m)
}

// MessagesAfter returns up to limit messages with a sequence above seq,
// oldest first (all of them when limit is 0). Messages at or below the
// stored webhook cursor may have been pruned (PruneMessages).
func (tx *Tx) MessagesAfter(seq int64, limit int) ([]Message, error) {
	return tx.rec.Messages().After(seq, limit)
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
	cursor, err := tx.rec.WebhookOutbox().Cursor()
	if err != nil {
		return 0, false, err
	}
	return tx.rec.Messages().DeleteThrough(cursor, limit)
}
