package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// Messages of the webhook outbox: table messages, partitioned by the month
// of the fact, its sequence an identity.
//
// The dispatcher reads the messages after its cursor, in sequence order,
// and moves the cursor past what it read; a message that became visible
// later with a lower sequence would be skipped for good. An identity alone
// allows that: transaction A draws 10, transaction B draws 11 and commits,
// the dispatcher reads 11 and moves past it, then A commits 10. Running
// the writes SERIALIZABLE does not prevent it either, since A and B touch
// no common row and the order SERIALIZABLE guarantees (B, dispatcher, A)
// is valid for it, just not in sequence order. So appenders take the
// transaction advisory lock messageSeqLockID before they draw a sequence
// and hold it until they end: a sequence is drawn only once every
// transaction that drew a lower one has committed or rolled back, and
// since PostgreSQL makes a commit visible before it releases the
// transaction's locks, a snapshot that sees a sequence sees every
// committed lower one. Appenders of messages wait for one another; nothing
// else does (readers, pruning and every other writer take no such lock).
//
// A counter row updated in the appending transaction would serialise
// appenders as well, but a SERIALIZABLE transaction that updates a row a
// concurrent one updated and committed fails and runs again: under
// concurrent ingest the appenders would mostly fail and retry where with
// the advisory lock they only wait.

// messageSeqLockID is the key of the transaction advisory lock appenders of
// messages hold from drawing their sequence to their end ("messages" in ASCII).
const messageSeqLockID = 0x6d65737361676573

// Messages implements store.WebhookRecords.
func (t *tx) Messages() store.MessageRecords { return messages{t} }

type messages struct{ t *tx }

// messageFact is a message's fact as its fact column holds it: the one
// fact field set, under its name in store.Message.
type messageFact struct {
	Event      *store.EventFact      `json:"event,omitempty"`
	GPS        []store.GPSPoint      `json:"gps,omitempty"`
	Activation *store.ActivationFact `json:"activation,omitempty"`
	Presence   *store.PresenceFact   `json:"presence,omitempty"`
	Removed    *store.RemovedFact    `json:"removed,omitempty"`
	Alarm      *store.AlarmFact      `json:"alarm,omitempty"`
	AuxCamera  *store.AuxCameraFact  `json:"auxCamera,omitempty"`
	AuxSearch  *store.AuxSearchFact  `json:"auxSearch,omitempty"`
	Privacy    *store.PrivacyFact    `json:"privacy,omitempty"`
}

// Append implements store.MessageRecords: the lock and the row in one
// statement (the lock is taken again, at no cost, by a transaction that
// already holds it).
func (m messages) Append(msg *store.Message) error {
	if b := m.t.bulk; b != nil {
		return b.appendMessage(msg)
	}
	args, err := messageArgs(msg)
	if err != nil {
		return err
	}
	const insert = `INSERT INTO messages (` + messageRowColumns + `)
		SELECT $2, $3, $4, $5::bigint, $6, $7::timestamptz, $8::jsonb, $9::json FROM serial`
	if p := groupPipe(m.t); p != nil {
		// Held back to the commit, so that the lock is held only while
		// the transaction commits; the sequence is drawn then. The
		// messages of a group commit go there in one statement
		// (pipemerge.go).
		return p.queueLastMerged(&argsRow{of: messageKind, args: args}, `WITH serial AS MATERIALIZED (SELECT pg_advisory_xact_lock($1)) `+insert,
			append([]any{messageSeqLockID}, args...)...)
	}
	return insertInOrder(m.t, messageSeqLockID, insert+` RETURNING seq`, &msg.Seq, args...)
}

// messageRowColumns are the columns of a message's row but its sequence,
// in messageArgs' order.
const messageRowColumns = `kind, sub_type, organization_id, partner_id, imei, occurred_at, fact, payload`

// appendMessagesSQL appends the messages of the arrays $2… under the lock
// $1, in the arrays' order, which is the order of their sequence numbers.
const appendMessagesSQL = `WITH serial AS MATERIALIZED (SELECT pg_advisory_xact_lock($1))
	INSERT INTO messages (` + messageRowColumns + `)
	SELECT m.kind, m.sub_type, m.org, m.partner, m.imei, m.at, m.fact, m.payload
	  FROM serial, unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::timestamptz[], $8::jsonb[],
		$9::json[]) WITH ORDINALITY AS m (kind, sub_type, org, partner, imei, at, fact, payload, n)
	 ORDER BY m.n`

// messageKind merges the appends of messages (messageArgs).
var messageKind = &mergeKind{sql: appendMessagesSQL, args: func(all []mergeable) []any {
	return []any{messageSeqLockID, column[string](all, 0), column[string](all, 1), column[int64](all, 2),
		column[pgtype.Int8](all, 3), column[string](all, 4), column[pgtype.Timestamptz](all, 5), jsonColumn(all, 6),
		jsonColumn(all, 7)}
}}

// messageArgs are the values of messageRowColumns for msg: its fact, the
// one fact field set, as the fact column holds it.
func messageArgs(msg *store.Message) ([]any, error) {
	f := messageFact{Event: msg.Event, GPS: msg.GPS, Activation: msg.Activation, Presence: msg.Presence,
		Removed: msg.Removed, Alarm: msg.Alarm, AuxCamera: msg.AuxCamera, AuxSearch: msg.AuxSearch, Privacy: msg.Privacy}
	fact, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("store: encode message fact: %w", err)
	}
	if string(fact) == "{}" {
		fact = nil
	}
	return []any{msg.Kind, msg.SubType, msg.OrganizationID, nullID(msg.PartnerID), msg.IMEI,
		timeBound(msg.Time), jsonbParam(fact), jsonbParam(msg.Payload)}, nil
}

// insertInOrder runs insert, an INSERT … SELECT … FROM serial that returns
// the identity it drew, into id, once the transaction holds the advisory
// lock lockID, which it keeps to its end: the identities drawn under one
// lock are in commit order (see above). The lock is $1 of insert, its
// args from $2.
func insertInOrder(t *tx, lockID int64, insert string, id *int64, args ...any) error {
	err := t.pg.QueryRow(t.ctx, `WITH serial AS MATERIALIZED (SELECT pg_advisory_xact_lock($1)) `+insert,
		append([]any{lockID}, args...)...).Scan(id)
	return classify(err)
}

// After implements store.MessageRecords: one range of the sequences.
func (m messages) After(seq int64, limit int) ([]store.Message, error) {
	m.flushLast()
	rows, err := m.t.pg.Query(m.t.ctx, `SELECT seq, kind, sub_type, organization_id, partner_id, imei, occurred_at, fact, payload
		FROM messages WHERE seq > $1 ORDER BY seq LIMIT $2`, seq, limitParam(limit))
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []store.Message
	for rows.Next() {
		var msg store.Message
		var at pgtype.Timestamptz
		var fact, payload []byte
		if err := rows.Scan(&msg.Seq, &msg.Kind, &msg.SubType, &msg.OrganizationID, zeroID{&msg.PartnerID},
			&msg.IMEI, &at, &fact, &payload); err != nil {
			return nil, classify(err)
		}
		msg.Time = at.Time.UTC()
		if fact != nil {
			var f messageFact
			if err := json.Unmarshal(fact, &f); err != nil {
				return nil, fmt.Errorf("store: decode the fact of message %d: %w", msg.Seq, err)
			}
			msg.Event, msg.GPS, msg.Activation, msg.Presence, msg.Removed = f.Event, f.GPS, f.Activation, f.Presence, f.Removed
			msg.Alarm, msg.AuxCamera, msg.AuxSearch, msg.Privacy = f.Alarm, f.AuxCamera, f.AuxSearch, f.Privacy
		}
		if payload != nil {
			msg.Payload = payload
		}
		out = append(out, msg)
	}
	return out, classify(rows.Err())
}

// DeleteThrough implements store.MessageRecords: the oldest limit
// sequences at or below seq, and one more to tell whether any is left.
func (m messages) DeleteThrough(seq int64, limit int) (n int, more bool, err error) {
	m.flushLast()
	if limit <= 0 {
		tag, err := m.t.exec(`DELETE FROM messages WHERE seq <= $1`, seq)
		return int(tag.RowsAffected()), false, err
	}
	err = m.t.pg.QueryRow(m.t.ctx, `WITH doomed AS (
			SELECT seq, occurred_at FROM messages WHERE seq <= $1 ORDER BY seq LIMIT $2 + 1),
		gone AS (
			DELETE FROM messages m USING (SELECT * FROM doomed ORDER BY seq LIMIT $2) d
			WHERE m.seq = d.seq AND m.occurred_at = d.occurred_at RETURNING 1)
		SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM doomed) > $2`, seq, limit).Scan(&n, &more)
	return n, more, classify(err)
}

// flushLast sends the messages this transaction appended with its next
// statement, for a statement that reads them.
func (m messages) flushLast() {
	if p := pipeOf(m.t); p != nil {
		p.flushLast()
	}
}
