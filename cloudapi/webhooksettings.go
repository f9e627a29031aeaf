package cloudapi

import (
	"fmt"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Organization webhook settings: POST replaces them, PATCH changes only the
// settings it names, GET reads them. The first save creates the
// organization's signing secret and shows it once, in webhookSecret.

// toggle is the {"isEnabled": …} object of the reference contract.
type toggle struct {
	IsEnabled *bool `json:"isEnabled"`
}

func (t *toggle) apply(dst *bool) {
	if t != nil && t.IsEnabled != nil {
		*dst = *t.IsEnabled
	}
}

type dataProfileBody struct {
	IsEnabled        *bool `json:"isEnabled"`
	DataProfileLimit *int  `json:"dataProfileLimit"`
}

type dataUsageBody struct {
	IsEnabled      *bool     `json:"isEnabled"`
	DataThresholds []float64 `json:"dataThresholds"`
	DataPlan       *float64  `json:"dataPlan"`
}

// systemConfigBody selects system message types; members left out keep
// their value under PATCH and are off under POST.
type systemConfigBody struct {
	DataProfile                      *dataProfileBody `json:"dataProfile"`
	DeviceStatus                     *toggle          `json:"deviceStatus"`
	DeviceBillingStatus              *toggle          `json:"deviceBillingStatus"`
	DeviceRemoved                    *toggle          `json:"deviceRemoved"`
	AuxiliaryCamerasConnectionStatus *toggle          `json:"auxiliaryCamerasConnectionStatus"`
	AuxiliaryCamerasPairingStatus    *toggle          `json:"auxiliaryCamerasPairingStatus"`
	PrivacyMode                      *toggle          `json:"privacyMode"`
	DataUsage                        *dataUsageBody   `json:"dataUsage"`
	DynamicAdjust                    *toggle          `json:"dynamicAdjust"`
}

func (b *systemConfigBody) apply(c *store.SystemMessagesConfig) {
	if b == nil {
		return
	}
	if b.DataProfile != nil {
		(&toggle{b.DataProfile.IsEnabled}).apply(&c.DataProfile)
		if b.DataProfile.DataProfileLimit != nil {
			c.DataProfileLimit = *b.DataProfile.DataProfileLimit
		}
	}
	b.DeviceStatus.apply(&c.DeviceStatus)
	b.DeviceBillingStatus.apply(&c.DeviceBillingStatus)
	b.DeviceRemoved.apply(&c.DeviceRemoved)
	b.AuxiliaryCamerasConnectionStatus.apply(&c.AuxiliaryCamerasConnectionStatus)
	b.AuxiliaryCamerasPairingStatus.apply(&c.AuxiliaryCamerasPairingStatus)
	b.PrivacyMode.apply(&c.PrivacyMode)
	b.DynamicAdjust.apply(&c.DynamicAdjust)
	if b.DataUsage != nil {
		(&toggle{b.DataUsage.IsEnabled}).apply(&c.DataUsage)
		if b.DataUsage.DataThresholds != nil {
			c.DataUsageThresholds = b.DataUsage.DataThresholds
		}
		if b.DataUsage.DataPlan != nil {
			c.DataUsagePlan = *b.DataUsage.DataPlan
		}
	}
}

type systemMessagesWebhookBody struct {
	URL    *string           `json:"url"`
	Config *systemConfigBody `json:"config"`
}

type eventWebhookConfigBody struct {
	NotifyMediaAvailable *toggle `json:"notifyMediaAvailable"`
}

type alarmsWebhookConfigBody struct {
	SubscribeForAlarmUpdates *toggle `json:"subscribeForAlarmUpdates"`
}

// webhookSettingsBody is the body of POST and PATCH webhook-settings. A
// member left out is not named: POST resets it, PATCH keeps it. An empty
// array removes every URL of that kind.
type webhookSettingsBody struct {
	GPSWebhookURL         *[]string                    `json:"gpsWebhookUrl"`
	EventWebhookURL       *[]string                    `json:"eventWebhookUrl"`
	EventWebhookConfig    *eventWebhookConfigBody      `json:"eventWebhookConfig"`
	AlarmsWebhookURL      *[]string                    `json:"alarmsWebhookUrl"`
	AlarmsWebhookConfig   *alarmsWebhookConfigBody     `json:"alarmsWebhookConfig"`
	SystemMessagesWebhook *[]systemMessagesWebhookBody `json:"systemMessagesWebhook"`
	ActivationWebhookURL  *[]string                    `json:"activationWebhookUrl"`
	// AllowInsecureWebhookURLs opts the organization in to plain http URLs.
	AllowInsecureWebhookURLs *bool `json:"allowInsecureWebhookUrls"`
}

// apply writes the named settings into s.
func (b *webhookSettingsBody) apply(s *store.WebhookSettings) error {
	set := func(dst *[]string, src *[]string) {
		if src != nil {
			*dst = append([]string{}, (*src)...)
		}
	}
	set(&s.GPSURLs, b.GPSWebhookURL)
	set(&s.EventURLs, b.EventWebhookURL)
	set(&s.AlarmURLs, b.AlarmsWebhookURL)
	set(&s.ActivationURLs, b.ActivationWebhookURL)
	if b.AllowInsecureWebhookURLs != nil {
		s.AllowInsecureURLs = *b.AllowInsecureWebhookURLs
	}
	if b.EventWebhookConfig != nil {
		b.EventWebhookConfig.NotifyMediaAvailable.apply(&s.NotifyMediaAvailable)
	}
	if b.AlarmsWebhookConfig != nil {
		b.AlarmsWebhookConfig.SubscribeForAlarmUpdates.apply(&s.SubscribeForAlarmUpdates)
	}
	if b.SystemMessagesWebhook != nil {
		s.SystemMessages = []store.SystemMessagesWebhook{}
		for i, w := range *b.SystemMessagesWebhook {
			if w.URL == nil {
				return badField(fmt.Sprintf("systemMessagesWebhook[%d].url", i), "is required")
			}
			sw := store.SystemMessagesWebhook{URL: *w.URL}
			w.Config.apply(&sw.Config)
			s.SystemMessages = append(s.SystemMessages, sw)
		}
	}
	return nil
}

type toggleData struct {
	IsEnabled bool `json:"isEnabled"`
}

type dataProfileData struct {
	IsEnabled        bool `json:"isEnabled"`
	DataProfileLimit int  `json:"dataProfileLimit"`
}

type dataUsageData struct {
	IsEnabled      bool      `json:"isEnabled"`
	DataThresholds []float64 `json:"dataThresholds,omitempty"`
	DataPlan       float64   `json:"dataPlan,omitempty"`
}

// systemConfigData is a system-messages configuration as the API shows it.
type systemConfigData struct {
	DataProfile                      dataProfileData `json:"dataProfile"`
	DeviceStatus                     toggleData      `json:"deviceStatus"`
	DeviceBillingStatus              toggleData      `json:"deviceBillingStatus"`
	DeviceRemoved                    toggleData      `json:"deviceRemoved"`
	AuxiliaryCamerasConnectionStatus toggleData      `json:"auxiliaryCamerasConnectionStatus"`
	AuxiliaryCamerasPairingStatus    toggleData      `json:"auxiliaryCamerasPairingStatus"`
	PrivacyMode                      toggleData      `json:"privacyMode"`
	DataUsage                        dataUsageData   `json:"dataUsage"`
	DynamicAdjust                    toggleData      `json:"dynamicAdjust"`
}

func systemConfigOf(c store.SystemMessagesConfig) systemConfigData {
	limit := c.DataProfileLimit
	if limit == 0 {
		limit = 90
	}
	return systemConfigData{
		DataProfile:                      dataProfileData{c.DataProfile, limit},
		DeviceStatus:                     toggleData{c.DeviceStatus},
		DeviceBillingStatus:              toggleData{c.DeviceBillingStatus},
		DeviceRemoved:                    toggleData{c.DeviceRemoved},
		AuxiliaryCamerasConnectionStatus: toggleData{c.AuxiliaryCamerasConnectionStatus},
		AuxiliaryCamerasPairingStatus:    toggleData{c.AuxiliaryCamerasPairingStatus},
		PrivacyMode:                      toggleData{c.PrivacyMode},
		DataUsage:                        dataUsageData{c.DataUsage, c.DataUsageThresholds, c.DataUsagePlan},
		DynamicAdjust:                    toggleData{c.DynamicAdjust},
	}
}

type systemMessagesWebhookData struct {
	URL    string           `json:"url"`
	Config systemConfigData `json:"config"`
}

// webhookSettingsData is an organization's webhook settings as the API shows them.
type webhookSettingsData struct {
	GPSWebhookURL      []string `json:"gpsWebhookUrl"`
	EventWebhookURL    []string `json:"eventWebhookUrl"`
	EventWebhookConfig struct {
		NotifyMediaAvailable toggleData `json:"notifyMediaAvailable"`
	} `json:"eventWebhookConfig"`
	AlarmsWebhookURL    []string `json:"alarmsWebhookUrl"`
	AlarmsWebhookConfig struct {
		SubscribeForAlarmUpdates toggleData `json:"subscribeForAlarmUpdates"`
	} `json:"alarmsWebhookConfig"`
	SystemMessagesWebhook []systemMessagesWebhookData `json:"systemMessagesWebhook"`
	ActivationWebhookURL  []string                    `json:"activationWebhookUrl"`
	// AllowInsecureWebhookURLs tells whether plain http URLs are accepted.
	AllowInsecureWebhookURLs bool `json:"allowInsecureWebhookUrls"`
	// WebhookSecret is set only in the answer that created the secret.
	WebhookSecret string `json:"webhookSecret,omitempty"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func webhookSettingsOf(s *store.WebhookSettings) *webhookSettingsData {
	d := &webhookSettingsData{GPSWebhookURL: nonNil(s.GPSURLs), EventWebhookURL: nonNil(s.EventURLs),
		AlarmsWebhookURL: nonNil(s.AlarmURLs), ActivationWebhookURL: nonNil(s.ActivationURLs),
		SystemMessagesWebhook: []systemMessagesWebhookData{}, AllowInsecureWebhookURLs: s.AllowInsecureURLs}
	d.EventWebhookConfig.NotifyMediaAvailable.IsEnabled = s.NotifyMediaAvailable
	d.AlarmsWebhookConfig.SubscribeForAlarmUpdates.IsEnabled = s.SubscribeForAlarmUpdates
	for _, w := range s.SystemMessages {
		d.SystemMessagesWebhook = append(d.SystemMessagesWebhook, systemMessagesWebhookData{w.URL, systemConfigOf(w.Config)})
	}
	return d
}

// webhookURLPolicy is what the webhook URLs of an organization may be: the
// operator's private-target setting and the organization's http opt-in.
func (s *Server) webhookURLPolicy(tx *store.Tx, orgID int64) (webhooks.URLPolicy, error) {
	ws, err := tx.WebhookSettings(orgID)
	if err != nil {
		return webhooks.URLPolicy{}, err
	}
	return webhooks.URLPolicy{AllowPrivate: s.cfg.Webhooks.AllowPrivateTargets, AllowHTTP: ws.AllowInsecureURLs}, nil
}

// getWebhookSettings handles GET /organizations/{orgId}/webhook-settings.
func (s *Server) getWebhookSettings(c *gin.Context) error {
	var out *webhookSettingsData
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		ws, err := tx.WebhookSettings(o.ID)
		out = webhookSettingsOf(ws)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// replaceWebhookSettings handles POST /organizations/{orgId}/webhook-settings.
func (s *Server) replaceWebhookSettings(c *gin.Context) error { return s.saveWebhookSettings(c, true) }

// patchWebhookSettings handles PATCH /organizations/{orgId}/webhook-settings.
func (s *Server) patchWebhookSettings(c *gin.Context) error { return s.saveWebhookSettings(c, false) }

func (s *Server) saveWebhookSettings(c *gin.Context, replace bool) error {
	var body webhookSettingsBody
	if err := decode(c, &body); err != nil {
		return err
	}
	var out *webhookSettingsData
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		ws := store.DefaultWebhookSettings(o.ID)
		if !replace {
			if ws, err = tx.WebhookSettings(o.ID); err != nil {
				return err
			}
		}
		if err := body.apply(ws); err != nil {
			return err
		}
		if err := webhooks.ValidateSettings(ws, s.cfg.Webhooks.AllowPrivateTargets); err != nil {
			return err
		}
		if err := tx.PutWebhookSettings(ws); err != nil {
			return err
		}
		out = webhookSettingsOf(ws)
		out.WebhookSecret, err = s.newWebhookSecret(tx, o.ID)
		return err
	})
	if err != nil {
		return err
	}
	noStoreIfSecret(c, out.WebhookSecret)
	return ok(c, out)
}

// newWebhookSecret creates the organization's webhook secret if it has none
// and returns it; "" when it existed already (it is shown only once).
func (s *Server) newWebhookSecret(tx *store.Tx, orgID int64) (string, error) {
	sec, created, err := tx.EnsureWebhookSecret(orgID, webhooks.NewSalt)
	if err != nil || !created {
		return "", err
	}
	return webhooks.Secret(s.key, orgID, sec.Salt), nil
}

// noStoreIfSecret keeps answers that show a secret out of caches.
func noStoreIfSecret(c *gin.Context, secret string) {
	if secret != "" {
		c.Header("Cache-Control", "no-store")
	}
}

type rotatedSecretData struct {
	WebhookSecret string `json:"webhookSecret"`
	// PreviousSecretValidUntil is when deliveries stop carrying a signature
	// under the previous secret; empty when there was none.
	PreviousSecretValidUntil string `json:"previousSecretValidUntil,omitempty"`
}

// rotateWebhookSecret handles POST /organizations/{orgId}/webhook-secret/rotate.
func (s *Server) rotateWebhookSecret(c *gin.Context) error {
	var out rotatedSecretData
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		sec, err := tx.RotateWebhookSecret(o.ID, webhooks.NewSalt(), webhooks.SecretGrace)
		if err != nil {
			return err
		}
		out = rotatedSecretData{WebhookSecret: webhooks.Secret(s.key, o.ID, sec.Salt), PreviousSecretValidUntil: isoTime(sec.PreviousUntil)}
		return nil
	})
	if err != nil {
		return err
	}
	noStoreIfSecret(c, out.WebhookSecret)
	return ok(c, out)
}
