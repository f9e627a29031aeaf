package cloudapi

import (
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
)

// Branding of the portal fleetcam serves. fleetcam keeps no per-partner
// branding: the one portal is its own, under the host of publicURL.
const (
	whiteLabelName       = "fleetcam"
	whiteLabelThemeName  = "blue"
	whiteLabelThemeColor = "#2196f3"
)

// whiteLabelDTO is a white label portal as the reference contract gives it.
// fleetcam stores no images, privacy policy or EULA, so those are absent.
type whiteLabelDTO struct {
	Name          string `json:"whiteLabelName"`
	DomainAddress string `json:"whiteLabelDomainAddress"`
	InfoEmail     string `json:"whiteLabelInfoEmail,omitempty"`
	ThemeName     string `json:"whiteLabelThemeName"`
	ThemeColor    string `json:"whiteLabelThemeColor"`
}

// whiteLabelInformation handles GET /white-label-information/{domain},
// which the sign-in page reads before anyone is signed in. The only portal
// is fleetcam's own at the host of publicURL; any other domain is 404.
func (s *Server) whiteLabelInformation(c *gin.Context) error {
	domain := strings.ToLower(strings.TrimSpace(c.Param("whiteLabelDomainAddress")))
	if domain == "" || strings.ContainsAny(domain, "/@ ") {
		return badField("whiteLabelDomainAddress", "must be a domain name such as fleet.example.com")
	}
	u, err := url.Parse(s.cfg.PublicURL)
	if err != nil || s.cfg.PublicURL == "" || !strings.EqualFold(u.Host, domain) && !strings.EqualFold(u.Hostname(), domain) {
		return notFound("white label portal " + domain)
	}
	return ok(c, whiteLabelDTO{Name: whiteLabelName, DomainAddress: domain, InfoEmail: s.cfg.SMTP.From,
		ThemeName: whiteLabelThemeName, ThemeColor: whiteLabelThemeColor})
}
