package postgres

import (
	"slices"

	"github.com/fleetcam/fleetcam/store"
	"github.com/jackc/pgx/v5"
)

// The webhook receivers index: table webhook_receivers, one row per
// organization and webhook type some URL of it receives. Has, which ingest
// asks for every GPS write, reads the organization's types once per
// transaction (memo.go), or with a group commit's read-ahead.

// WebhookReceivers implements store.WebhookRecords.
func (t *tx) WebhookReceivers() store.WebhookReceiverRecords { return webhookReceivers{t} }

type webhookReceivers struct{ t *tx }

// Has implements store.WebhookReceiverRecords.
func (r webhookReceivers) Has(orgID int64, typ string) (bool, error) {
	types, ok := r.t.memo.receivers[orgID]
	if !ok {
		err := r.t.pg.QueryRow(r.t.ctx, `SELECT `+receiverTypes+` FROM webhook_receivers WHERE organization_id = $1`,
			orgID).Scan(&types)
		if err != nil {
			return false, classify(err)
		}
		r.t.rememberReceivers(orgID, types)
	}
	return slices.Contains(types, typ), nil
}

// receiverTypes aggregates the types of an organization's receivers.
const receiverTypes = `coalesce(array_agg(type), '{}')`

// rememberReceivers keeps the webhook types organization org receives.
func (t *tx) rememberReceivers(org int64, types []string) {
	if t.memo.receivers == nil {
		t.memo.receivers = map[int64][]string{}
	}
	t.memo.receivers[org] = types
}

// Put implements store.WebhookReceiverRecords: the rows of the types no
// longer given deleted, those of the new ones inserted, in one statement.
func (r webhookReceivers) Put(orgID int64, types []string) error {
	if types == nil {
		types = []string{}
	}
	delete(r.t.memo.receivers, orgID)
	_, err := r.t.exec(`WITH gone AS (
			DELETE FROM webhook_receivers WHERE organization_id = $1 AND type <> ALL ($2::text[]))
		INSERT INTO webhook_receivers (organization_id, type) SELECT $1, unnest($2::text[])
		ON CONFLICT DO NOTHING`, orgID, types)
	return err
}

// Organizations implements store.WebhookReceiverRecords.
func (r webhookReceivers) Organizations() ([]int64, error) {
	return collect(r.t, pgx.RowTo[int64], `SELECT organization_id FROM webhook_settings
		UNION SELECT organization_id FROM webhook_subscriptions
		UNION SELECT organization_id FROM webhook_receivers
		ORDER BY organization_id`)
}
