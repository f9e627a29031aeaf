package store_test

import (
	"testing"

	. "github.com/fleetcam/fleetcam/store"
)

func TestWebhookReceiversFollowSettingsAndSubscriptions(t *testing.T) {
	t.Parallel()
	f := newEventFixture(t)
	has := func(typ string) bool {
		var ok bool
		f.db.View(t.Context(), func(tx *Tx) error { ok = tx.HasWebhookReceivers(f.org.ID, typ); return nil })
		return ok
	}
	if has(WebhookTypeGPS) || has(WebhookTypeEvent) {
		t.Fatal("receivers before any webhook was saved")
	}
	f.update(func(tx *Tx) error {
		return tx.PutWebhookSettings(&WebhookSettings{OrganizationID: f.org.ID, EventURLs: []string{"https://r.example.com/e"}})
	})
	if !has(WebhookTypeEvent) || has(WebhookTypeGPS) {
		t.Fatalf("after event settings: event %v gps %v", has(WebhookTypeEvent), has(WebhookTypeGPS))
	}
	var sub *WebhookSubscription
	f.update(func(tx *Tx) (err error) {
		sub, err = tx.SaveWebhookSubscription(WebhookSubscription{OrganizationID: f.org.ID, IMEI: f.dev.IMEI,
			URL: "https://r.example.com/g", Type: WebhookTypeGPS})
		return err
	})
	if !has(WebhookTypeGPS) {
		t.Fatal("a device's gps subscription is not a gps receiver")
	}
	f.update(func(tx *Tx) error { return tx.DeleteWebhookSubscription(f.org.ID, sub.ID) })
	f.update(func(tx *Tx) error { return tx.PutWebhookSettings(&WebhookSettings{OrganizationID: f.org.ID}) })
	if has(WebhookTypeGPS) || has(WebhookTypeEvent) {
		t.Fatal("receivers left after every URL was removed")
	}
}
