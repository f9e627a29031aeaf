package store

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// The webhook outbox. Messages (messages.go) are the source: the dispatcher
// reads those after its persisted cursor and, in the transaction that
// advances the cursor, turns each into one delivery per receiving URL. A
// delivery stays queued until it is delivered or given up, so neither a
// crash nor a restart loses or invents one.
//
// Neither messages nor deliveries grow for good. A delivery carries its own
// body and never looks back at its message, so messages the stored cursor
// has passed are pruned (PruneMessages). Finished deliveries, the delivery
// log, are deleted by the retention purge WebhookDeliveryDays after they
// finished (purgeDeliveries); pending ones stay until they finish.
//
// The engine keeps the deliveries with the queue of the pending ones, in
// the order the dispatcher sends them (endpoint, device, id), and the two
// counters of the outbox (WebhookOutboxRecords): the cursor, and the
// generation of the queue, which moves when the queue changes outside the
// dispatcher.

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// maxAttemptLog bounds the attempts a delivery remembers.
const maxAttemptLog = 20

// DeliveryAttempt is one try to deliver.
type DeliveryAttempt struct {
	Time       time.Time `json:"time"`
	StatusCode int       `json:"statusCode,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"durationMs"`
}

// Delivery is one message on its way to one URL of one organization.
type Delivery struct {
	ID             int64  `json:"id"`
	OrganizationID int64  `json:"organizationId"`
	URL            string `json:"url"`
	// MessageSeq is the message the delivery carries.
	MessageSeq int64 `json:"messageSeq"`
	// WebhookID identifies the message to the receiver; every attempt and
	// every redelivery of the message to this URL carries the same one.
	WebhookID      string            `json:"webhookId"`
	Type           string            `json:"type"`
	MessageType    string            `json:"messageType,omitempty"`
	IMEI           string            `json:"imei,omitempty"`
	MessageTime    time.Time         `json:"messageTime"`
	CreatedAt      time.Time         `json:"createdAt"`
	Status         string            `json:"status"`
	Attempts       int               `json:"attempts"`
	NextAttemptAt  time.Time         `json:"nextAttemptAt,omitzero"`
	FirstAttemptAt time.Time         `json:"firstAttemptAt,omitzero"`
	LastAttemptAt  time.Time         `json:"lastAttemptAt,omitzero"`
	LastStatusCode int               `json:"lastStatusCode,omitempty"`
	LastError      string            `json:"lastError,omitempty"`
	FinishedAt     time.Time         `json:"finishedAt,omitzero"`
	RedeliveryOf   int64             `json:"redeliveryOf,omitempty"`
	Log            []DeliveryAttempt `json:"log,omitempty"`
	Body           json.RawMessage   `json:"body"`
}

// RecordAttempt appends an attempt to the delivery's history.
func (d *Delivery) RecordAttempt(a DeliveryAttempt) {
	d.Attempts++
	if d.FirstAttemptAt.IsZero() {
		d.FirstAttemptAt = a.Time
	}
	d.LastAttemptAt, d.LastStatusCode, d.LastError = a.Time, a.StatusCode, a.Error
	d.Log = append(d.Log, a)
	if len(d.Log) > maxAttemptLog {
		d.Log = d.Log[len(d.Log)-maxAttemptLog:]
	}
}

// QueueEntry is a pending delivery as the dispatcher schedules it.
type QueueEntry struct {
	OrganizationID int64
	URL            string
	IMEI           string
	DeliveryID     int64
	NextAttemptAt  time.Time
	CreatedAt      time.Time
}

// signal is a level-triggered wake-up for watchers of the outbox.
type signal struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func newSignal() *signal { return &signal{subs: map[chan struct{}]struct{}{}} }

func (s *signal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// OutboxSignal returns a channel that receives after every commit that
// emitted a message or changed the delivery queue from outside the
// dispatcher, and a function that stops the notifications.
func (db *DB) OutboxSignal() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	db.outbox.mu.Lock()
	db.outbox.subs[ch] = struct{}{}
	db.outbox.mu.Unlock()
	return ch, func() {
		db.outbox.mu.Lock()
		delete(db.outbox.subs, ch)
		db.outbox.mu.Unlock()
	}
}

// signalOutbox wakes the outbox watchers once this transaction commits.
func (tx *Tx) signalOutbox() {
	if tx.signalled || tx.db == nil {
		return
	}
	tx.signalled = true
	tx.OnCommit(tx.db.outbox.fire)
}

// touchOutbox records that the queue changed outside the dispatcher
// (redelivery, an endpoint enabled again), so the dispatcher reloads it.
func (tx *Tx) touchOutbox() error {
	tx.signalOutbox()
	return tx.rec.WebhookOutbox().IncrementGeneration()
}

// OutboxGeneration counts the queue changes made outside the dispatcher; it
// is 0 when the engine cannot read it.
func (tx *Tx) OutboxGeneration() int64 {
	g, _ := tx.rec.WebhookOutbox().Generation()
	return g
}

// WebhookCursor is the sequence of the last message turned into
// deliveries; it is 0 when the engine cannot read it (PruneMessages, which
// must not misread it, fails with the engine's error instead).
func (tx *Tx) WebhookCursor() int64 {
	seq, _ := tx.rec.WebhookOutbox().Cursor()
	return seq
}

// SetWebhookCursor advances the cursor to seq.
func (tx *Tx) SetWebhookCursor(seq int64) error { return tx.rec.WebhookOutbox().SetCursor(seq) }

// PendingDeliveries lists every queued delivery, by endpoint, device and
// id; none when the engine cannot read the queue.
func (tx *Tx) PendingDeliveries() []QueueEntry {
	q, _ := tx.rec.Deliveries().Pending(0, "")
	return q
}

// PendingDeliveriesOf lists an organization's queued deliveries, by
// endpoint, device and id; none when the engine cannot read the queue.
func (tx *Tx) PendingDeliveriesOf(orgID int64) []QueueEntry {
	q, _ := tx.rec.Deliveries().Pending(orgID, "")
	return q
}

// EnqueueDelivery stores a new pending delivery; it gets an id, its creation
// time and, unless set, a first attempt due now.
func (tx *Tx) EnqueueDelivery(d *Delivery) error {
	d.CreatedAt, d.Status = tx.now, DeliveryPending
	if d.NextAttemptAt.IsZero() {
		d.NextAttemptAt = tx.now
	}
	return tx.rec.Deliveries().Insert(d)
}

// Delivery returns delivery id.
func (tx *Tx) Delivery(id int64) (*Delivery, error) {
	d, err := tx.rec.Deliveries().Get(id)
	if err != nil {
		return nil, missing(err, "delivery %d", id)
	}
	return d, nil
}

// PutDelivery stores d; a pending delivery stays queued, any other leaves the queue.
func (tx *Tx) PutDelivery(d *Delivery) error { return tx.rec.Deliveries().Put(d) }

// DeliveryFilter selects an organization's deliveries. Zero fields do not filter.
type DeliveryFilter struct {
	Status string
	URL    string
	IMEI   string
	Type   string
	// Devices, when not nil, keeps only deliveries of messages about these
	// devices (by IMEI) from the given time on, when the device joined the
	// organization: what a guest partner of a shared organization may see.
	Devices map[string]time.Time
}

// Match reports whether f selects d.
func (f DeliveryFilter) Match(d *Delivery) bool {
	if f.Devices != nil {
		since, has := f.Devices[d.IMEI]
		if !has || d.IMEI == "" || d.MessageTime.Before(since) {
			return false
		}
	}
	return (f.Status == "" || d.Status == f.Status) && (f.URL == "" || d.URL == f.URL) &&
		(f.IMEI == "" || d.IMEI == f.IMEI) && (f.Type == "" || d.Type == f.Type)
}

// IsZero reports whether f selects every delivery.
func (f DeliveryFilter) IsZero() bool {
	return f.Status == "" && f.URL == "" && f.IMEI == "" && f.Type == "" && f.Devices == nil
}

// Deliveries returns an organization's deliveries matching f, newest first,
// the requested page of them and the total count.
func (tx *Tx) Deliveries(orgID int64, f DeliveryFilter, p Page) ([]Delivery, int, error) {
	return tx.rec.Deliveries().List(orgID, f, p)
}

// Redeliver queues the message of an organization's delivery id again, to
// the same URL and with the same webhook id, behind what is already queued
// for that device and URL. A disabled endpoint is enabled again. The new
// delivery copies the body of delivery id; a delivery the retention purge
// deleted is not found. Only a finished (delivered or given-up) delivery is
// redelivered, and only when no copy of its message is pending at its URL:
// ErrConflict otherwise, so repeated calls do not queue a copy each.
func (tx *Tx) Redeliver(orgID, id int64) (*Delivery, error) {
	orig, err := tx.Delivery(id)
	if err != nil || orig.OrganizationID != orgID {
		return nil, NotFound("delivery %d", id)
	}
	if orig.Status == DeliveryPending {
		return nil, Conflict("delivery %d is %s: it can be redelivered once it is delivered or given up", id, orig.Status)
	}
	pending, _, err := tx.Deliveries(orgID, DeliveryFilter{Status: DeliveryPending, URL: orig.URL, IMEI: orig.IMEI}, Page{})
	if err != nil {
		return nil, err
	}
	for _, p := range pending {
		if p.RedeliveryOf == orig.ID || (orig.WebhookID != "" && p.WebhookID == orig.WebhookID) {
			return nil, Conflict("delivery %d is %s: its message is already queued again as pending delivery %d", id, orig.Status, p.ID)
		}
	}
	d := &Delivery{OrganizationID: orgID, URL: orig.URL, MessageSeq: orig.MessageSeq, WebhookID: orig.WebhookID,
		Type: orig.Type, MessageType: orig.MessageType, IMEI: orig.IMEI, MessageTime: orig.MessageTime,
		RedeliveryOf: orig.ID, Body: orig.Body}
	if err := tx.EnqueueDelivery(d); err != nil {
		return nil, err
	}
	if err := tx.EnableWebhookEndpoints(orgID, []string{d.URL}); err != nil {
		return nil, err
	}
	if err := tx.Audit(AuditChange{Action: "webhook.delivery.redeliver", EntityType: "webhookDelivery",
		EntityID: strconv.FormatInt(d.ID, 10), OrganizationID: orgID,
		After: map[string]any{"redeliveryOf": orig.ID, "url": d.URL, "webhookId": d.WebhookID}}); err != nil {
		return nil, err
	}
	return d, tx.touchOutbox()
}

// purgeDeliveries is the retention purge of the delivery log: it deletes
// deliveries that finished (delivered or given up) before their
// organization's cutoff, with their organization index entries. Pending
// deliveries stay whatever their age. A redelivery keeps its own copy of
// the body, so purging the delivery it repeats takes nothing from it.
func purgeDeliveries(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	return tx.rec.Deliveries().PurgeFinished(cut, from, limit)
}
