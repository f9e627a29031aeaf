package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fleetcam/fleetcam/store"
)

// Webhook subscriptions and endpoint states (the settings and secrets,
// one record per organization, are keyed records: keyed.go):
//
//	webhook_subscriptions  org, id → WebhookSubscription (ids from the bucket's sequence)
//	webhook_endpoints      org, 0, url → WebhookEndpoint

// WebhookSubscriptions implements store.WebhookRecords.
func (t *tx) WebhookSubscriptions() store.WebhookSubscriptionRecords {
	return webhookSubscriptions{t}
}

type webhookSubscriptions struct{ t *tx }

// List implements store.WebhookSubscriptionRecords: the organization's
// range, filtered by device.
func (r webhookSubscriptions) List(orgID int64, imei string) ([]store.WebhookSubscription, error) {
	return listJSON(r.t.bucket(bucketWebhookSubs), itob(orgID), func(s *store.WebhookSubscription) bool {
		return imei == "" || s.IMEI == imei
	})
}

// Get implements store.WebhookSubscriptionRecords.
func (r webhookSubscriptions) Get(orgID, id int64) (*store.WebhookSubscription, error) {
	s, err := lookupJSON(r.t.bucket(bucketWebhookSubs), compositeKey(orgID, id), store.WebhookSubscription{})
	return s, store.NotFoundAs(err, "webhook %d", id)
}

// Insert implements store.WebhookSubscriptionRecords. A new id is no
// organization's yet: it is stored without Put's look for it.
func (r webhookSubscriptions) Insert(s *store.WebhookSubscription) error {
	if err := r.t.drawID(bucketWebhookSubs, &s.ID); err != nil {
		return err
	}
	if err := r.unique(s); err != nil {
		return err
	}
	return putJSON(r.t.bucket(bucketWebhookSubs), compositeKey(s.OrganizationID, s.ID), s)
}

// unique is store.ErrConflict when another subscription of s's
// organization has s's device, type and URL: an organization subscribes a
// URL to one type of one device's webhooks once. The organization's
// subscriptions are one range of keys.
func (r webhookSubscriptions) unique(s *store.WebhookSubscription) error {
	return eachJSON(r.t.bucket(bucketWebhookSubs), itob(s.OrganizationID), func(_ []byte, o *store.WebhookSubscription) (bool, error) {
		if o.ID != s.ID && o.IMEI == s.IMEI && o.Type == s.Type && o.URL == s.URL {
			return false, store.Conflict("organization %d already subscribes %s to %s webhooks of %q (subscription %d)",
				s.OrganizationID, s.URL, s.Type, s.IMEI, o.ID)
		}
		return true, nil
	})
}

// Put implements store.WebhookSubscriptionRecords. A subscription not
// stored under its organization and id is looked for under every other
// organization (keys end with the id), so that no id becomes two
// organizations'.
func (r webhookSubscriptions) Put(s *store.WebhookSubscription) error {
	b := r.t.bucket(bucketWebhookSubs)
	key := compositeKey(s.OrganizationID, s.ID)
	if err := r.unique(s); err != nil {
		return err
	}
	if b.Get(key) == nil {
		id := itob(s.ID)
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) == 16 && bytes.Equal(k[8:], id) {
				return store.NotFound("webhook %d", s.ID) // another organization's
			}
		}
	}
	return putJSON(b, key, s)
}

// Delete implements store.WebhookSubscriptionRecords.
func (r webhookSubscriptions) Delete(orgID, id int64) error {
	return r.t.bucket(bucketWebhookSubs).Delete(compositeKey(orgID, id))
}

// WebhookEndpoints implements store.WebhookRecords.
func (t *tx) WebhookEndpoints() store.WebhookEndpointRecords { return webhookEndpoints{t} }

type webhookEndpoints struct{ t *tx }

// endpointKey is the key of an organization's URL: org, 0, url.
func endpointKey(orgID int64, url string) []byte { return compositeKey(orgID, url) }

// Get implements store.WebhookEndpointRecords. The record is decoded over
// its organization and URL.
func (r webhookEndpoints) Get(orgID int64, url string) (*store.WebhookEndpoint, error) {
	raw := r.t.bucket(bucketWebhookEndpts).Get(endpointKey(orgID, url))
	if raw == nil {
		return nil, store.NotFound("webhook endpoint")
	}
	return decodeEndpoint(orgID, url, raw)
}

// decodeEndpoint decodes the state raw of organization orgID's URL over
// them.
func decodeEndpoint(orgID int64, url string, raw []byte) (*store.WebhookEndpoint, error) {
	e := &store.WebhookEndpoint{OrganizationID: orgID, URL: url}
	if err := json.Unmarshal(raw, e); err != nil {
		return nil, fmt.Errorf("store: decode webhook endpoint %s of organization %d: %w", url, orgID, err)
	}
	return e, nil
}

// Put implements store.WebhookEndpointRecords.
func (r webhookEndpoints) Put(e *store.WebhookEndpoint) error {
	return putJSON(r.t.bucket(bucketWebhookEndpts), endpointKey(e.OrganizationID, e.URL), e)
}

// List implements store.WebhookEndpointRecords: the organization's range.
func (r webhookEndpoints) List(orgID int64) ([]store.WebhookEndpoint, error) {
	return listJSON[store.WebhookEndpoint](r.t.bucket(bucketWebhookEndpts), itob(orgID), nil)
}
