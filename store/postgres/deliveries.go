package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// Webhook deliveries: table webhook_deliveries, partitioned by the month of
// creation, its id an identity. The queue is the partial index
// webhook_deliveries_queue over the pending ones, so a delivery leaves the
// queue by its status alone, in the statement that stores it.
//
// Delivery ids, like message sequences (messages.go), are drawn under a
// transaction advisory lock held to the end of the inserting transaction,
// so that they are in commit order: a walk in id order (the retention
// purge, a reader of the newest) never passes an id that commits later.
//
// The attempts a delivery remembers (at most 20) are a jsonb array in its
// row rather than a child table: they are read and written whole with the
// delivery, by its id, and never queried on their own; a child table would
// turn each recorded attempt into a delete and up to 20 inserts.

// deliveryIDLockID is the key of the transaction advisory lock inserters of
// deliveries hold from drawing their id to their end ("delivers" in ASCII).
const deliveryIDLockID = 0x64656c6976657273

// Deliveries implements store.WebhookRecords.
func (t *tx) Deliveries() store.DeliveryRecords { return deliveries{t} }

type deliveries struct{ t *tx }

const deliveryColumns = `id, organization_id, url, message_seq, webhook_id, type, message_type, imei,
	message_time, created_at, status, attempts, next_attempt_at, first_attempt_at, last_attempt_at,
	last_status_code, last_error, finished_at, redelivery_of, attempt_log, body`

// deliveryRow is a delivery as its row: the scan destinations, and its
// attempt log until it is decoded.
type deliveryRow struct {
	d   store.Delivery
	log []byte
}

func (r *deliveryRow) fields() []any {
	d := &r.d
	return []any{&d.ID, &d.OrganizationID, &d.URL, &d.MessageSeq, &d.WebhookID, &d.Type, &d.MessageType, &d.IMEI,
		zeroTime{&d.MessageTime}, zeroTime{&d.CreatedAt}, &d.Status, &d.Attempts, zeroTime{&d.NextAttemptAt},
		zeroTime{&d.FirstAttemptAt}, zeroTime{&d.LastAttemptAt}, &d.LastStatusCode, &d.LastError,
		zeroTime{&d.FinishedAt}, zeroID{&d.RedeliveryOf}, &r.log, &d.Body}
}

// record decodes the attempt log into the delivery.
func (r *deliveryRow) record() (store.Delivery, error) {
	if r.log != nil {
		if err := json.Unmarshal(r.log, &r.d.Log); err != nil {
			return store.Delivery{}, fmt.Errorf("store: decode the attempts of delivery %d: %w", r.d.ID, err)
		}
	}
	return r.d, nil
}

// values are the parameters of d's columns after id, in deliveryColumns'
// order.
func deliveryValues(d *store.Delivery) ([]any, error) {
	var log []byte
	if len(d.Log) > 0 {
		var err error
		if log, err = json.Marshal(d.Log); err != nil {
			return nil, fmt.Errorf("store: encode the attempts of delivery %d: %w", d.ID, err)
		}
	}
	return []any{d.OrganizationID, d.URL, d.MessageSeq, d.WebhookID, d.Type, d.MessageType, d.IMEI,
		nullTime(d.MessageTime), timeBound(d.CreatedAt), d.Status, d.Attempts, nullTime(d.NextAttemptAt),
		nullTime(d.FirstAttemptAt), nullTime(d.LastAttemptAt), d.LastStatusCode, textParam(d.LastError),
		nullTime(d.FinishedAt), nullID(d.RedeliveryOf), jsonbParam(log), jsonParam(d.Body)}, nil
}

// Insert implements store.DeliveryRecords: the lock and the row in one
// statement.
func (r deliveries) Insert(d *store.Delivery) error {
	values, err := deliveryValues(d)
	if err != nil {
		return err
	}
	return insertInOrder(r.t, deliveryIDLockID, `
		INSERT INTO webhook_deliveries (organization_id, url, message_seq, webhook_id, type, message_type, imei,
			message_time, created_at, status, attempts, next_attempt_at, first_attempt_at, last_attempt_at,
			last_status_code, last_error, finished_at, redelivery_of, attempt_log, body)
		SELECT $2::bigint, $3::text, $4::bigint, $5::text, $6::text, $7::text, $8::text, $9::timestamptz,
			$10::timestamptz, $11::text, $12::integer, $13::timestamptz, $14::timestamptz, $15::timestamptz,
			$16::integer, $17::text, $18::timestamptz, $19::bigint, $20::jsonb, $21::json
		FROM serial RETURNING id`, &d.ID, values...)
}

// Get implements store.DeliveryRecords.
func (r deliveries) Get(id int64) (*store.Delivery, error) {
	row, err := getRecord(r.t, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = $1`, (*deliveryRow).fields, id)
	if err != nil {
		return nil, store.NotFoundAs(err, "delivery %d", id)
	}
	d, err := row.record()
	return &d, err
}

// Put implements store.DeliveryRecords: the row of d.ID updated (moved to
// another month's partition should its creation time change); stored with
// that id if there is none.
func (r deliveries) Put(d *store.Delivery) error {
	values, err := deliveryValues(d)
	if err != nil {
		return err
	}
	args := append([]any{d.ID}, values...)
	tag, err := r.t.exec(`UPDATE webhook_deliveries SET organization_id = $2, url = $3, message_seq = $4,
			webhook_id = $5, type = $6, message_type = $7, imei = $8, message_time = $9, created_at = $10,
			status = $11, attempts = $12, next_attempt_at = $13, first_attempt_at = $14, last_attempt_at = $15,
			last_status_code = $16, last_error = $17, finished_at = $18, redelivery_of = $19,
			attempt_log = $20, body = $21
		WHERE id = $1`, args...)
	if err != nil || tag.RowsAffected() > 0 {
		return err
	}
	_, err = r.t.exec(`INSERT INTO webhook_deliveries (`+deliveryColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`, args...)
	return err
}

// Pending implements store.DeliveryRecords: one range of the queue's index.
// It is a plain SELECT of the table in the queue's order, to which a
// dispatcher sharing the queue with others would add FOR UPDATE SKIP
// LOCKED to claim what it sends.
func (r deliveries) Pending(orgID int64, url string) ([]store.QueueEntry, error) {
	var w where
	w.and("status = 'pending'")
	if orgID != 0 {
		w.and("organization_id = " + w.arg(orgID))
		if url != "" {
			w.and("url = " + w.arg(url))
		}
	}
	return collect(r.t, scanFields(func(q *store.QueueEntry) []any {
		return []any{&q.OrganizationID, &q.URL, &q.IMEI, &q.DeliveryID, zeroTime{&q.NextAttemptAt}, zeroTime{&q.CreatedAt}}
	}), `SELECT organization_id, url, imei, id, next_attempt_at, created_at
		FROM webhook_deliveries`+w.String()+` ORDER BY organization_id, url, imei, id`, w.args...)
}

// List implements store.DeliveryRecords: the filter as WHERE clauses,
// newest first. The devices of a guest partner's view are a parameter of
// two arrays, each IMEI with the time it joined.
func (r deliveries) List(orgID int64, f store.DeliveryFilter, p store.Page) ([]store.Delivery, int, error) {
	var w where
	w.and("organization_id = " + w.arg(orgID))
	if f.Status != "" {
		w.and("status = " + w.arg(f.Status))
	}
	if f.URL != "" {
		w.and("url = " + w.arg(f.URL))
	}
	if f.IMEI != "" {
		w.and("imei = " + w.arg(f.IMEI))
	}
	if f.Type != "" {
		w.and("type = " + w.arg(f.Type))
	}
	if f.Devices != nil {
		imeis := make([]string, 0, len(f.Devices))
		since := make([]pgtype.Timestamptz, 0, len(f.Devices))
		for imei, t := range f.Devices {
			// NULL since: every message time, even none, is at or after it.
			imeis, since = append(imeis, imei), append(since, pgtype.Timestamptz{Time: ceilMicro(t), Valid: !t.IsZero()})
		}
		w.and(`imei <> '' AND EXISTS (SELECT FROM unnest(` + w.arg(imeis) + `::text[], ` + w.arg(since) +
			`::timestamptz[]) AS v(imei, since)
			WHERE v.imei = webhook_deliveries.imei AND (v.since IS NULL OR message_time >= v.since))`)
	}
	rows, total, err := listPage(r.t, deliveryColumns, "webhook_deliveries", &w, "id DESC", p, (*deliveryRow).fields)
	if err != nil {
		return nil, 0, err
	}
	out := make([]store.Delivery, len(rows))
	for i := range rows {
		if out[i], err = rows[i].record(); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// PurgeFinished implements store.DeliveryRecords: in id order from the
// resume position, the deliveries no longer pending that finished before
// their organization's cutoff, among those created before the latest
// cutoff (the partitions of later months are not looked at).
func (r deliveries) PurgeFinished(cut store.Cutoffs, from []byte, limit int) (int, []byte, error) {
	return purgeByCutoffs(r.t, `WITH doomed AS (
			SELECT d.id, d.created_at FROM webhook_deliveries d
			JOIN unnest($1::bigint[], $2::timestamptz[]) AS c(organization_id, cutoff) USING (organization_id)
			WHERE d.id >= $3 AND d.created_at < $4 AND d.status <> 'pending'
				AND coalesce(d.finished_at, '-infinity') < c.cutoff
			ORDER BY d.id LIMIT $5)
		DELETE FROM webhook_deliveries d USING doomed WHERE d.id = doomed.id AND d.created_at = doomed.created_at
		RETURNING d.id`, cut, from, limit)
}
