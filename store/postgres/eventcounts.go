package postgres

import (
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Hourly event counts (migrations/00018_event_hours.sql): event_hours
// holds, per organization, UTC hour, partner (0 for none), type and
// writing node, how many events were added there less how many were
// removed. They follow the events exactly, in the transaction that
// changes them:
//
//   - Insert queues an upsert of +1 (it costs no round trip: it goes with
//     the transaction's next statement, pipe.go);
//   - Delete subtracts 1 in the statement that deletes the row, for a row
//     that was there only;
//   - the retention purge's whole-day drop (partitiondrop.go) deletes the
//     counts of the day's hours with the day's partition;
//   - every write of events by COPY, a copy into the database and a bulk
//     transaction (bulk.go), adds the counts of each batch it writes in
//     the same transaction (copyEvents, copykinds_records.go);
//   - Update leaves what they count as it is (store.EventSet).
//
// The node is the engine's Options.Node: a transaction has no node id of
// its own, so every transaction of one engine writes under the id the
// engine was opened with, and two nodes of a cluster never update one row
// (their group commits would otherwise conflict on every busy hour). An
// hour's count is the sum of its rows over the nodes; one node's row may
// be below zero.
//
// An organization's event page (eventquery.go) counts the whole hours of
// its window from these rows and only the partial hours at its ends from
// the index.

// eventHour is the hour an event at time counts in: the UTC hour, as
// date_trunc('hour', time, 'UTC') has it.
func eventHour(at time.Time) time.Time { return at.UTC().Truncate(time.Hour) }

// The statements that change the counts. The hour is computed by the
// server from the event's time in every one of them, so that the rows a
// statement adds to and the rows another subtracts from are the same.
const (
	// countEventSQL adds $6 to the count of the event of organization $1,
	// time $2, partner $3 (0: none) and type $4 written by node $5.
	countEventSQL = `INSERT INTO event_hours AS h (organization_id, hour, partner_id, type, node, events)
	VALUES ($1, date_trunc('hour', $2::timestamptz, 'UTC'), $3, $4, $5, $6)
	ON CONFLICT (organization_id, hour, partner_id, type, node) DO UPDATE SET events = h.events + excluded.events`

	// deleteEventSQL deletes the event ($1, $2) and takes it off its
	// hour's count (node $3) when it was there.
	deleteEventSQL = `WITH e AS (
		DELETE FROM events WHERE id = $1 AND time = $2 RETURNING organization_id, time, partner_id, type)
	INSERT INTO event_hours AS h (organization_id, hour, partner_id, type, node, events)
	SELECT organization_id, date_trunc('hour', time, 'UTC'), coalesce(partner_id, 0), type, $3, -1 FROM e
	ON CONFLICT (organization_id, hour, partner_id, type, node) DO UPDATE SET events = h.events + excluded.events`

	// countEventsSQL adds the events of the arrays $1 (organizations), $2
	// (times), $3 (partners, 0 for none) and $4 (types) to the counts of
	// node $5.
	countEventsSQL = `INSERT INTO event_hours AS h (organization_id, hour, partner_id, type, node, events)
	SELECT org, date_trunc('hour', at, 'UTC'), partner, type, $5, count(*)
	  FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[], $4::text[]) AS e(org, at, partner, type)
	 GROUP BY 1, 2, 3, 4
	ON CONFLICT (organization_id, hour, partner_id, type, node) DO UPDATE SET events = h.events + excluded.events`

	// dropEventHoursSQL deletes the counts of the hours from $1 to $2
	// (exclusive), every organization's and node's.
	dropEventHoursSQL = `DELETE FROM event_hours WHERE hour >= $1 AND hour < $2`
)

// countEvent queues the count of e, just inserted: its answer nobody
// waits for, so it goes with the transaction's next statement.
func (t *tx) countEvent(e *store.Event) error {
	return t.queue(countEventSQL, e.OrganizationID, e.Time, e.PartnerID, e.Type, t.node, 1)
}

// countEventsArgs are the arguments of countEventsSQL for batch, counted
// under node.
func countEventsArgs(batch []*store.Event, node string) []any {
	orgs, times, partners, types := make([]int64, len(batch)), make([]time.Time, len(batch)),
		make([]int64, len(batch)), make([]string, len(batch))
	for i, e := range batch {
		orgs[i], times[i], partners[i], types[i] = e.OrganizationID, e.Time, e.PartnerID, e.Type
	}
	return []any{orgs, times, partners, types, node}
}

// BackfillHourlyCounts implements store.EventSet: the schema migration
// that made the counts (00018) counted the events stored before it, and
// every write since keeps them, so there is nothing to bring up to date.
func (s events) BackfillHourlyCounts() error { return nil }
