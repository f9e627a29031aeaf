package cloudapi

import (
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
	*webhookSettingsData
	Device deviceConfigDTO `json:"device"`
	Events eventConfigDTO  `json:"events"`
}

// defaultSettings handles GET /organizations/{orgId}/default-settings.
func (s *Server) defaultSettings(c *gin.Context) {
	var out defaultSettingsDTO
	err := s.view(func(tx *store.Tx) error {
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
			retentionDTO: toRetentionDTO(o.Retention), webhookSettingsData: webhookSettingsOf(ws),
			Device: toDeviceConfigDTO(orgDeviceConfig(orgSet)), Events: toEventConfigDTO(orgEventConfig(orgSet))}
		if isGuest(principal(c), o) {
			out.webhookSettingsData = nil
		}
		return nil
	})
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, out)
}
