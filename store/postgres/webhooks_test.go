package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// webhookTime is a time with microseconds, which timestamptz keeps.
var webhookTime = time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)

// webhookFixture is what seedWebhooks inserts: a partner and three of its
// organizations.
type webhookFixture struct {
	partner         int64
	org, org2, org3 int64
}

// webhookEngine returns an engine on a new database with the schema
// applied, the partitions of the months around webhookTime, and the
// directory rows of seedWebhooks.
func webhookEngine(t *testing.T) (*Engine, webhookFixture) {
	t.Helper()
	e := openPrepared(t)
	ensureAround(t, e, webhookTime, "audit_log", "messages", "webhook_deliveries")
	return e, seedWebhooks(t, e)
}

// seedWebhooks inserts the directory rows the webhook records refer to: a
// partner and three organizations.
func seedWebhooks(t *testing.T, e *Engine) webhookFixture {
	t.Helper()
	s := seeder{t, e, webhookTime}
	f := webhookFixture{partner: s.partner("P").ID}
	for _, id := range []*int64{&f.org, &f.org2, &f.org3} {
		*id = s.organization(store.Organization{Name: "O", PartnerID: f.partner, Retention: store.Retention{PurgeDays: 31}}).ID
	}
	return f
}

// pendingDelivery is a new delivery as the store enqueues it.
func pendingDelivery(org int64, url, imei string, created time.Time) *store.Delivery {
	return &store.Delivery{OrganizationID: org, URL: url, IMEI: imei, MessageSeq: 1, WebhookID: "msg_1",
		Type: store.WebhookTypeEvent, MessageTime: created, CreatedAt: created, Status: store.DeliveryPending,
		NextAttemptAt: created, Body: []byte(`{}`)}
}

// TestDeliveryBodyByteForByte: a delivery's body is kept as it was
// rendered, its spacing too (json, not jsonb).
func TestDeliveryBodyByteForByte(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	body := `{"type": "event", "data": {"z": 1, "a": [1.50, 2]}}`
	d := pendingDelivery(f.org, "https://r.example.com/e", "", webhookTime)
	d.Body = []byte(body)
	write(t, e, func(t *tx) error { return t.Deliveries().Insert(d) })
	read(t, e, func(t *tx) error {
		got, err := t.Deliveries().Get(d.ID)
		if err == nil && string(got.Body) != body {
			return fmt.Errorf("body %s; want it byte for byte %s", got.Body, body)
		}
		return err
	})
}

// TestWebhookSettingsDefaults: a row that leaves columns to their
// defaults reads as the default settings (the engine suite,
// store/enginetest, tests the settings stored whole).
func TestWebhookSettingsDefaults(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO webhook_settings (organization_id) VALUES ($1)`, f.org3); err != nil {
		t.Fatal(err)
	}
	read(t, e, func(t2 *tx) error {
		got, err := t2.WebhookSettings().Get(f.org3)
		if err != nil || !reflect.DeepEqual(got, store.DefaultWebhookSettings(f.org3)) {
			t.Errorf("settings of defaults = %+v, %v; want %+v", got, err, store.DefaultWebhookSettings(f.org3))
		}
		return nil
	})
}

// TestWebhookSubscriptionConflict: the schema holds one subscription of
// an organization's device, type and URL (the store looks for it first;
// the engine suite tests the subscriptions themselves).
func TestWebhookSubscriptionConflict(t *testing.T) {
	t.Parallel()
	e, f := webhookEngine(t)
	s := store.WebhookSubscription{OrganizationID: f.org, IMEI: "490154203237518", URL: "https://a.example.com",
		Type: store.WebhookTypeEvent, CreatedAt: webhookTime, UpdatedAt: webhookTime}
	write(t, e, func(t2 *tx) error { return t2.WebhookSubscriptions().Insert(&s) })
	err := e.update(context.Background(), func(t2 *tx) error {
		dup := s
		return t2.WebhookSubscriptions().Insert(&dup)
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("a duplicate subscription: %v; want store.ErrConflict", err)
	}
	// Another organization's subscription of the same is no conflict.
	other := s
	other.OrganizationID = f.org2
	write(t, e, func(t2 *tx) error { return t2.WebhookSubscriptions().Insert(&other) })
}
