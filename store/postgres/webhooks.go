package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// Webhook configuration: tables webhook_settings (one row per
// organization), webhook_subscriptions, webhook_secrets (one row per
// organization) and webhook_endpoints (one row per organization and URL).

// The webhook group of the records, in this file and in audit.go,
// messages.go, outbox.go, deliveries.go and webhookreceivers.go.
var _ store.WebhookRecords = (*tx)(nil)

// WebhookSubscriptions implements store.WebhookRecords.
func (t *tx) WebhookSubscriptions() store.WebhookSubscriptionRecords {
	return webhookSubscriptions{t}
}

type webhookSubscriptions struct{ t *tx }

const subscriptionColumns = `id, organization_id, imei, url, type, notify_media_available,
	subscribe_for_alarm_updates, system, created_at, updated_at`

// subscriptionRow is a subscription as its row, its system message types
// until they are decoded.
type subscriptionRow struct {
	s      store.WebhookSubscription
	system []byte
}

func (r *subscriptionRow) fields() []any {
	s := &r.s
	return []any{&s.ID, &s.OrganizationID, &s.IMEI, &s.URL, &s.Type, &s.NotifyMediaAvailable,
		&s.SubscribeForAlarmUpdates, &r.system, zeroTime{&s.CreatedAt}, zeroTime{&s.UpdatedAt}}
}

// record decodes the system message types into the subscription.
func (r *subscriptionRow) record() (store.WebhookSubscription, error) {
	if err := json.Unmarshal(r.system, &r.s.System); err != nil {
		return store.WebhookSubscription{}, fmt.Errorf("store: decode the system message types of webhook %d: %w", r.s.ID, err)
	}
	return r.s, nil
}

// List implements store.WebhookSubscriptionRecords. A transaction reads an
// organization's subscriptions once, and answers those of each of its
// devices from them (the webhook fan-out routes messages of many).
func (r webhookSubscriptions) List(orgID int64, imei string) ([]store.WebhookSubscription, error) {
	all, ok := r.t.memo.subscriptions[orgID]
	if !ok {
		var err error
		if all, err = r.read(orgID); err != nil {
			return nil, err
		}
		if r.t.memo.subscriptions == nil {
			r.t.memo.subscriptions = map[int64][]store.WebhookSubscription{}
		}
		r.t.memo.subscriptions[orgID] = all
	}
	var out []store.WebhookSubscription
	for _, s := range all {
		if imei == "" || s.IMEI == imei {
			out = append(out, s)
		}
	}
	return out, nil
}

// read reads the subscriptions of organization orgID, in id order.
func (r webhookSubscriptions) read(orgID int64) ([]store.WebhookSubscription, error) {
	return collect(r.t, scanValue(scanRecord[store.WebhookSubscription, subscriptionRow]),
		`SELECT `+subscriptionColumns+` FROM webhook_subscriptions WHERE organization_id = $1 ORDER BY id`, orgID)
}

// Get implements store.WebhookSubscriptionRecords.
func (r webhookSubscriptions) Get(orgID, id int64) (*store.WebhookSubscription, error) {
	row, err := getRecord(r.t, `SELECT `+subscriptionColumns+` FROM webhook_subscriptions
		WHERE organization_id = $1 AND id = $2`, (*subscriptionRow).fields, orgID, id)
	if err != nil {
		return nil, store.NotFoundAs(err, "webhook %d", id)
	}
	s, err := row.record()
	return &s, err
}

// Insert implements store.WebhookSubscriptionRecords. A second
// subscription of the same device, type and URL is store.ErrConflict.
func (r webhookSubscriptions) Insert(s *store.WebhookSubscription) error {
	delete(r.t.memo.subscriptions, s.OrganizationID)
	system, err := json.Marshal(s.System)
	if err != nil {
		return fmt.Errorf("store: encode system message types: %w", err)
	}
	err = r.t.pg.QueryRow(r.t.ctx, `INSERT INTO webhook_subscriptions (organization_id, imei, url, type,
			notify_media_available, subscribe_for_alarm_updates, system, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
		s.OrganizationID, s.IMEI, s.URL, s.Type, s.NotifyMediaAvailable, s.SubscribeForAlarmUpdates,
		string(system), nullTime(s.CreatedAt), nullTime(s.UpdatedAt)).Scan(&s.ID)
	return classify(err)
}

// Put implements store.WebhookSubscriptionRecords: subscription s.ID of
// s.OrganizationID replaced, or stored under that id when there is none;
// store.ErrNotFound when the id is another organization's.
func (r webhookSubscriptions) Put(s *store.WebhookSubscription) error {
	delete(r.t.memo.subscriptions, s.OrganizationID)
	system, err := json.Marshal(s.System)
	if err != nil {
		return fmt.Errorf("store: encode system message types: %w", err)
	}
	err = r.t.pg.QueryRow(r.t.ctx, `INSERT INTO webhook_subscriptions (`+subscriptionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (id) DO UPDATE SET imei = EXCLUDED.imei, url = EXCLUDED.url, type = EXCLUDED.type,
			notify_media_available = EXCLUDED.notify_media_available,
			subscribe_for_alarm_updates = EXCLUDED.subscribe_for_alarm_updates, system = EXCLUDED.system,
			created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at
		WHERE webhook_subscriptions.organization_id = EXCLUDED.organization_id
		RETURNING id`,
		s.ID, s.OrganizationID, s.IMEI, s.URL, s.Type, s.NotifyMediaAvailable, s.SubscribeForAlarmUpdates,
		string(system), nullTime(s.CreatedAt), nullTime(s.UpdatedAt)).Scan(&s.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		// The id is another organization's.
		return store.NotFound("webhook %d", s.ID)
	}
	return classify(err)
}

// Delete implements store.WebhookSubscriptionRecords.
func (r webhookSubscriptions) Delete(orgID, id int64) error {
	delete(r.t.memo.subscriptions, orgID)
	_, err := r.t.exec(`DELETE FROM webhook_subscriptions WHERE organization_id = $1 AND id = $2`, orgID, id)
	return err
}

// nonNilBytes is b as a bytea parameter that is never NULL.
func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// WebhookEndpoints implements store.WebhookRecords.
func (t *tx) WebhookEndpoints() store.WebhookEndpointRecords { return webhookEndpoints{t} }

type webhookEndpoints struct{ t *tx }

const endpointColumns = `organization_id, url, disabled, disabled_reason, disabled_at, failures, blocked_until,
	last_success_at, last_failure_at, last_error`

func endpointFields(e *store.WebhookEndpoint) []any {
	return []any{&e.OrganizationID, &e.URL, &e.Disabled, &e.DisabledReason, zeroTime{&e.DisabledAt}, &e.Failures,
		zeroTime{&e.BlockedUntil}, zeroTime{&e.LastSuccessAt}, zeroTime{&e.LastFailureAt}, &e.LastError}
}

// Get implements store.WebhookEndpointRecords.
func (r webhookEndpoints) Get(orgID int64, url string) (*store.WebhookEndpoint, error) {
	var e store.WebhookEndpoint
	err := getMemo(r.t, tableWebhookEndpoints, endpointKey(orgID, url),
		`SELECT `+endpointColumns+` FROM webhook_endpoints WHERE organization_id = $1 AND url = $2`,
		endpointFields(&e), orgID, url)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("webhook endpoint")
	}
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// endpointKey is the memo's key of an organization's endpoint url.
func endpointKey(orgID int64, url string) string { return strconv.FormatInt(orgID, 10) + " " + url }

// Put implements store.WebhookEndpointRecords.
func (r webhookEndpoints) Put(e *store.WebhookEndpoint) error {
	r.t.forget(tableWebhookEndpoints, endpointKey(e.OrganizationID, e.URL))
	_, err := r.t.exec(`INSERT INTO webhook_endpoints (`+endpointColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (organization_id, url) DO UPDATE SET disabled = EXCLUDED.disabled,
			disabled_reason = EXCLUDED.disabled_reason, disabled_at = EXCLUDED.disabled_at,
			failures = EXCLUDED.failures, blocked_until = EXCLUDED.blocked_until,
			last_success_at = EXCLUDED.last_success_at, last_failure_at = EXCLUDED.last_failure_at,
			last_error = EXCLUDED.last_error`,
		e.OrganizationID, e.URL, e.Disabled, textParam(e.DisabledReason), nullTime(e.DisabledAt), e.Failures,
		nullTime(e.BlockedUntil), nullTime(e.LastSuccessAt), nullTime(e.LastFailureAt), textParam(e.LastError))
	return err
}

// List implements store.WebhookEndpointRecords: URLs in byte order, as
// the column's collation sorts them.
func (r webhookEndpoints) List(orgID int64) ([]store.WebhookEndpoint, error) {
	return collect(r.t, scanFields(endpointFields), `SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE organization_id = $1 ORDER BY url`, orgID)
}
