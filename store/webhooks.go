package store

import (
	"slices"
	"strconv"
	"time"
)

// Webhook records: an organization's webhook settings, its per-device
// subscriptions, the salt its signing secret is derived from and the state
// of each endpoint (organization and URL) deliveries go to. The rules about
// what is valid live in cloudapi/webhooks; the store keeps and audits them.

// Webhook types: what a URL subscribes to.
const (
	WebhookTypeEvent          = "event"
	WebhookTypeGPS            = "gps"
	WebhookTypeAlarms         = "alarms"
	WebhookTypeSystemMessages = "systemMessages"
	WebhookTypeActivation     = "activation"
)

// SystemMessagesConfig selects the system message types a URL receives.
// Every type is opt-in.
type SystemMessagesConfig struct {
	DataProfile                      bool      `json:"dataProfile,omitempty"`
	DataProfileLimit                 int       `json:"dataProfileLimit,omitempty"`
	DeviceStatus                     bool      `json:"deviceStatus,omitempty"`
	DeviceBillingStatus              bool      `json:"deviceBillingStatus,omitempty"`
	DeviceRemoved                    bool      `json:"deviceRemoved,omitempty"`
	AuxiliaryCamerasConnectionStatus bool      `json:"auxiliaryCamerasConnectionStatus,omitempty"`
	AuxiliaryCamerasPairingStatus    bool      `json:"auxiliaryCamerasPairingStatus,omitempty"`
	PrivacyMode                      bool      `json:"privacyMode,omitempty"`
	DataUsage                        bool      `json:"dataUsage,omitempty"`
	DataUsageThresholds              []float64 `json:"dataUsageThresholds,omitempty"`
	DataUsagePlan                    float64   `json:"dataUsagePlan,omitempty"`
	DynamicAdjust                    bool      `json:"dynamicAdjust,omitempty"`
}

// Enabled reports whether system messages of subType are selected. The
// auxiliary camera connection messages (SystemAuxCameraStatus) follow
// AuxiliaryCamerasConnectionStatus; an unknown type is never selected.
func (c SystemMessagesConfig) Enabled(subType string) bool {
	switch subType {
	case SystemDeviceRemoved:
		return c.DeviceRemoved
	case SystemDeviceStatus:
		return c.DeviceStatus
	case SystemPrivacyMode:
		return c.PrivacyMode
	case SystemAuxCameraStatus, "auxiliaryCamerasConnectionStatus":
		return c.AuxiliaryCamerasConnectionStatus
	case "auxiliaryCamerasPairingStatus":
		return c.AuxiliaryCamerasPairingStatus
	case "deviceBillingStatus":
		return c.DeviceBillingStatus
	case "dataProfile":
		return c.DataProfile
	case "dataUsage":
		return c.DataUsage
	case "dynamicAdjust":
		return c.DynamicAdjust
	}
	return false
}

// SystemMessagesWebhook is one system-messages URL with the types it receives.
type SystemMessagesWebhook struct {
	URL    string               `json:"url"`
	Config SystemMessagesConfig `json:"config"`
}

// WebhookSettings are an organization's webhook URLs. They apply to every
// current and future device of the organization.
type WebhookSettings struct {
	OrganizationID int64    `json:"organizationId"`
	GPSURLs        []string `json:"gpsUrls,omitempty"`
	EventURLs      []string `json:"eventUrls,omitempty"`
	AlarmURLs      []string `json:"alarmUrls,omitempty"`
	ActivationURLs []string `json:"activationUrls,omitempty"`
	// NotifyMediaAvailable sends event URLs a follow-up once an event's media is in the cloud.
	NotifyMediaAvailable bool `json:"notifyMediaAvailable"`
	// SubscribeForAlarmUpdates sends alarm URLs alarm updates (closing), not only creation.
	SubscribeForAlarmUpdates bool                    `json:"subscribeForAlarmUpdates"`
	SystemMessages           []SystemMessagesWebhook `json:"systemMessages,omitempty"`
	// AllowInsecureURLs is the organization's opt-in to plain http URLs,
	// for its settings and its device subscriptions alike.
	AllowInsecureURLs bool      `json:"allowInsecureUrls,omitempty"`
	UpdatedAt         time.Time `json:"updatedAt,omitzero"`
}

// DefaultWebhookSettings is what an organization that never saved webhook
// settings has: no URLs, media-available follow-ups on.
func DefaultWebhookSettings(orgID int64) *WebhookSettings {
	return &WebhookSettings{OrganizationID: orgID, NotifyMediaAvailable: true}
}

// URLs lists every URL of the settings once, in a stable order.
func (s *WebhookSettings) URLs() []string {
	var out []string
	add := func(urls ...string) {
		for _, u := range urls {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	add(s.EventURLs...)
	add(s.GPSURLs...)
	add(s.AlarmURLs...)
	add(s.ActivationURLs...)
	for _, w := range s.SystemMessages {
		add(w.URL)
	}
	return out
}

// WebhookSubscription sends one device's webhooks of one type to a URL, in
// addition to the organization's settings.
type WebhookSubscription struct {
	ID             int64  `json:"id"`
	OrganizationID int64  `json:"organizationId"`
	IMEI           string `json:"imei"`
	URL            string `json:"url"`
	Type           string `json:"type"`
	// NotifyMediaAvailable applies to event subscriptions.
	NotifyMediaAvailable bool `json:"notifyMediaAvailable,omitempty"`
	// SubscribeForAlarmUpdates applies to alarm subscriptions.
	SubscribeForAlarmUpdates bool `json:"subscribeForAlarmUpdates,omitempty"`
	// System applies to system-messages subscriptions.
	System    SystemMessagesConfig `json:"system,omitzero"`
	CreatedAt time.Time            `json:"createdAt"`
	UpdatedAt time.Time            `json:"updatedAt"`
}

// WebhookSecret holds what an organization's signing secret is derived
// from. The secret itself is derived from the server key and Salt and is
// never stored. After a rotation the previous secret still signs, beside the
// new one, until PreviousUntil, so receivers can switch without losing deliveries.
type WebhookSecret struct {
	OrganizationID int64     `json:"organizationId"`
	Salt           []byte    `json:"salt"`
	PreviousSalt   []byte    `json:"previousSalt,omitempty"`
	PreviousUntil  time.Time `json:"previousUntil,omitzero"`
	CreatedAt      time.Time `json:"createdAt"`
	RotatedAt      time.Time `json:"rotatedAt,omitzero"`
}

// WebhookEndpoint is the delivery state of one URL of one organization.
type WebhookEndpoint struct {
	OrganizationID int64  `json:"organizationId"`
	URL            string `json:"url"`
	// Disabled is set when the receiver answered 410 Gone; nothing is sent
	// until the URL is saved again.
	Disabled       bool      `json:"disabled,omitempty"`
	DisabledReason string    `json:"disabledReason,omitempty"`
	DisabledAt     time.Time `json:"disabledAt,omitzero"`
	// Failures counts consecutive attempts that found the endpoint unreachable
	// or overloaded; while it is above zero the endpoint is probed one request at a time.
	Failures int `json:"failures,omitempty"`
	// BlockedUntil holds every delivery to the endpoint back (backoff, Retry-After).
	BlockedUntil  time.Time `json:"blockedUntil,omitzero"`
	LastSuccessAt time.Time `json:"lastSuccessAt,omitzero"`
	LastFailureAt time.Time `json:"lastFailureAt,omitzero"`
	LastError     string    `json:"lastError,omitempty"`
}

// WebhookSettings returns an organization's webhook settings, the defaults
// when it never saved any.
func (tx *Tx) WebhookSettings(orgID int64) (*WebhookSettings, error) {
	s, err := tx.rec.WebhookSettings().Get(orgID)
	if isNotFound(err) {
		return DefaultWebhookSettings(orgID), nil
	}
	return s, err
}

// PutWebhookSettings stores an organization's webhook settings, audits the
// change and re-enables every endpoint the settings name (saving a URL is how
// an endpoint disabled by 410 Gone comes back).
func (tx *Tx) PutWebhookSettings(s *WebhookSettings) error {
	o, err := tx.Organization(s.OrganizationID)
	if err != nil {
		return err
	}
	prev, err := tx.WebhookSettings(s.OrganizationID)
	if err != nil {
		return err
	}
	s.UpdatedAt = tx.now
	if err := tx.rec.WebhookSettings().Put(s); err != nil {
		return err
	}
	if err := tx.Audit(AuditChange{Action: "webhook.settings.update", EntityType: "organization",
		EntityID: strconv.FormatInt(o.ID, 10), OrganizationID: o.ID, PartnerID: o.PartnerID,
		Before: prev, After: s}); err != nil {
		return err
	}
	if err := tx.refreshWebhookReceivers(s.OrganizationID); err != nil {
		return err
	}
	return tx.EnableWebhookEndpoints(s.OrganizationID, s.URLs())
}

// WebhookSubscriptions lists an organization's device subscriptions in id
// order; imei, when not empty, keeps only that device's.
func (tx *Tx) WebhookSubscriptions(orgID int64, imei string) ([]WebhookSubscription, error) {
	return tx.rec.WebhookSubscriptions().List(orgID, imei)
}

// WebhookSubscription returns subscription id of an organization.
func (tx *Tx) WebhookSubscription(orgID, id int64) (*WebhookSubscription, error) {
	s, err := tx.rec.WebhookSubscriptions().Get(orgID, id)
	if err != nil {
		return nil, missing(err, "webhook %d", id)
	}
	return s, nil
}

// SaveWebhookSubscription adds s, or updates the subscription of the same
// device, type and URL when there is one (the reference contract's POST
// semantics). It returns the stored subscription.
func (tx *Tx) SaveWebhookSubscription(s WebhookSubscription) (*WebhookSubscription, error) {
	existing, err := tx.WebhookSubscriptions(s.OrganizationID, s.IMEI)
	if err != nil {
		return nil, err
	}
	var prev *WebhookSubscription
	for i := range existing {
		if existing[i].Type == s.Type && existing[i].URL == s.URL {
			prev = &existing[i]
		}
	}
	action := "webhook.subscription.create"
	s.UpdatedAt = tx.now
	if prev != nil {
		action = "webhook.subscription.update"
		s.ID, s.CreatedAt = prev.ID, prev.CreatedAt
		err = tx.rec.WebhookSubscriptions().Put(&s)
	} else {
		s.CreatedAt = tx.now
		err = tx.rec.WebhookSubscriptions().Insert(&s)
	}
	if err != nil {
		return nil, err
	}
	if err := tx.Audit(AuditChange{Action: action, EntityType: "webhook", EntityID: strconv.FormatInt(s.ID, 10),
		OrganizationID: s.OrganizationID, Before: prev, After: s}); err != nil {
		return nil, err
	}
	if err := tx.refreshWebhookReceivers(s.OrganizationID); err != nil {
		return nil, err
	}
	return &s, tx.EnableWebhookEndpoints(s.OrganizationID, []string{s.URL})
}

// DeleteWebhookSubscription removes subscription id of an organization.
func (tx *Tx) DeleteWebhookSubscription(orgID, id int64) error {
	s, err := tx.WebhookSubscription(orgID, id)
	if err != nil {
		return err
	}
	if err := tx.rec.WebhookSubscriptions().Delete(orgID, id); err != nil {
		return err
	}
	if err := tx.refreshWebhookReceivers(orgID); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "webhook.subscription.delete", EntityType: "webhook",
		EntityID: strconv.FormatInt(id, 10), OrganizationID: orgID, Before: s})
}

// WebhookSecret returns an organization's secret record; ErrNotFound when
// none was created yet.
func (tx *Tx) WebhookSecret(orgID int64) (*WebhookSecret, error) {
	s, err := tx.rec.WebhookSecrets().Get(orgID)
	if err != nil {
		return nil, missing(err, "webhook secret of organization %d", orgID)
	}
	return s, nil
}

// PutWebhookSecret stores an organization's secret record. The audit entry
// says that the secret was created or rotated, never what it is.
func (tx *Tx) PutWebhookSecret(s *WebhookSecret) error {
	action := "webhook.secret.create"
	if !s.RotatedAt.IsZero() {
		action = "webhook.secret.rotate"
	}
	if err := tx.rec.WebhookSecrets().Put(s); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: action, EntityType: "organization",
		EntityID: strconv.FormatInt(s.OrganizationID, 10), OrganizationID: s.OrganizationID,
		After: map[string]any{"createdAt": s.CreatedAt, "rotatedAt": s.RotatedAt, "previousUntil": s.PreviousUntil}})
}

// EnsureWebhookSecret returns an organization's secret record, creating it
// with newSalt when there is none; created says whether it did. Creation
// happens inside the write transaction, so two callers never both create.
func (tx *Tx) EnsureWebhookSecret(orgID int64, newSalt func() []byte) (s *WebhookSecret, created bool, err error) {
	if s, err := tx.WebhookSecret(orgID); err == nil {
		return s, false, nil
	}
	if _, err := tx.Organization(orgID); err != nil {
		return nil, false, err
	}
	s = &WebhookSecret{OrganizationID: orgID, Salt: newSalt(), CreatedAt: tx.now}
	return s, true, tx.PutWebhookSecret(s)
}

// RotateWebhookSecret replaces an organization's salt with salt; the
// previous secret keeps signing beside the new one for grace.
func (tx *Tx) RotateWebhookSecret(orgID int64, salt []byte, grace time.Duration) (*WebhookSecret, error) {
	s, created, err := tx.EnsureWebhookSecret(orgID, func() []byte { return salt })
	if err != nil || created {
		return s, err
	}
	s.PreviousSalt, s.PreviousUntil = s.Salt, tx.now.Add(grace)
	s.Salt, s.RotatedAt = salt, tx.now
	return s, tx.PutWebhookSecret(s)
}

// WebhookEndpoint returns the delivery state of an organization's URL; a URL
// never delivered to has a zero state.
func (tx *Tx) WebhookEndpoint(orgID int64, url string) (*WebhookEndpoint, error) {
	e, err := tx.rec.WebhookEndpoints().Get(orgID, url)
	if isNotFound(err) {
		return &WebhookEndpoint{OrganizationID: orgID, URL: url}, nil
	}
	return e, err
}

// PutWebhookEndpoint stores an endpoint's delivery state. It is delivery
// bookkeeping, not audited; disabling is audited by DisableWebhookEndpoint.
func (tx *Tx) PutWebhookEndpoint(e *WebhookEndpoint) error {
	return tx.rec.WebhookEndpoints().Put(e)
}

// WebhookEndpoints lists the delivery state of every URL of an organization
// that has been delivered to, in URL order.
func (tx *Tx) WebhookEndpoints(orgID int64) ([]WebhookEndpoint, error) {
	return tx.rec.WebhookEndpoints().List(orgID)
}

// EnableWebhookEndpoints clears the disabled state of the named URLs of an
// organization, audits each one re-enabled and wakes the dispatcher.
func (tx *Tx) EnableWebhookEndpoints(orgID int64, urls []string) error {
	for _, u := range urls {
		e, err := tx.WebhookEndpoint(orgID, u)
		if err != nil {
			return err
		}
		if !e.Disabled {
			continue
		}
		prev := *e
		e.Disabled, e.DisabledReason, e.DisabledAt = false, "", time.Time{}
		e.Failures, e.BlockedUntil = 0, time.Time{}
		if err := tx.PutWebhookEndpoint(e); err != nil {
			return err
		}
		if err := tx.Audit(AuditChange{Action: "webhook.endpoint.enable", EntityType: "webhookEndpoint",
			EntityID: u, OrganizationID: orgID, Before: prev, After: e}); err != nil {
			return err
		}
		if err := tx.touchOutbox(); err != nil {
			return err
		}
	}
	return nil
}

// DisableWebhookEndpoint marks an organization's URL disabled with reason,
// gives up every delivery still pending for it and audits the change. It
// returns the deliveries given up.
func (tx *Tx) DisableWebhookEndpoint(orgID int64, url, reason string) ([]Delivery, error) {
	e, err := tx.WebhookEndpoint(orgID, url)
	if err != nil {
		return nil, err
	}
	prev := *e
	e.Disabled, e.DisabledReason, e.DisabledAt = true, reason, tx.now
	e.BlockedUntil = time.Time{}
	if err := tx.PutWebhookEndpoint(e); err != nil {
		return nil, err
	}
	if err := tx.Audit(AuditChange{Action: "webhook.endpoint.disable", EntityType: "webhookEndpoint",
		EntityID: url, OrganizationID: orgID, Reason: reason, Before: prev, After: e}); err != nil {
		return nil, err
	}
	queued, err := tx.rec.Deliveries().Pending(orgID, url)
	if err != nil {
		return nil, err
	}
	var gaveUp []Delivery
	for _, q := range queued {
		d, err := tx.Delivery(q.DeliveryID)
		if err != nil {
			return nil, err
		}
		d.Status, d.FinishedAt = DeliveryFailed, tx.now
		d.LastError = "not sent: the endpoint is disabled (" + reason + ")"
		if err := tx.PutDelivery(d); err != nil {
			return nil, err
		}
		gaveUp = append(gaveUp, *d)
	}
	return gaveUp, nil
}

// DropRemovedDeviceSubscriptions deletes the subscriptions of a removed
// device that existed at its removal (removedAt). The webhook dispatcher calls
// it after routing the device's deviceRemoved message, so that this last
// message still reaches the device's own subscriptions.
func (tx *Tx) DropRemovedDeviceSubscriptions(orgID int64, imei string, removedAt time.Time) error {
	subs, err := tx.WebhookSubscriptions(orgID, imei)
	if err != nil {
		return err
	}
	for _, s := range subs {
		if s.CreatedAt.After(removedAt) {
			continue // made for the device after it came back
		}
		if err := tx.rec.WebhookSubscriptions().Delete(orgID, s.ID); err != nil {
			return err
		}
		if err := tx.Audit(AuditChange{Action: "webhook.subscription.delete", EntityType: "webhook",
			EntityID: strconv.FormatInt(s.ID, 10), OrganizationID: orgID, Reason: "device removed", Before: s}); err != nil {
			return err
		}
	}
	return tx.refreshWebhookReceivers(orgID)
}
