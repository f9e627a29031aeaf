package webhooks

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strings"

	"github.com/fleetcam/fleetcam/store"
)

// Envelope is the body of every webhook: the type, for system messages and
// activation the message type, for event webhooks of URLs that asked for
// media notifications the mediaAvailable flag, and the data object
// rendered from the message's fact (bodies.go).
type Envelope struct {
	Type           string          `json:"type"`
	MessageType    string          `json:"messageType,omitempty"`
	MediaAvailable *bool           `json:"mediaAvailable,omitempty"`
	Data           json.RawMessage `json:"data"`
}

// target is one URL a message goes to, with the body it gets there.
type target struct {
	url  string
	body []byte
}

// webhookType is the webhook type that carries messages of kind.
func webhookType(kind string) string {
	switch kind {
	case store.MessageEvent, store.MessageMediaUploaded:
		return store.WebhookTypeEvent
	case store.MessageGPS:
		return store.WebhookTypeGPS
	case store.MessageAlarm:
		return store.WebhookTypeAlarms
	case store.MessageSystem:
		return store.WebhookTypeSystemMessages
	case store.MessageActivation:
		return store.WebhookTypeActivation
	}
	return ""
}

// IsBeep reports whether an event type (API or webhook syntax) is a beep:
// an in-cabin alert that precedes its main event. Beeps are available through
// the API only and are never sent as webhooks. Every beep of the catalogue
// ends in Beep (API syntax) or _beep (webhook syntax).
func IsBeep(eventType string) bool {
	return strings.HasSuffix(eventType, "Beep") || strings.HasSuffix(eventType, "_beep")
}

// isAlarmUpdate reports whether an alarm message is an update (closing,
// comment) rather than the alarm's creation; updates go only to URLs that
// subscribe for alarm updates.
func isAlarmUpdate(subType string) bool { return subType != "" && subType != "created" }

// route decides which URLs of the message's organization receive m, and
// renders the body for each. Organization settings and the device's
// subscriptions are merged; a URL is listed once. Endpoints disabled by 410
// Gone get nothing.
func route(tx *store.Tx, m *store.Message) ([]target, error) {
	typ := webhookType(m.Kind)
	if typ == "" {
		return nil, nil
	}
	if m.Kind == store.MessageEvent && IsBeep(eventType(m)) {
		return nil, nil
	}
	s, err := tx.WebhookSettings(m.OrganizationID)
	if err != nil {
		return nil, err
	}
	var subs []store.WebhookSubscription
	if m.IMEI != "" {
		if subs, err = tx.WebhookSubscriptions(m.OrganizationID, m.IMEI); err != nil {
			return nil, err
		}
	}
	var urls []string
	notify := map[string]bool{} // event URLs that asked for media notifications
	add := func(u string, mediaNotify bool) {
		if !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
		notify[u] = notify[u] || mediaNotify
	}
	update := isAlarmUpdate(m.SubType)
	switch m.Kind {
	case store.MessageEvent, store.MessageMediaUploaded:
		media := m.Kind == store.MessageMediaUploaded
		for _, u := range s.EventURLs {
			if !media || s.NotifyMediaAvailable {
				add(u, s.NotifyMediaAvailable)
			}
		}
		for _, sub := range subs {
			if sub.Type == typ && (!media || sub.NotifyMediaAvailable) {
				add(sub.URL, sub.NotifyMediaAvailable)
			}
		}
	case store.MessageGPS:
		addAll(add, s.GPSURLs)
		addSubs(add, subs, typ, func(store.WebhookSubscription) bool { return true })
	case store.MessageActivation:
		addAll(add, s.ActivationURLs)
		addSubs(add, subs, typ, func(store.WebhookSubscription) bool { return true })
	case store.MessageAlarm:
		if !update || s.SubscribeForAlarmUpdates {
			addAll(add, s.AlarmURLs)
		}
		addSubs(add, subs, typ, func(sub store.WebhookSubscription) bool { return !update || sub.SubscribeForAlarmUpdates })
	case store.MessageSystem:
		for _, w := range s.SystemMessages {
			if w.Config.Enabled(m.SubType) {
				add(w.URL, false)
			}
		}
		addSubs(add, subs, typ, func(sub store.WebhookSubscription) bool { return sub.System.Enabled(m.SubType) })
	}
	if len(urls) == 0 {
		return nil, nil
	}
	data, err := renderData(m)
	if err != nil {
		return nil, err
	}
	var out []target
	for _, u := range urls {
		ep, err := tx.WebhookEndpoint(m.OrganizationID, u)
		if err != nil {
			return nil, err
		}
		if ep.Disabled {
			continue
		}
		env := Envelope{Type: typ, Data: data}
		if m.Kind == store.MessageSystem || m.Kind == store.MessageActivation || m.Kind == store.MessageAlarm {
			env.MessageType = m.SubType
		}
		if typ == store.WebhookTypeEvent && notify[u] {
			v := m.Kind == store.MessageMediaUploaded
			env.MediaAvailable = &v
		}
		body, err := json.Marshal(env)
		if err != nil {
			return nil, err
		}
		out = append(out, target{url: u, body: body})
	}
	return out, nil
}

func addAll(add func(string, bool), urls []string) {
	for _, u := range urls {
		add(u, false)
	}
}

func addSubs(add func(string, bool), subs []store.WebhookSubscription, typ string, want func(store.WebhookSubscription) bool) {
	for _, sub := range subs {
		if sub.Type == typ && want(sub) {
			add(sub.URL, false)
		}
	}
}

// webhookID names message m at url for the receiver: the same on every
// attempt and redelivery, different for every other message or URL, also
// across a reinstalled store (the message time is part of it).
func webhookID(m *store.Message, url string) string {
	h := sha256.New()
	var b [24]byte
	binary.BigEndian.PutUint64(b[:], uint64(m.OrganizationID))
	binary.BigEndian.PutUint64(b[8:], uint64(m.Seq))
	binary.BigEndian.PutUint64(b[16:], uint64(m.Time.UnixNano()))
	h.Write(b[:])
	h.Write([]byte(url))
	return "msg_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil)[:15]))
}
