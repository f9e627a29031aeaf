package postgres

import (
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// Event counts (migrations/00018_event_hours.sql and
// 00019_device_event_days.sql): event_hours holds, per organization, UTC
// hour, partner (0 for none), type and writing node, how many events were
// added there less how many were removed; device_event_days holds the
// same per device (imei), ownership, UTC day, type and writing node. Both
// follow the events exactly, in the transaction that changes them, and
// every statement below writes both, so that neither can be kept where
// the other is not:
//
//   - Insert queues an upsert of +1 (it costs no round trip: it goes with
//     the transaction's next statement, pipe.go);
//   - Delete subtracts 1 in the statement that deletes the row, for a row
//     that was there only;
//   - the retention purge's whole-day drop (partitiondrop.go) deletes the
//     counts of the day's hours and of the day with the day's partition;
//   - every write of events by COPY, a copy into the database and a bulk
//     transaction (bulk.go), adds the counts of each batch it writes in
//     the same transaction (copyEvents, copykinds_records.go);
//   - Update leaves what they count as it is (store.EventSet).
//
// The node is the engine's Options.Node: a transaction has no node id of
// its own, so every transaction of one engine writes under the id the
// engine was opened with, and two nodes of a cluster never update one row
// (their group commits would otherwise conflict on every busy hour). A
// count is the sum of its rows over the nodes; one node's row may be below
// zero.
//
// An organization's event page (eventquery.go) counts the whole hours of
// its window from the hourly rows, a device's page the whole days of its
// window from the daily rows, and each only the partial hours or days at
// its window's ends from the index.

// The statements that change the counts. The hour and the day are computed
// by the server from the event's time in every one of them, so that the
// rows a statement adds to and the rows another subtracts from are the
// same. Each is one statement that writes both tables (a data-modifying
// WITH runs whether or not the statement reads it), so that an event
// costs the server one statement to parse and run, not two.
const (
	// upsertEventHour and upsertDeviceDay are the end of an INSERT of
	// counts of the two tables: a count already there goes up by the new
	// one.
	upsertEventHour = `ON CONFLICT (organization_id, hour, partner_id, type, node) DO UPDATE SET events = h.events + excluded.events`
	upsertDeviceDay = `ON CONFLICT (imei, ownership, day, type, node) DO UPDATE SET events = d.events + excluded.events`

	// countEventSQL adds $8 to the counts of the event of organization
	// $1, time $2, partner $3 (0: none), type $4, device $6 and ownership
	// $7, written by node $5.
	countEventSQL = `WITH hour AS (
		INSERT INTO event_hours AS h (organization_id, hour, partner_id, type, node, events)
		VALUES ($1, date_trunc('hour', $2::timestamptz, 'UTC'), $3, $4, $5, $8)
		` + upsertEventHour + `)
	INSERT INTO device_event_days AS d (imei, ownership, day, type, node, events)
	VALUES ($6, $7, date_trunc('day', $2::timestamptz, 'UTC'), $4, $5, $8)
	` + upsertDeviceDay

	// deleteEventSQL deletes the event ($1, $2) and takes it off its
	// counts (node $3) when it was there.
	deleteEventSQL = `WITH e AS (
		DELETE FROM events WHERE id = $1 AND time = $2
		RETURNING organization_id, time, partner_id, type, imei, ownership),
	hour AS (
		INSERT INTO event_hours AS h (organization_id, hour, partner_id, type, node, events)
		SELECT organization_id, date_trunc('hour', time, 'UTC'), coalesce(partner_id, 0), type, $3, -1 FROM e
		` + upsertEventHour + `)
	INSERT INTO device_event_days AS d (imei, ownership, day, type, node, events)
	SELECT imei, ownership, date_trunc('day', time, 'UTC'), type, $3, -1 FROM e
	` + upsertDeviceDay

	// countEventsSQL adds the events of the arrays $1 (organizations), $2
	// (times), $3 (partners, 0 for none), $4 (types), $5 (devices) and $6
	// (ownerships) to the counts of node $7.
	countEventsSQL = `WITH e AS (
		SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[], $4::text[], $5::text[], $6::bigint[])
		    AS e(org, at, partner, type, imei, ownership)),
	hour AS (
		INSERT INTO event_hours AS h (organization_id, hour, partner_id, type, node, events)
		SELECT org, date_trunc('hour', at, 'UTC'), partner, type, $7, count(*) FROM e GROUP BY 1, 2, 3, 4
		` + upsertEventHour + `)
	INSERT INTO device_event_days AS d (imei, ownership, day, type, node, events)
	SELECT imei, ownership, date_trunc('day', at, 'UTC'), type, $7, count(*) FROM e GROUP BY 1, 2, 3, 4
	` + upsertDeviceDay

	// dropEventCountsSQL deletes the counts of the hours and days from $1
	// to $2 (exclusive, whole UTC days), every organization's, device's
	// and node's.
	dropEventCountsSQL = `WITH hours AS (DELETE FROM event_hours WHERE hour >= $1 AND hour < $2)
	DELETE FROM device_event_days WHERE day >= $1 AND day < $2`
)

// countEvent queues the counts of e, just inserted: its answer nobody
// waits for, so it goes with the transaction's next statement.
func (t *tx) countEvent(e *store.Event) error {
	return t.queue(countEventSQL, e.OrganizationID, e.Time, e.PartnerID, e.Type, t.node, e.IMEI, e.Ownership, 1)
}

// countEventsArgs are the arguments of countEventsSQL for batch, counted
// under node.
func countEventsArgs(batch []*store.Event, node string) []any {
	n := len(batch)
	orgs, times, partners, types := make([]int64, n), make([]time.Time, n), make([]int64, n), make([]string, n)
	imeis, ownerships := make([]string, n), make([]int64, n)
	for i, e := range batch {
		orgs[i], times[i], partners[i], types[i] = e.OrganizationID, e.Time, e.PartnerID, e.Type
		imeis[i], ownerships[i] = e.IMEI, e.Ownership
	}
	return []any{orgs, times, partners, types, imeis, ownerships, node}
}

// BackfillHourlyCounts implements store.EventSet: the schema migration
// that made the counts (00018) counted the events stored before it, and
// every write since keeps them, so there is nothing to bring up to date.
func (s events) BackfillHourlyCounts() error { return nil }
