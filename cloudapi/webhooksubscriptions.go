package cloudapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Device webhook subscriptions: GET lists, POST adds (or updates the
// subscription of the same device, type and URL), PUT replaces the whole
// list, DELETE removes one. A partner in an organization shared with other
// partners sees and replaces only the subscriptions of its own devices.

// subscriptionConfigBody is a subscription's config; which members apply
// depends on the type.
type subscriptionConfigBody struct {
	systemConfigBody
	NotifyMediaAvailable     *toggle `json:"notifyMediaAvailable"`
	SubscribeForAlarmUpdates *toggle `json:"subscribeForAlarmUpdates"`
}

type webhookBody struct {
	IMEI   *string                 `json:"imei"`
	URL    *string                 `json:"url"`
	Type   *string                 `json:"type"`
	Config *subscriptionConfigBody `json:"config"`
}

// subscription turns a request item into a store record; field prefixes
// the field names of a list item ("[1].").
func (b *webhookBody) subscription(field string, orgID int64, p webhooks.URLPolicy) (*store.WebhookSubscription, error) {
	for _, f := range []struct {
		name string
		v    *string
	}{{"imei", b.IMEI}, {"url", b.URL}, {"type", b.Type}} {
		if f.v == nil || *f.v == "" {
			return nil, badField(field+f.name, "is required")
		}
	}
	if !slices.Contains(webhooks.SubscriptionTypes, *b.Type) {
		return nil, badField(field+"type", "must be one of "+strings.Join(webhooks.SubscriptionTypes, ", "))
	}
	sub := &store.WebhookSubscription{OrganizationID: orgID, IMEI: *b.IMEI, URL: *b.URL, Type: *b.Type,
		NotifyMediaAvailable: true}
	if cfg := b.Config; cfg != nil {
		wrong := func(member, typ string) error {
			return badField(field+"config."+member, "applies only to "+typ+" webhooks")
		}
		switch {
		case cfg.NotifyMediaAvailable != nil && sub.Type != store.WebhookTypeEvent:
			return nil, wrong("notifyMediaAvailable", store.WebhookTypeEvent)
		case cfg.SubscribeForAlarmUpdates != nil && sub.Type != store.WebhookTypeAlarms:
			return nil, wrong("subscribeForAlarmUpdates", store.WebhookTypeAlarms)
		case cfg.systemConfigBody != (systemConfigBody{}) && sub.Type != store.WebhookTypeSystemMessages:
			return nil, wrong("system message types", store.WebhookTypeSystemMessages)
		}
		cfg.NotifyMediaAvailable.apply(&sub.NotifyMediaAvailable)
		cfg.SubscribeForAlarmUpdates.apply(&sub.SubscribeForAlarmUpdates)
		cfg.systemConfigBody.apply(&sub.System)
	}
	if err := webhooks.ValidateSubscription(field, sub, p); err != nil {
		return nil, err
	}
	if sub.Type != store.WebhookTypeEvent {
		sub.NotifyMediaAvailable = false
	}
	return sub, nil
}

// webhookData is a subscription as the API shows it.
type webhookData struct {
	ID     int64  `json:"id"`
	IMEI   string `json:"imei"`
	URL    string `json:"url"`
	Type   string `json:"type"`
	Config any    `json:"config,omitempty"`
	// WebhookSecret is set only in the answer that created the organization's secret.
	WebhookSecret string `json:"webhookSecret,omitempty"`
}

func webhookOf(s *store.WebhookSubscription) webhookData {
	d := webhookData{ID: s.ID, IMEI: s.IMEI, URL: s.URL, Type: s.Type}
	switch s.Type {
	case store.WebhookTypeEvent:
		d.Config = map[string]toggleData{"notifyMediaAvailable": {s.NotifyMediaAvailable}}
	case store.WebhookTypeAlarms:
		d.Config = map[string]toggleData{"subscribeForAlarmUpdates": {s.SubscribeForAlarmUpdates}}
	case store.WebhookTypeSystemMessages:
		d.Config = systemConfigOf(s.System)
	}
	return d
}

// visibleSubscriptions lists the organization's subscriptions whose device
// the caller may see.
func (s *Server) visibleSubscriptions(c *gin.Context, tx *store.Tx, orgID int64, imei string) ([]store.WebhookSubscription, error) {
	all, err := tx.WebhookSubscriptions(orgID, imei)
	if err != nil {
		return nil, err
	}
	var out []store.WebhookSubscription
	for _, sub := range all {
		if d, err := tx.Device(sub.IMEI); err == nil && d.OrganizationID == orgID && canSeeDevice(tx, principal(c), d) {
			out = append(out, sub)
		}
	}
	return out, nil
}

// subscribedDevice checks that the subscription's device is one of the
// organization's the caller may see.
func (s *Server) subscribedDevice(c *gin.Context, tx *store.Tx, sub *store.WebhookSubscription) error {
	d, err := s.deviceByIMEI(c, tx, sub.IMEI)
	if err != nil {
		return err
	}
	if d.OrganizationID != sub.OrganizationID {
		return notFound("device " + sub.IMEI)
	}
	return nil
}

// listWebhooks handles GET /organizations/{orgId}/webhooks (?imei= filters).
func (s *Server) listWebhooks(c *gin.Context) error {
	out := []webhookData{}
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		subs, err := s.visibleSubscriptions(c, tx, o.ID, c.Query("imei"))
		for i := range subs {
			out = append(out, webhookOf(&subs[i]))
		}
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// addWebhook handles POST /organizations/{orgId}/webhooks.
func (s *Server) addWebhook(c *gin.Context) error {
	var body webhookBody
	if err := decode(c, &body); err != nil {
		return err
	}
	var out webhookData
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		policy, err := s.webhookURLPolicy(tx, o.ID)
		if err != nil {
			return err
		}
		sub, err := body.subscription("", o.ID, policy)
		if err != nil {
			return err
		}
		if err := s.subscribedDevice(c, tx, sub); err != nil {
			return err
		}
		existing, err := tx.WebhookSubscriptions(o.ID, sub.IMEI)
		if err != nil {
			return err
		}
		merged := slices.DeleteFunc(existing, func(e store.WebhookSubscription) bool { return e.Type == sub.Type && e.URL == sub.URL })
		if err := webhooks.ValidateSubscriptionSet(append(merged, *sub)); err != nil {
			return err
		}
		saved, err := tx.SaveWebhookSubscription(*sub)
		if err != nil {
			return err
		}
		out = webhookOf(saved)
		out.WebhookSecret, err = s.newWebhookSecret(tx, o.ID)
		return err
	})
	if err != nil {
		return err
	}
	noStoreIfSecret(c, out.WebhookSecret)
	return okBody(c, gin.H{"data": out, "webhookId": out.ID, "requestId": requestID(c)})
}

// replaceWebhooks handles PUT /organizations/{orgId}/webhooks: the body is
// the complete list; subscriptions of the caller's devices not in it are deleted.
func (s *Server) replaceWebhooks(c *gin.Context) error {
	var body []webhookBody
	if err := decode(c, &body); err != nil {
		return err
	}
	out := []webhookData{}
	var secret string
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		policy, err := s.webhookURLPolicy(tx, o.ID)
		if err != nil {
			return err
		}
		var subs []store.WebhookSubscription
		for i := range body {
			sub, err := body[i].subscription(fmt.Sprintf("[%d].", i), o.ID, policy)
			if err != nil {
				return err
			}
			if err := s.subscribedDevice(c, tx, sub); err != nil {
				return err
			}
			if slices.ContainsFunc(subs, func(e store.WebhookSubscription) bool {
				return e.IMEI == sub.IMEI && e.Type == sub.Type && e.URL == sub.URL
			}) {
				return badField(fmt.Sprintf("[%d]", i), "repeats an earlier webhook (same imei, type and url)")
			}
			subs = append(subs, *sub)
		}
		current, err := s.visibleSubscriptions(c, tx, o.ID, "")
		if err != nil {
			return err
		}
		all, err := tx.WebhookSubscriptions(o.ID, "")
		if err != nil {
			return err
		}
		// Others' subscriptions stay and count toward the per-device limit.
		others := slices.DeleteFunc(all, func(a store.WebhookSubscription) bool {
			return slices.ContainsFunc(current, func(v store.WebhookSubscription) bool { return v.ID == a.ID })
		})
		if err := webhooks.ValidateSubscriptionSet(append(others, subs...)); err != nil {
			return err
		}
		for _, cur := range current {
			if !slices.ContainsFunc(subs, func(n store.WebhookSubscription) bool {
				return n.IMEI == cur.IMEI && n.Type == cur.Type && n.URL == cur.URL
			}) {
				if err := tx.DeleteWebhookSubscription(o.ID, cur.ID); err != nil {
					return err
				}
			}
		}
		for _, sub := range subs {
			saved, err := tx.SaveWebhookSubscription(sub)
			if err != nil {
				return err
			}
			out = append(out, webhookOf(saved))
		}
		secret, err = s.newWebhookSecret(tx, o.ID)
		return err
	})
	if err != nil {
		return err
	}
	noStoreIfSecret(c, secret)
	body2 := gin.H{"data": out, "requestId": requestID(c)}
	if secret != "" {
		body2["webhookSecret"] = secret
	}
	return okBody(c, body2)
}

// deleteWebhook handles DELETE /organizations/{orgId}/webhooks/{webhookId}.
func (s *Server) deleteWebhook(c *gin.Context) error {
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		id, err := pathInt(c, "webhookId")
		if err != nil {
			return err
		}
		sub, err := tx.WebhookSubscription(o.ID, id)
		if err != nil {
			return notFound(fmt.Sprintf("webhook %d", id))
		}
		if d, err := tx.Device(sub.IMEI); err != nil || !canSeeDevice(tx, principal(c), d) {
			return notFound(fmt.Sprintf("webhook %d", id))
		}
		return tx.DeleteWebhookSubscription(o.ID, id)
	})
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"requestId": requestID(c)})
}
