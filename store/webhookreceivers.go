package store

import "slices"

// The webhook receivers index answers, in one read, whether any URL of an
// organization receives webhooks of a type: through its settings or through
// a subscription of any of its devices. The ingest path asks it for every
// GPS message, so that an organization without GPS webhooks does not pay for
// an outbox message no URL would receive.
//
// Every write of settings or subscriptions rebuilds the organization's
// entry in the same transaction; migration 2 built the entries of a store
// written before the index existed.

// HasWebhookReceivers reports whether some URL of the organization receives
// webhooks of typ (a WebhookType* constant). A URL disabled by 410 Gone
// still counts: the dispatcher skips it when it routes. It is false when
// the engine cannot read the index.
func (tx *Tx) HasWebhookReceivers(orgID int64, typ string) bool {
	has, _ := tx.rec.WebhookReceivers().Has(orgID, typ)
	return has
}

// refreshWebhookReceivers rebuilds the organization's entry from its
// settings and subscriptions.
func (tx *Tx) refreshWebhookReceivers(orgID int64) error {
	s, err := tx.WebhookSettings(orgID)
	if err != nil {
		return err
	}
	subs, err := tx.WebhookSubscriptions(orgID, "")
	if err != nil {
		return err
	}
	var types []string
	add := func(typ string, urls int) {
		if urls > 0 && !slices.Contains(types, typ) {
			types = append(types, typ)
		}
	}
	add(WebhookTypeEvent, len(s.EventURLs))
	add(WebhookTypeGPS, len(s.GPSURLs))
	add(WebhookTypeAlarms, len(s.AlarmURLs))
	add(WebhookTypeActivation, len(s.ActivationURLs))
	add(WebhookTypeSystemMessages, len(s.SystemMessages))
	for _, sub := range subs {
		add(sub.Type, 1)
	}
	slices.Sort(types)
	return tx.rec.WebhookReceivers().Put(orgID, types)
}

// rebuildWebhookReceivers rebuilds every organization's entry, so that a
// store written before the index existed gets one (migration 2).
func rebuildWebhookReceivers(tx *Tx) error {
	orgs, err := tx.rec.WebhookReceivers().Organizations()
	if err != nil {
		return err
	}
	for _, id := range orgs {
		if err := tx.refreshWebhookReceivers(id); err != nil {
			return err
		}
	}
	return nil
}
