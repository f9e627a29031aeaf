package cloudapi

import (
	"time"

	"github.com/gin-gonic/gin"
)

// routes is the API's index: every route of fleetcam, top to bottom. Each
// chain reads left to right: scope declaration (scoped tokens allowed),
// authentication, access checks, handler.
func (s *Server) routes(r *gin.Engine) {
	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	if s.metricsHandler != nil {
		r.GET("/metrics", gin.WrapH(s.metricsHandler))
	}

	v2 := r.Group("/v2")
	auth := s.authenticate
	write := s.writer
	partner := s.partnerOnly
	// anyScope admits a scoped token of any feature, for reading the
	// devices of its scope.
	anyScope := scoped(allFeatures...)

	v2.GET("/openapi.json", s.openapiDoc)

	// Sessions and identity.
	v2.POST("/authenticate", s.login)
	v2.GET("/me", anyScope, auth, s.me)
	v2.POST("/scoped-token", auth, s.createScopedToken)
	v2.POST("/reset-password/:token", s.resetPassword)

	// Organizations. GET /organizations/sso authenticates with the
	// organization's own SSO JWT, not an API token.
	v2.GET("/organizations/sso", s.sso)
	v2.POST("/organizations", auth, partner, write, s.createOrganization)
	v2.GET("/organizations", auth, s.listOrganizations)
	v2.GET("/organizations/:orgId", auth, s.getOrganization)
	v2.PATCH("/organizations/:orgId", auth, write, s.updateOrganization)
	v2.GET("/organizations/:orgId/default-settings", auth, s.defaultSettings)

	// Users: partner contacts and organization users.
	v2.POST("/partners/:partnerId/contacts", auth, partner, write, s.createPartnerContact)
	v2.GET("/partners/:partnerId/contacts", auth, partner, s.listPartnerContacts)
	v2.GET("/partner-contacts", auth, partner, s.listPartnerContacts)
	v2.POST("/organizations/:orgId/users", auth, write, s.createOrganizationUser)
	v2.GET("/organizations/:orgId/users", auth, s.listOrganizationUsers)

	// Device inventory and groups.
	v2.POST("/organizations/:orgId/devices", auth, write, s.addDevice)
	v2.GET("/organizations/:orgId/devices", anyScope, auth, s.listOrganizationDevices)
	v2.DELETE("/organizations/:orgId/devices/:imei", auth, write, s.removeDevice)
	v2.GET("/partners/devices", auth, partner, s.listPartnerDevices)
	v2.GET("/partner-devices", auth, partner, s.listPartnerDevices)
	v2.GET("/devices/:imei", anyScope, auth, s.getDevice)
	v2.PATCH("/devices/:imei", auth, write, s.updateDevice)
	v2.GET("/organizations/:orgId/groups", auth, s.listGroups)
	v2.POST("/organizations/:orgId/groups", auth, write, s.createGroup)
	v2.POST("/organizations/:orgId/groups/:groupId/devices", auth, write, s.assignGroupDevices)

	// Audit log.
	v2.GET("/audit-logs", auth, s.listAuditLogs)
}

// isoTime formats t as the API's ISO 8601 UTC timestamp with milliseconds.
func isoTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
