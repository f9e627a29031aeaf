package bolt_test

import (
	"testing"

	"github.com/fleetcam/fleetcam/store"
	bbolt "go.etcd.io/bbolt"
)

// The receivers index holds, per organization, its types sorted and
// comma-separated; a store written before the index existed gets it when
// it opens (migration 2), and a stale entry is corrected.
func TestWebhookReceiversRebuiltWhenTheStoreOpens(t *testing.T) {
	s := openWebhookStore(t)
	org, other := s.organization(), s.organization()
	s.update(func(tx *store.Tx) error {
		if err := tx.PutWebhookSettings(&store.WebhookSettings{OrganizationID: org, EventURLs: []string{"https://r.example.com/e"}}); err != nil {
			return err
		}
		_, err := tx.SaveWebhookSubscription(store.WebhookSubscription{OrganizationID: org, IMEI: "490154203237518",
			URL: "https://r.example.com/g", Type: store.WebhookTypeGPS})
		return err
	})
	entry := func(org int64) string {
		var v []byte
		s.raw(func(btx *bbolt.Tx) error {
			v = append(v, btx.Bucket([]byte("webhook_receivers")).Get(be8(org))...)
			return nil
		})
		return string(v)
	}
	if e := entry(org); e != "event,gps" {
		t.Fatalf("entry %q, want event,gps", e)
	}
	has := func(org int64, typ string) (ok bool) {
		s.view(func(tx *store.Tx) error { ok = tx.HasWebhookReceivers(org, typ); return nil })
		return ok
	}

	// As before the index: no entry for org, a stale one for other, and no
	// migration recorded.
	s.raw(func(btx *bbolt.Tx) error {
		r := btx.Bucket([]byte("webhook_receivers"))
		if err := r.Delete(be8(org)); err != nil {
			return err
		}
		if err := r.Put(be8(other), []byte("alarms")); err != nil {
			return err
		}
		return btx.Bucket([]byte("meta")).Delete([]byte("schema_version"))
	})
	if has(org, store.WebhookTypeGPS) || !has(other, store.WebhookTypeAlarms) {
		t.Fatal("the index is not as the test left it")
	}
	s.reopen()
	if !has(org, store.WebhookTypeGPS) || !has(org, store.WebhookTypeEvent) || has(org, store.WebhookTypeAlarms) {
		t.Error("index of the organization not rebuilt when the store opened")
	}
	if e := entry(other); e != "" {
		t.Errorf("stale entry %q of an organization without webhooks left", e)
	}
}
