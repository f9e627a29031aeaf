package postgres

import "github.com/fleetcam/fleetcam/store"

// The webhook receivers index: table webhook_receivers, one row per
// organization and webhook type some URL of it receives. Has, which ingest
// asks for every GPS write, is one lookup of the primary key, once per
// organization, type and transaction (memo.go).

// WebhookReceivers implements store.WebhookRecords.
func (t *tx) WebhookReceivers() store.WebhookReceiverRecords { return webhookReceivers{t} }

type webhookReceivers struct{ t *tx }

// Has implements store.WebhookReceiverRecords.
func (r webhookReceivers) Has(orgID int64, typ string) (bool, error) {
	k := receiverKey{orgID, typ}
	if has, ok := r.t.memo.receivers[k]; ok {
		return has, nil
	}
	var has bool
	err := r.t.pg.QueryRow(r.t.ctx, `SELECT EXISTS (SELECT FROM webhook_receivers WHERE organization_id = $1 AND type = $2)`,
		orgID, typ).Scan(&has)
	if err != nil {
		return false, classify(err)
	}
	if r.t.memo.receivers == nil {
		r.t.memo.receivers = map[receiverKey]bool{}
	}
	r.t.memo.receivers[k] = has
	return has, nil
}

// Put implements store.WebhookReceiverRecords: the rows of the types no
// longer given deleted, those of the new ones inserted, in one statement.
func (r webhookReceivers) Put(orgID int64, types []string) error {
	if types == nil {
		types = []string{}
	}
	for k := range r.t.memo.receivers {
		if k.org == orgID {
			delete(r.t.memo.receivers, k)
		}
	}
	_, err := r.t.exec(`WITH gone AS (
			DELETE FROM webhook_receivers WHERE organization_id = $1 AND type <> ALL ($2::text[]))
		INSERT INTO webhook_receivers (organization_id, type) SELECT $1, unnest($2::text[])
		ON CONFLICT DO NOTHING`, orgID, types)
	return err
}

// Organizations implements store.WebhookReceiverRecords.
func (r webhookReceivers) Organizations() ([]int64, error) {
	rows, err := r.t.pg.Query(r.t.ctx, `SELECT organization_id FROM webhook_settings
		UNION SELECT organization_id FROM webhook_subscriptions
		UNION SELECT organization_id FROM webhook_receivers
		ORDER BY organization_id`)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, classify(err)
		}
		out = append(out, id)
	}
	return out, classify(rows.Err())
}
