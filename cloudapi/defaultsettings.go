package cloudapi

import (
	"encoding/json"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// defaultSettingsDTO is every organization-level default in one object, in
// the reference contract's shape: the webhook settings at the top level
// (gpsWebhookUrl, eventWebhookUrl, …), device settings with privacy in the
// shape of GET /organizations/{orgId}/device-settings, event settings in the
// shape of GET /organizations/{orgId}/event-settings, and the purge days and
// retention times. They apply to all current and future devices of the
// organization, whichever partner they come from. A guest partner of a
// shared organization gets them without the webhook settings, which are
// the host's.
type defaultSettingsDTO struct {
	OrganizationID               int64 `json:"organizationId"`
	IsOrganizationProfileEnabled bool  `json:"isOrganizationProfileEnabled"`
	retentionDTO
	*defaultWebhooksDTO
	Device deviceConfigDTO `json:"device"`
	Events eventConfigDTO  `json:"events"`
}

// defaultWebhooksDTO is the webhook settings as the default settings show
// them: the reference contract gives the URL lists and configurations there
// as JSON text in a string ("[\"https://…\"]"), where GET webhook-settings
// gives them as JSON.
type defaultWebhooksDTO struct {
	GPSWebhookURL            string   `json:"gpsWebhookUrl"`
	EventWebhookURL          string   `json:"eventWebhookUrl"`
	EventWebhookConfig       string   `json:"eventWebhookConfig"`
	AlarmsWebhookURL         string   `json:"alarmsWebhookUrl"`
	AlarmsWebhookConfig      string   `json:"alarmsWebhookConfig"`
	SystemMessagesWebhook    string   `json:"systemMessagesWebhook"`
	ActivationWebhookURL     []string `json:"activationWebhookUrl"`
	AllowInsecureWebhookURLs bool     `json:"allowInsecureWebhookUrls"`
}

func toDefaultWebhooksDTO(w *webhookSettingsData) *defaultWebhooksDTO {
	return &defaultWebhooksDTO{
		GPSWebhookURL: jsonText(w.GPSWebhookURL), EventWebhookURL: jsonText(w.EventWebhookURL),
		EventWebhookConfig: jsonText(w.EventWebhookConfig), AlarmsWebhookURL: jsonText(w.AlarmsWebhookURL),
		AlarmsWebhookConfig: jsonText(w.AlarmsWebhookConfig), SystemMessagesWebhook: jsonText(w.SystemMessagesWebhook),
		ActivationWebhookURL: w.ActivationWebhookURL, AllowInsecureWebhookURLs: w.AllowInsecureWebhookURLs,
	}
}

// jsonText is v as JSON text; a nil list is [].
func jsonText(v any) string {
	raw, err := json.Marshal(v)
	if err != nil || string(raw) == "null" {
		return "[]"
	}
	return string(raw)
}

// defaultSettings handles GET /organizations/{orgId}/default-settings.
func (s *Server) defaultSettings(c *gin.Context) error {
	var out defaultSettingsDTO
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		orgSet, err := tx.OrgSettings(o.ID)
		if err != nil {
			return err
		}
		ws, err := tx.WebhookSettings(o.ID)
		if err != nil {
			return err
		}
		out = defaultSettingsDTO{OrganizationID: o.ID, IsOrganizationProfileEnabled: o.IsOrganizationProfileEnabled,
			retentionDTO: toRetentionDTO(o.Retention), defaultWebhooksDTO: toDefaultWebhooksDTO(webhookSettingsOf(ws)),
			Device: toDeviceConfigDTO(orgDeviceConfig(orgSet)), Events: toEventConfigDTO(orgEventConfig(orgSet))}
		if isGuest(principal(c), o) {
			out.defaultWebhooksDTO = nil
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}
