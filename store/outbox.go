package store

import (
	"bytes"
	"encoding/binary"
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
// Neither bucket grows for good. A delivery carries its own body and never
// looks back at its message, so messages the stored cursor has passed are
// pruned (PruneMessages). Finished deliveries, the delivery log, are
// deleted by the retention purge WebhookDeliveryDays after they finished
// (purgeDeliveries); pending ones stay until they finish.
//
// Buckets:
//
//	webhook_outbox      "cursor" and "generation" counters
//	webhook_deliveries  id → Delivery
//	webhook_queue       org 0 url 0 imei id → next attempt, created (pending only)
//	webhook_org_deliv   org id → nil, to list an organization's deliveries

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

var (
	keyCursor     = []byte("cursor")
	keyGeneration = []byte("generation")
)

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
	tx.tx.OnCommit(tx.db.outbox.fire)
}

// touchOutbox records that the queue changed outside the dispatcher
// (redelivery, an endpoint enabled again), so the dispatcher reloads it.
func (tx *Tx) touchOutbox() error {
	tx.signalOutbox()
	return tx.putCounter(keyGeneration, tx.OutboxGeneration()+1)
}

// OutboxGeneration counts the queue changes made outside the dispatcher.
func (tx *Tx) OutboxGeneration() int64 { return tx.counter(keyGeneration) }

// WebhookCursor is the sequence of the last message turned into deliveries.
func (tx *Tx) WebhookCursor() int64 { return tx.counter(keyCursor) }

// SetWebhookCursor advances the cursor to seq.
func (tx *Tx) SetWebhookCursor(seq int64) error { return tx.putCounter(keyCursor, seq) }

func (tx *Tx) counter(key []byte) int64 {
	v := tx.bucket(bucketOutbox).Get(key)
	if len(v) != 8 {
		return 0
	}
	return btoi(v)
}

func (tx *Tx) putCounter(key []byte, v int64) error { return tx.bucket(bucketOutbox).Put(key, itob(v)) }

// queueKey orders pending deliveries by endpoint, then device, then id.
func queueKey(orgID int64, url, imei string, id int64) []byte {
	k := append(endpointKey(orgID, url), 0)
	k = append(k, imei...)
	return append(k, itob(id)...)
}

func queueValue(d *Delivery) []byte {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, uint64(d.NextAttemptAt.UnixNano()))
	binary.BigEndian.PutUint64(v[8:], uint64(d.CreatedAt.UnixNano()))
	return v
}

func parseQueueEntry(k, v []byte) (QueueEntry, bool) {
	if len(k) < 8+1+1+8 || len(v) != 16 {
		return QueueEntry{}, false
	}
	q := QueueEntry{OrganizationID: btoi(k[:8])}
	rest := k[9:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 || len(rest) < i+1+8 {
		return QueueEntry{}, false
	}
	q.URL = string(rest[:i])
	rest = rest[i+1:]
	q.IMEI = string(rest[:len(rest)-8])
	q.DeliveryID = btoi(rest[len(rest)-8:])
	q.NextAttemptAt = time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
	q.CreatedAt = time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))).UTC()
	return q, true
}

// queueEntries lists the pending deliveries whose queue key starts with prefix.
func (tx *Tx) queueEntries(prefix []byte) []QueueEntry {
	var out []QueueEntry
	c := tx.bucket(bucketQueue).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if q, ok := parseQueueEntry(k, v); ok {
			out = append(out, q)
		}
	}
	return out
}

// PendingDeliveries lists every queued delivery, by endpoint, device and id.
func (tx *Tx) PendingDeliveries() []QueueEntry { return tx.queueEntries(nil) }

// PendingDeliveriesOf lists an organization's queued deliveries.
func (tx *Tx) PendingDeliveriesOf(orgID int64) []QueueEntry {
	return tx.queueEntries(append(itob(orgID), 0))
}

// EnqueueDelivery stores a new pending delivery; it gets an id, its creation
// time and, unless set, a first attempt due now.
func (tx *Tx) EnqueueDelivery(d *Delivery) error {
	id, err := tx.nextID(bucketDeliveries)
	if err != nil {
		return err
	}
	d.ID, d.CreatedAt, d.Status = id, tx.now, DeliveryPending
	if d.NextAttemptAt.IsZero() {
		d.NextAttemptAt = tx.now
	}
	if err := tx.bucket(bucketOrgDeliveries).Put(compositeKey(d.OrganizationID, id), nil); err != nil {
		return err
	}
	return tx.PutDelivery(d)
}

// Delivery returns delivery id.
func (tx *Tx) Delivery(id int64) (*Delivery, error) {
	var d Delivery
	if err := getJSON(tx.bucket(bucketDeliveries), itob(id), &d); err != nil {
		return nil, missing(err, "delivery %d", id)
	}
	return &d, nil
}

// PutDelivery stores d; a pending delivery stays queued, any other leaves the queue.
func (tx *Tx) PutDelivery(d *Delivery) error {
	if err := putJSON(tx.bucket(bucketDeliveries), itob(d.ID), d); err != nil {
		return err
	}
	qk := queueKey(d.OrganizationID, d.URL, d.IMEI, d.ID)
	if d.Status == DeliveryPending {
		return tx.bucket(bucketQueue).Put(qk, queueValue(d))
	}
	return tx.bucket(bucketQueue).Delete(qk)
}

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

func (f DeliveryFilter) match(d *Delivery) bool {
	if f.Devices != nil {
		since, has := f.Devices[d.IMEI]
		if !has || d.IMEI == "" || d.MessageTime.Before(since) {
			return false
		}
	}
	return (f.Status == "" || d.Status == f.Status) && (f.URL == "" || d.URL == f.URL) &&
		(f.IMEI == "" || d.IMEI == f.IMEI) && (f.Type == "" || d.Type == f.Type)
}

func (f DeliveryFilter) empty() bool {
	return f.Status == "" && f.URL == "" && f.IMEI == "" && f.Type == "" && f.Devices == nil
}

// Deliveries returns an organization's deliveries matching f, newest first,
// the requested page of them and the total count.
func (tx *Tx) Deliveries(orgID int64, f DeliveryFilter, p Page) ([]Delivery, int, error) {
	var out []Delivery
	total := 0
	prefix := itob(orgID)
	c := tx.bucket(bucketOrgDeliveries).Cursor()
	k, _ := c.Seek(itob(orgID + 1))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
		inPage := total >= p.Offset && (p.Limit <= 0 || len(out) < p.Limit)
		if f.empty() && !inPage {
			total++
			continue
		}
		d, err := tx.Delivery(btoi(k[8:]))
		if err != nil {
			return nil, 0, err
		}
		if !f.match(d) {
			continue
		}
		if inPage {
			out = append(out, *d)
		}
		total++
	}
	return out, total, nil
}

// Redeliver queues the message of an organization's delivery id again, to
// the same URL and with the same webhook id, behind what is already queued
// for that device and URL. A disabled endpoint is enabled again. The new
// delivery copies the body of delivery id; a delivery the retention purge
// deleted is not found.
func (tx *Tx) Redeliver(orgID, id int64) (*Delivery, error) {
	orig, err := tx.Delivery(id)
	if err != nil || orig.OrganizationID != orgID {
		return nil, NotFound("delivery %d", id)
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
// deliveries stay whatever their age. Deliveries are walked oldest first
// (ids grow with creation time) and the walk stops at the first one created
// after the latest cutoff, which cannot have finished before it. A
// redelivery keeps its own copy of the body, so purging the delivery it
// repeats takes nothing from it.
func purgeDeliveries(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	latest := cut.Latest()
	c := tx.bucket(bucketDeliveries).Cursor()
	k, v := c.First()
	if from != nil {
		k, v = c.Seek(from)
	}
	var doomed [][2]int64 // organization, delivery
	var resume []byte
	for ; k != nil; k, v = c.Next() {
		if len(doomed) >= limit {
			resume = bytes.Clone(k)
			break
		}
		var d struct {
			OrganizationID int64     `json:"organizationId"`
			Status         string    `json:"status"`
			CreatedAt      time.Time `json:"createdAt"`
			FinishedAt     time.Time `json:"finishedAt"`
		}
		if err := jsonUnmarshal(v, &d); err != nil {
			return 0, nil, err
		}
		if !d.CreatedAt.Before(latest) {
			break
		}
		if t, ok := cut[d.OrganizationID]; ok && d.Status != DeliveryPending && d.FinishedAt.Before(t) {
			doomed = append(doomed, [2]int64{d.OrganizationID, btoi(k)})
		}
	}
	for _, g := range doomed {
		if err := tx.bucket(bucketDeliveries).Delete(itob(g[1])); err != nil {
			return 0, nil, err
		}
		if err := tx.bucket(bucketOrgDeliveries).Delete(compositeKey(g[0], g[1])); err != nil {
			return 0, nil, err
		}
	}
	return len(doomed), resume, nil
}
