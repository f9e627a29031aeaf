package store

import "context"

// WebhookRecords are the record sets of the audit log, messages, the webhook
// outbox and deliveries, and webhook settings, whose rules are in audit.go,
// messages.go, outbox.go, webhooks.go, webhookreceivers.go.
type WebhookRecords interface {
	AuditEntries() AuditEntryRecords
	Messages() MessageRecords
	WebhookOutbox() WebhookOutboxRecords
	Deliveries() DeliveryRecords
	WebhookSettings() KeyedRecords[int64, WebhookSettings]
	WebhookSubscriptions() WebhookSubscriptionRecords
	WebhookSecrets() KeyedRecords[int64, WebhookSecret]
	WebhookEndpoints() WebhookEndpointRecords
	WebhookReceivers() WebhookReceiverRecords
}

// AuditEntryRecords are the entries of the audit log. Every write of the
// store appends one, so Append is on every write's path.
type AuditEntryRecords interface {
	// Append stores e under the next id of the log, which it sets in e.ID;
	// in a group commit (Pipeliner) the engine may draw it as late as the
	// commit, and leave e.ID unset.
	// Ids grow with every entry and are never reused.
	Append(e *AuditEntry) error
	// List returns the entries f matches (AuditFilter.Match), newest (highest
	// id) first: the page p of them and how many match in all. It stops with
	// ctx's error once ctx ends.
	List(ctx context.Context, f AuditFilter, p Page) ([]AuditEntry, int, error)
	// Purge deletes, oldest first, up to limit entries (every one when
	// limit is 0 or less) whose organization has a cutoff in cut that their
	// time precedes, starting at the resume position from (nil: the
	// oldest). It returns how many it deleted and where to resume, nil
	// once no entry is left to look at. Entries are
	// appended in time order, so the walk may end at the first entry not
	// older than the latest cutoff.
	Purge(cut Cutoffs, from []byte, limit int) (int, []byte, error)
}

// MessageRecords are the messages of the webhook outbox, in the order they
// were recorded. Emit appends one in the transaction of many device writes.
type MessageRecords interface {
	// Append stores m under the next sequence, which it sets in m.Seq; in
	// a group commit (Pipeliner) the engine may draw it as late as the
	// commit, and leave m.Seq unset.
	// Sequences grow with every message and are never reused, also after
	// the messages below them were deleted.
	Append(m *Message) error
	// After returns up to limit messages with a sequence above seq, in
	// sequence order (all of them when limit is 0).
	After(seq int64, limit int) ([]Message, error)
	// DeleteThrough deletes up to limit of the oldest messages with a
	// sequence at or below seq (all of them when limit is 0). It returns how
	// many it deleted and whether such messages are left.
	DeleteThrough(seq int64, limit int) (n int, more bool, err error)
}

// WebhookOutboxRecords are the two counters of the outbox: how far the
// dispatcher turned messages into deliveries, and how often the queue was
// changed outside the dispatcher. Both are 0 until first set.
type WebhookOutboxRecords interface {
	// Cursor is the sequence of the last message turned into deliveries.
	Cursor() (int64, error)
	// SetCursor stores seq as the cursor.
	SetCursor(seq int64) error
	// Generation counts the queue changes made outside the dispatcher.
	Generation() (int64, error)
	// IncrementGeneration adds one to the generation.
	IncrementGeneration() error
}

// DeliveryRecords are webhook deliveries and the queue of the pending ones.
// A delivery is queued exactly while its Status is DeliveryPending; the
// engine keeps the queue, and an index of each organization's deliveries,
// with the delivery itself.
type DeliveryRecords interface {
	// Insert stores the new delivery d under the next id, which it sets in
	// d.ID. Ids grow with every delivery and are never reused.
	Insert(d *Delivery) error
	// Get returns delivery id; ErrNotFound when there is none.
	Get(id int64) (*Delivery, error)
	// Put replaces delivery d.ID with d: queued with its NextAttemptAt and
	// CreatedAt while it is pending, off the queue otherwise.
	Put(d *Delivery) error
	// Pending returns the queued deliveries, ordered by organization, URL,
	// device (IMEI) and id: every one when orgID is 0, else the
	// organization's, and only those to url when url is not empty.
	Pending(orgID int64, url string) ([]QueueEntry, error)
	// List returns an organization's deliveries that f matches
	// (DeliveryFilter.Match), newest (highest id) first: the page p of them
	// and how many match in all.
	List(orgID int64, f DeliveryFilter, p Page) ([]Delivery, int, error)
	// PurgeFinished deletes, oldest first, up to limit deliveries (every
	// one when limit is 0 or less) that are no longer pending and finished
	// before the cutoff cut has for their organization, starting at the
	// resume position from (nil: the oldest).
	// Pending deliveries stay whatever their age. It returns how many it
	// deleted and where to resume, nil once no delivery is left to look at.
	// Ids grow with creation time, so the walk may end at the first delivery
	// created after the latest cutoff, which cannot have finished before it.
	PurgeFinished(cut Cutoffs, from []byte, limit int) (int, []byte, error)
}

// WebhookSubscriptionRecords are device webhook subscriptions, each of one
// organization.
type WebhookSubscriptionRecords interface {
	// List returns an organization's subscriptions in id order; imei, when
	// not empty, keeps only that device's.
	List(orgID int64, imei string) ([]WebhookSubscription, error)
	// Get returns subscription id of an organization; ErrNotFound when the
	// organization has none of that id.
	Get(orgID, id int64) (*WebhookSubscription, error)
	// Insert stores the new subscription s under the next id, which it sets
	// in s.ID. Ids are never reused. An organization subscribes a URL to
	// one type of one device's webhooks once: ErrConflict when another of
	// its subscriptions has s's IMEI, type and URL.
	Insert(s *WebhookSubscription) error
	// Put replaces subscription s.ID of s.OrganizationID with s, or stores
	// s under that id when no subscription has it; ErrNotFound when the id
	// is another organization's, ErrConflict as for Insert.
	Put(s *WebhookSubscription) error
	// Delete removes subscription id of an organization; deleting one that
	// is not there is no error.
	Delete(orgID, id int64) error
}

// WebhookEndpointRecords are the delivery states of the URLs deliveries go
// to, one per organization and URL.
type WebhookEndpointRecords interface {
	// Get returns the state of an organization's URL; ErrNotFound when none
	// was stored.
	Get(orgID int64, url string) (*WebhookEndpoint, error)
	// Put stores e as the state of e.OrganizationID's e.URL.
	Put(e *WebhookEndpoint) error
	// List returns the stored states of an organization's URLs in URL order.
	List(orgID int64) ([]WebhookEndpoint, error)
}

// WebhookReceiverRecords index, per organization, the webhook types some of
// its URLs receive, so that ingest learns in one read whether a message of
// a type would reach anyone. The store computes the types; the index only
// keeps them.
type WebhookReceiverRecords interface {
	// Has reports whether typ is among the types stored for the organization.
	Has(orgID int64, typ string) (bool, error)
	// Put stores the organization's types; none removes its entry.
	Put(orgID int64, types []string) error
	// Organizations lists, in ascending order, every organization that has
	// webhook settings, a subscription or an entry of the index.
	Organizations() ([]int64, error)
}
