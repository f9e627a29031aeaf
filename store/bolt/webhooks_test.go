package bolt_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/storetest"
	bbolt "go.etcd.io/bbolt"
)

// webhookStore is a bbolt store for the tests of the webhook group's
// layout: the store, the bbolt file beneath it and the store's clock.
type webhookStore struct {
	t     *testing.T
	path  string
	db    *store.DB
	clock *storetest.Clock
}

// openWebhookStore opens a new store in the test's temporary directory.
func openWebhookStore(t *testing.T) *webhookStore {
	t.Helper()
	s := &webhookStore{t: t, path: filepath.Join(t.TempDir(), "fleetcam.db"),
		clock: storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	s.reopen()
	return s
}

// reopen closes the store, if open, and opens its file again.
func (s *webhookStore) reopen() {
	s.t.Helper()
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			s.t.Fatal(err)
		}
	}
	s.db = openStore(s.t, s.path, s.clock.Now)
}

// update runs fn in a store write transaction and fails the test on error.
func (s *webhookStore) update(fn func(tx *store.Tx) error) {
	s.t.Helper()
	if err := s.db.Update(s.t.Context(), store.Actor{Source: "test"}, fn); err != nil {
		s.t.Fatal(err)
	}
}

// view runs fn in a store read transaction and fails the test on error.
func (s *webhookStore) view(fn func(tx *store.Tx) error) {
	s.t.Helper()
	if err := s.db.View(s.t.Context(), fn); err != nil {
		s.t.Fatal(err)
	}
}

// raw runs fn in a write transaction of the bbolt file itself, as an
// earlier version of fleetcam wrote it.
func (s *webhookStore) raw(fn func(btx *bbolt.Tx) error) {
	s.t.Helper()
	if err := s.db.Engine().(*bolt.Engine).Bolt().Update(fn); err != nil {
		s.t.Fatal(err)
	}
}

// organization creates a partner with an organization and returns the
// organization's id.
func (s *webhookStore) organization() int64 {
	s.t.Helper()
	var id int64
	s.update(func(tx *store.Tx) error {
		p, err := tx.CreatePartner("P")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "O", nil)
		if err != nil {
			return err
		}
		id = o.ID
		return nil
	})
	return id
}

// Settings, subscriptions, secrets and endpoint states are where and as an
// earlier version wrote them: a record of that version is read, and what
// the store writes now is at the same keys.
func TestWebhookRecordsKeepTheirLayout(t *testing.T) {
	s := openWebhookStore(t)
	org := s.organization()
	const url = "https://r.example.com/e"
	s.raw(func(btx *bbolt.Tx) error {
		// Settings saved before notifyMediaAvailable was written read its default.
		if err := btx.Bucket([]byte("webhook_settings")).Put(be8(org),
			fmt.Appendf(nil, `{"organizationId":%d,"eventUrls":[%q],"subscribeForAlarmUpdates":true}`, org, url)); err != nil {
			return err
		}
		subs := btx.Bucket([]byte("webhook_subscriptions"))
		if err := subs.SetSequence(7); err != nil {
			return err
		}
		if err := subs.Put(key(org, int64(7)), fmt.Appendf(nil, `{"id":7,"organizationId":%d,"imei":"490154203237518",`+
			`"url":"https://r.example.com/g","type":"gps","createdAt":"2026-02-01T00:00:00Z","updatedAt":"2026-02-01T00:00:00Z"}`, org)); err != nil {
			return err
		}
		if err := btx.Bucket([]byte("webhook_secrets")).Put(be8(org),
			fmt.Appendf(nil, `{"organizationId":%d,"salt":"c2FsdA==","createdAt":"2026-02-01T00:00:00Z"}`, org)); err != nil {
			return err
		}
		return btx.Bucket([]byte("webhook_endpoints")).Put(key(org, url),
			fmt.Appendf(nil, `{"organizationId":%d,"url":%q,"failures":2,"lastError":"timeout"}`, org, url))
	})
	s.view(func(tx *store.Tx) error {
		ws, err := tx.WebhookSettings(org)
		if err != nil {
			return err
		}
		if len(ws.EventURLs) != 1 || ws.EventURLs[0] != url || !ws.NotifyMediaAvailable || !ws.SubscribeForAlarmUpdates {
			t.Errorf("settings %+v", ws)
		}
		subs, err := tx.WebhookSubscriptions(org, "490154203237518")
		if err != nil {
			return err
		}
		if len(subs) != 1 || subs[0].ID != 7 || subs[0].Type != store.WebhookTypeGPS {
			t.Errorf("subscriptions %+v", subs)
		}
		sec, err := tx.WebhookSecret(org)
		if err != nil {
			return err
		}
		if string(sec.Salt) != "salt" {
			t.Errorf("secret %+v", sec)
		}
		ep, err := tx.WebhookEndpoint(org, url)
		if err != nil {
			return err
		}
		if ep.Failures != 2 || ep.LastError != "timeout" || ep.URL != url {
			t.Errorf("endpoint %+v", ep)
		}
		return nil
	})

	// New records continue the sequence and land at the same keys.
	var sub *store.WebhookSubscription
	s.update(func(tx *store.Tx) error {
		var err error
		sub, err = tx.SaveWebhookSubscription(store.WebhookSubscription{OrganizationID: org, IMEI: "490154203237518",
			URL: "https://r.example.com/a", Type: store.WebhookTypeAlarms})
		if err != nil {
			return err
		}
		ep := &store.WebhookEndpoint{OrganizationID: org, URL: "https://r.example.com/a", Failures: 1}
		return tx.PutWebhookEndpoint(ep)
	})
	if sub.ID != 8 {
		t.Fatalf("new subscription has id %d, want 8 after the stored 7", sub.ID)
	}
	s.raw(func(btx *bbolt.Tx) error {
		for _, r := range []struct {
			bucket string
			key    []byte
		}{
			{"webhook_settings", be8(org)},
			{"webhook_subscriptions", key(org, int64(8))},
			{"webhook_secrets", be8(org)},
			{"webhook_endpoints", key(org, "https://r.example.com/a")},
		} {
			if btx.Bucket([]byte(r.bucket)).Get(r.key) == nil {
				t.Errorf("nothing in %s at %x", r.bucket, r.key)
			}
		}
		return nil
	})
}
