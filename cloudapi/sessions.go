package cloudapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

type authenticateRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

type authenticateResponse struct {
	Token          string `json:"token"`
	OrganizationID int64  `json:"organizationId,omitempty"`
	PartnerID      int64  `json:"partnerId,omitempty"`
	ExpiresAt      string `json:"expiresAt"`
}

// login handles POST /authenticate: e-mail and password for a user token.
// Guessing is braked per e-mail address and per client address before any
// password is checked (signin.go), and an unknown e-mail costs the same
// bcrypt work as a wrong password, so the answers reveal nothing about
// which e-mail addresses exist.
func (s *Server) login(c *gin.Context) error {
	var req authenticateRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Email) == "" {
		return badField("email", "is required")
	}
	if req.Password == "" {
		return badField("password", "is required")
	}
	account := "email:" + store.NormalizeEmail(req.Email)
	if err := s.admitSignin(c, endpointAuthenticate, account); err != nil {
		return err
	}
	var u *store.User
	err := s.view(c, func(tx *store.Tx) error {
		var err error
		u, err = tx.UserByEmail(req.Email)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		// The store cannot say (an outage: 503); the guess is not counted.
		s.signinUnchecked(c, account)
		return err
	}
	var hash []byte
	if err == nil && len(u.PasswordHash) > 0 {
		hash = u.PasswordHash
	}
	match, err := s.passwords.compare(c.Request.Context(), hash, req.Password)
	if err != nil {
		s.signinFailed(endpointAuthenticate, reasonBusy)
		s.signinUnchecked(c, account)
		return err
	}
	if !match {
		s.signinFailed(endpointAuthenticate, reasonBadCredentials)
		return unauthorized("the e-mail or password is wrong")
	}
	s.signinSucceeded(c, account)
	p := Principal{Kind: kindUser, UserID: u.ID, Email: u.Email, PartnerID: u.PartnerID,
		OrganizationID: u.OrganizationID, AccessLevel: u.AccessLevel, Generation: u.TokenGeneration}
	tok, exp, err := s.issue(p, s.cfg.Auth.UserTokenTTL)
	if err != nil {
		return err
	}
	return ok(c, authenticateResponse{Token: tok, OrganizationID: u.OrganizationID, PartnerID: u.PartnerID, ExpiresAt: isoTime(exp)})
}

type meResponse struct {
	Me     meDetails `json:"me"`
	Entity string    `json:"entity"`
}

// meDetails is the caller: for a partner the contract's partner object (id,
// name, alarmsCount), otherwise its user object (id, email, role). role is
// one of the contract's: "user" for an organization user, "administrator"
// for the organization admin token of SSO, "restricted" for a scoped token.
// A token that belongs to no user (the admin token) has id 0.
type meDetails struct {
	ID             int64  `json:"id"`
	Email          string `json:"email,omitempty"`
	Name           string `json:"name,omitempty"`
	PartnerID      int64  `json:"partnerId,omitempty"`
	PartnerName    string `json:"partnerName,omitempty"`
	OrganizationID int64  `json:"organizationId,omitempty"`
	Organization   string `json:"organizationName,omitempty"`
	AccessLevel    string `json:"accessLevel,omitempty"`
	Role           string `json:"role"`
	Scope          *Scope `json:"scope,omitempty"`
	// AlarmsCount is the number of unread alarms the caller sees; the
	// reference contract gives it for a partner.
	AlarmsCount *int `json:"alarmsCount,omitempty"`
	// Measurement and TimeFormat are the user's regional settings (PUT
	// /users/update-settings), absent until set.
	Measurement int `json:"measurement,omitempty"`
	TimeFormat  int `json:"timeFormat,omitempty"`
}

// me handles GET /me: who holds the token.
func (s *Server) me(c *gin.Context) error {
	p := principal(c)
	d := meDetails{ID: p.UserID, Email: p.Email, PartnerID: p.PartnerID, OrganizationID: p.OrganizationID,
		AccessLevel: p.AccessLevel, Scope: p.Scope}
	entity := "user"
	switch {
	case p.IsPartner():
		entity, d.Role = "partner", "partner"
	case p.Kind == kindAdmin, p.Kind == kindClient:
		// An organization's OAuth client acts as its administrator.
		d.Role = "administrator"
	case p.Kind == kindScoped:
		d.Role = "restricted"
	default:
		d.Role = "user"
	}
	err := s.view(c, func(tx *store.Tx) error {
		if p.UserID != 0 {
			if u, err := tx.User(p.UserID); err == nil {
				d.Name, d.Measurement, d.TimeFormat = u.Name, u.Settings.Measurement, u.Settings.TimeFormat
			}
		}
		if p.PartnerID != 0 {
			if pt, err := tx.Partner(p.PartnerID); err == nil {
				d.PartnerName = pt.Name
			}
		}
		if p.IsPartner() {
			// The contract's partner object names the partner when the user has no name.
			if d.Name == "" {
				d.Name = d.PartnerName
			}
			n := unreadAlarms(tx, p, store.AlarmFilter{})
			d.AlarmsCount = &n
		}
		if p.OrganizationID != 0 {
			if o, err := tx.Organization(p.OrganizationID); err == nil {
				d.Organization = o.Name
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, meResponse{Me: d, Entity: entity})
}

// healthz answers while the process serves HTTP.
func (s *Server) healthz(c *gin.Context) error {
	return okBody(c, gin.H{"status": "ok", "requestId": requestID(c)})
}

// openapiDoc serves the OpenAPI document of the whole /v2 API.
func (s *Server) openapiDoc(c *gin.Context) error {
	c.Data(http.StatusOK, "application/json; charset=utf-8", s.openapi)
	return nil
}
