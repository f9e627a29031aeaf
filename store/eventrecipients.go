package store

import (
	"net/mail"
	"slices"
	"strconv"
	"strings"
)

// Event notification recipients: the e-mail addresses told when an event
// of one type happens on one device. The lists are part of the device's
// settings (DeviceSettings.NotificationRecipients), keyed by the event
// type's API syntax, so they go with the device and are copied, audited and
// versioned like the rest of its settings.

// MaxEventRecipients bounds the recipients of one event type on one device.
const MaxEventRecipients = 20

// EventRecipient is one recipient of one event type's notifications.
type EventRecipient struct {
	Email     string
	EventType string
}

// CheckEventType returns the API syntax of the event type name, naming
// field when it is not one.
func CheckEventType(field, name string) (string, error) {
	kind, ok := LookupEvent(name)
	if !ok {
		return "", Invalid(field, "%q is not an event type (use the API syntax names, e.g. cellPhoneUse)", name)
	}
	return kind.API, nil
}

// validRecipientEmail reports whether v is one bare e-mail address with a
// dot in its domain, the shape the reference contract gives an e-mail.
func validRecipientEmail(v string) bool {
	a, err := mail.ParseAddress(v)
	return err == nil && a.Address == v && strings.Contains(v[strings.LastIndex(v, "@"):], ".")
}

// checkEventRecipients validates a replacing list: at most
// MaxEventRecipients addresses, each valid. Duplicates are dropped, order
// is kept; errors name notificationRecipients.
func checkEventRecipients(emails []string) ([]string, error) {
	out := make([]string, 0, len(emails))
	for i, e := range emails {
		e = strings.TrimSpace(e)
		if !validRecipientEmail(e) {
			return nil, Invalid("notificationRecipients["+strconv.Itoa(i)+"]", "must be an e-mail address such as name@example.com")
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	if len(out) > MaxEventRecipients {
		return nil, Invalid("notificationRecipients", "must hold at most %d e-mail addresses", MaxEventRecipients)
	}
	return out, nil
}

// EventRecipients lists imei's recipients, of eventType only unless it is
// empty, ordered by event type and then as they were given.
func (tx *Tx) EventRecipients(imei, eventType string) ([]EventRecipient, error) {
	s, err := tx.DeviceSettings(imei)
	if err != nil {
		return nil, err
	}
	types := make([]string, 0, len(s.NotificationRecipients))
	for t := range s.NotificationRecipients {
		if eventType == "" || t == eventType {
			types = append(types, t)
		}
	}
	slices.Sort(types)
	var out []EventRecipient
	for _, t := range types {
		for _, e := range s.NotificationRecipients[t] {
			out = append(out, EventRecipient{Email: e, EventType: t})
		}
	}
	return out, nil
}

// SetEventRecipients replaces imei's recipients of eventType (API syntax or
// alias) with emails ([] removes them all) and audits the change
// (device.notificationRecipients).
func (tx *Tx) SetEventRecipients(imei, eventType string, emails []string) error {
	t, err := CheckEventType("eventType", eventType)
	if err != nil {
		return err
	}
	list, err := checkEventRecipients(emails)
	if err != nil {
		return err
	}
	s, err := tx.DeviceSettings(imei)
	if err != nil {
		return err
	}
	if slices.Equal(s.NotificationRecipients[t], list) {
		_, err := tx.Device(imei) // nothing changes; the device must still exist
		return err
	}
	next := *s
	next.NotificationRecipients = withRecipients(s.NotificationRecipients, t, list)
	return tx.PutDeviceSettings(&next, "device.notificationRecipients")
}

// DeleteEventRecipient removes email from imei's recipients of eventType,
// or of every event type when eventType is empty, and audits the change. An
// address that is no recipient is not found.
func (tx *Tx) DeleteEventRecipient(imei, email, eventType string) error {
	s, err := tx.DeviceSettings(imei)
	if err != nil {
		return err
	}
	next := *s
	next.NotificationRecipients = s.NotificationRecipients
	removed := false
	for t, list := range s.NotificationRecipients {
		if (eventType == "" || t == eventType) && slices.Contains(list, email) {
			next.NotificationRecipients = withRecipients(next.NotificationRecipients, t,
				slices.DeleteFunc(slices.Clone(list), func(e string) bool { return e == email }))
			removed = true
		}
	}
	if !removed {
		if _, err := tx.Device(imei); err != nil {
			return err
		}
		return NotFound("notification recipient %s of device %s", email, imei)
	}
	return tx.PutDeviceSettings(&next, "device.notificationRecipients")
}

// withRecipients returns a copy of m with eventType's list set to list, or
// dropped when list is empty; a map left empty is nil.
func withRecipients(m map[string][]string, eventType string, list []string) map[string][]string {
	out := make(map[string][]string, len(m)+1)
	for t, l := range m {
		out[t] = l
	}
	if len(list) == 0 {
		delete(out, eventType)
	} else {
		out[eventType] = list
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
