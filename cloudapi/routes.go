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
	_, _ = write, partner

	v2.GET("/openapi.json", s.openapiDoc)

	// Sessions and identity.
	v2.POST("/authenticate", s.login)
	v2.GET("/me", auth, s.me)
}

// isoTime formats t as the API's ISO 8601 UTC timestamp with milliseconds.
func isoTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
