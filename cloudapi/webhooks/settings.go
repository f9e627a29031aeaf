package webhooks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetcam/fleetcam/store"
)

// Limits of an organization's webhook settings.
const (
	// MaxURLsPerType is how many URLs an organization holds per webhook type:
	// three, for GPS, events and every other type alike.
	MaxURLsPerType = 3
	// MaxSubscriptionsPerDevice is how many URLs one device subscribes per type.
	MaxSubscriptionsPerDevice = 3
)

// ValidateSettings checks an organization's webhook settings: at most three
// URLs of each type, no URL twice in one list, every URL allowed (CheckURL),
// and the system message options in range. A broken rule is a store.Invalid
// error whose field is named as in the API.
// Plain http URLs are allowed when the settings opt in (AllowInsecureURLs).
func ValidateSettings(s *store.WebhookSettings, allowPrivate bool) error {
	p := URLPolicy{AllowPrivate: allowPrivate, AllowHTTP: s.AllowInsecureURLs}
	lists := []struct {
		field string
		urls  []string
	}{
		{"gpsWebhookUrl", s.GPSURLs},
		{"eventWebhookUrl", s.EventURLs},
		{"alarmsWebhookUrl", s.AlarmURLs},
		{"activationWebhookUrl", s.ActivationURLs},
	}
	for _, l := range lists {
		if err := checkURLList(l.field, l.urls, p); err != nil {
			return err
		}
	}
	urls := make([]string, len(s.SystemMessages))
	for i, w := range s.SystemMessages {
		urls[i] = w.URL
	}
	if err := checkURLList("systemMessagesWebhook", urls, p); err != nil {
		return err
	}
	for i, w := range s.SystemMessages {
		if err := checkSystemConfig(fmt.Sprintf("systemMessagesWebhook[%d].config", i), w.Config); err != nil {
			return err
		}
	}
	return nil
}

func checkURLList(field string, urls []string, p URLPolicy) error {
	if len(urls) > MaxURLsPerType {
		return store.Invalid(field, "may hold at most %d URLs (got %d)", MaxURLsPerType, len(urls))
	}
	for i, u := range urls {
		name := fmt.Sprintf("%s[%d]", field, i)
		if strings.HasPrefix(field, "systemMessagesWebhook") {
			name += ".url"
		}
		if err := CheckURL(u, p); err != nil {
			return store.Invalid(name, err.Error())
		}
		if slices.Index(urls, u) != i {
			return store.Invalid(name, "repeats a URL already in "+field)
		}
	}
	return nil
}

func checkSystemConfig(field string, c store.SystemMessagesConfig) error {
	if c.DataProfileLimit != 0 && (c.DataProfileLimit < 10 || c.DataProfileLimit > 100) {
		return store.Invalid(field+".dataProfile.dataProfileLimit", "must be an integer from 10 to 100")
	}
	if len(c.DataUsageThresholds) > 20 {
		return store.Invalid(field+".dataUsage.dataThresholds", "may hold at most 20 values")
	}
	for i, t := range c.DataUsageThresholds {
		if t < 0.1 || t > 20 {
			return store.Invalid(fmt.Sprintf("%s.dataUsage.dataThresholds[%d]", field, i), "must be from 0.1 to 20 (GB)")
		}
		if slices.Index(c.DataUsageThresholds, t) != i {
			return store.Invalid(fmt.Sprintf("%s.dataUsage.dataThresholds[%d]", field, i), "repeats a threshold")
		}
	}
	if c.DataUsagePlan != 0 && (c.DataUsagePlan < 0.1 || c.DataUsagePlan > 20) {
		return store.Invalid(field+".dataUsage.dataPlan", "must be from 0.1 to 20 (GB)")
	}
	return nil
}

// SubscriptionTypes lists the webhook types a device subscription may have.
var SubscriptionTypes = []string{store.WebhookTypeGPS, store.WebhookTypeEvent, store.WebhookTypeAlarms,
	store.WebhookTypeSystemMessages, store.WebhookTypeActivation}

// ValidateSubscription checks one device subscription; field prefixes the
// field names (e.g. "[2]" for the third of a list); p is what its URL may be.
// A broken rule is a store.Invalid error, as for ValidateSettings.
func ValidateSubscription(field string, s *store.WebhookSubscription, p URLPolicy) error {
	if !slices.Contains(SubscriptionTypes, s.Type) {
		return store.Invalid(field+"type", "must be one of "+strings.Join(SubscriptionTypes, ", "))
	}
	if err := CheckURL(s.URL, p); err != nil {
		return store.Invalid(field+"url", err.Error())
	}
	return checkSystemConfig(field+"config", s.System)
}

// ValidateSubscriptionSet checks the limit of subscriptions per device and
// type over a whole set.
func ValidateSubscriptionSet(subs []store.WebhookSubscription) error {
	type key struct{ imei, typ string }
	n := map[key]int{}
	for _, s := range subs {
		k := key{s.IMEI, s.Type}
		n[k]++
		if n[k] > MaxSubscriptionsPerDevice {
			return store.Invalid("url", "device %s may have at most %d %s webhooks", s.IMEI, MaxSubscriptionsPerDevice, s.Type)
		}
	}
	return nil
}
