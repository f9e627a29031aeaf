package cloudapi

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// organizationDTO is an organization as the API shows it.
type organizationDTO struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	PartnerID    int64  `json:"partnerId"`
	ResellerName string `json:"resellerName"`
	// PartnerIDs are the partners whose devices the organization holds; more
	// than the creating partner only when exclusivePartnerOnly is false.
	PartnerIDs []int64 `json:"partnerIds"`
	// InvitedPartnerIDs are the partners invited to share the organization
	// that have not answered yet, as the creating partner named them; shown
	// to the creating partner only.
	InvitedPartnerIDs            []int64 `json:"invitedPartnerIds,omitempty"`
	ExclusivePartnerOnly         bool    `json:"exclusivePartnerOnly"`
	IsOrganizationProfileEnabled bool    `json:"isOrganizationProfileEnabled"`
	retentionDTO
	LiveVideoTimeoutSeconds int    `json:"liveVideoTimeoutSeconds,omitempty"`
	DefaultDataProfileID    int64  `json:"defaultDataProfileId,omitempty"`
	CreatedAt               string `json:"createdAt"`
	// DevicesCount (the devices the caller sees) and UsersCount are given by
	// GET /organizations/{orgId} only.
	DevicesCount *int `json:"devicesCount,omitempty"`
	UsersCount   *int `json:"usersCount,omitempty"`
	// AlarmsCount is the number of unread alarms of the organization the caller sees.
	AlarmsCount int `json:"alarmsCount"`
	// DeIDAnalyticsAllowed and HasGeotabUserSetup are members the reference
	// contract requires; fleetcam offers neither de-identified analytics nor
	// a Geotab integration, so both are always false.
	DeIDAnalyticsAllowed bool `json:"deIdAnalyticsAllowed"`
	HasGeotabUserSetup   bool `json:"hasGeotabUserSetup"`
}

// unreadAlarms counts the unread alarms of f that p sees: a partner sees
// those of its own devices.
func unreadAlarms(tx *store.Tx, p Principal, f store.AlarmFilter) int {
	unread := false
	f.Read = &unread
	if p.IsPartner() {
		f.PartnerID = p.PartnerID
	}
	_, n, err := tx.Alarms(f, store.Sort{}, store.Page{Limit: 1})
	if err != nil {
		return 0
	}
	return n
}

// unreadAlarmsByOrg counts, per organization of orgs, the unread alarms p
// sees, reading the alarms once for all of them.
func unreadAlarmsByOrg(tx *store.Tx, p Principal, orgs []store.Organization) map[int64]int {
	ids := make(map[int64]bool, len(orgs))
	for _, o := range orgs {
		ids[o.ID] = true
	}
	unread := false
	f := store.AlarmFilter{OrganizationIDs: ids, Read: &unread}
	if p.IsPartner() {
		f.PartnerID = p.PartnerID
	}
	counts := make(map[int64]int, len(orgs))
	alarms, _, err := tx.Alarms(f, store.Sort{}, store.Page{}) // no limit: every unread alarm
	if err != nil {
		return counts
	}
	for _, a := range alarms {
		counts[a.OrganizationID]++
	}
	return counts
}

// retentionDTO is an organization's purge days and retention times, as
// every answer that shows an organization or its default settings gives
// them: camera purge days read as the general purge days unless set apart,
// and deviceRetentionMinutes is the retention the organization's devices
// are given, store.DefaultDeviceRetentionMinutes for an organization that
// never set one (store.Retention.DeviceMinutes).
type retentionDTO struct {
	PurgeDays                 int `json:"purgeDays"`
	PurgeDaysFrontCamera      int `json:"purgeDaysFrontCamera"`
	PurgeDaysRearCamera       int `json:"purgeDaysRearCamera"`
	PurgeDaysAuxiliaryCameras int `json:"purgeDaysAuxiliaryCameras"`
	DeviceRetentionMinutes    int `json:"deviceRetentionMinutes"`
}

func toRetentionDTO(r store.Retention) retentionDTO {
	return retentionDTO{PurgeDays: r.PurgeDays, PurgeDaysFrontCamera: r.MediaPurgeDays(1),
		PurgeDaysRearCamera: r.MediaPurgeDays(2), PurgeDaysAuxiliaryCameras: r.MediaPurgeDays(50),
		DeviceRetentionMinutes: r.DeviceMinutes()}
}

// toOrganizationDTO renders o for p; unread is its unread alarms p sees.
func toOrganizationDTO(tx *store.Tx, p Principal, o *store.Organization, unread int) organizationDTO {
	d := organizationDTO{ID: o.ID, Name: o.Name, PartnerID: o.PartnerID, PartnerIDs: o.PartnerIDs,
		ExclusivePartnerOnly: o.ExclusivePartnerOnly, IsOrganizationProfileEnabled: o.IsOrganizationProfileEnabled,
		retentionDTO: toRetentionDTO(o.Retention), LiveVideoTimeoutSeconds: o.LiveVideoTimeoutSeconds,
		DefaultDataProfileID: o.DefaultDataProfileID, CreatedAt: isoTime(o.CreatedAt), AlarmsCount: unread}
	if r, err := tx.Partner(o.PartnerID); err == nil {
		d.ResellerName = r.Name
	}
	if p.IsPartner() && p.PartnerID == o.PartnerID {
		d.InvitedPartnerIDs = o.InvitedPartnerIDs
	}
	return d
}

type createOrganizationRequest struct {
	Name                 string `json:"name"`
	ExclusivePartnerOnly *bool  `json:"exclusivePartnerOnly"`
}

// ssoSecretHolder admits the callers that may hold an ssoSecret, which
// signs SSO requests for admin tokens with the editor's rights: callers at
// the editor access level, as for OAuth clients (oauthManager).
func (s *Server) ssoSecretHolder(c *gin.Context) {
	if p := principal(c); p.AccessLevel != store.AccessEditor {
		s.fail(c, forbidden("the %s access level cannot create an organization: its ssoSecret gives admin tokens with the editor's rights", levelName(p)))
		return
	}
	c.Next()
}

// createOrganizationResult carries the one and only sight of the ssoSecret.
type createOrganizationResult struct {
	OrganizationID int64  `json:"organizationId"`
	SSOSecret      string `json:"ssoSecret"`
}

// createOrganizationBody repeats the result at the top level, where the
// reference contract of this call has it, besides the usual data member.
type createOrganizationBody struct {
	Data createOrganizationResult `json:"data"`
	createOrganizationResult
	RequestID string `json:"requestId"`
}

// createOrganization handles POST /organizations (partners only): a new
// organization of the caller's partner and its ssoSecret, shown once.
func (s *Server) createOrganization(c *gin.Context) error {
	var req createOrganizationRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	name, err := requiredName("name", req.Name)
	if err != nil {
		return err
	}
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return err
	}
	p := principal(c)
	o := &store.Organization{Name: name, PartnerID: p.PartnerID, ExclusivePartnerOnly: true, SSOSalt: salt}
	if req.ExclusivePartnerOnly != nil {
		o.ExclusivePartnerOnly = *req.ExclusivePartnerOnly
	}
	if err := s.update(c, func(tx *store.Tx) error { return tx.AddOrganization(o) }); err != nil {
		return err
	}
	res := createOrganizationResult{OrganizationID: o.ID, SSOSecret: s.ssoSecret(o.ID, salt)}
	return okBody(c, createOrganizationBody{Data: res, createOrganizationResult: res, RequestID: requestID(c)})
}

// listOrganizations handles GET /organizations: a partner's organizations
// (also those shared with it), or the caller's own organization.
func (s *Server) listOrganizations(c *gin.Context) error {
	pg, err := s.page(c)
	if err != nil {
		return err
	}
	p := principal(c)
	var out []organizationDTO
	var total int
	f := store.OrganizationFilter{PartnerID: p.PartnerID}
	if !p.IsPartner() {
		f = store.OrganizationFilter{IDs: map[int64]bool{p.OrganizationID: true}}
		for _, id := range p.ExternalOrgIDs {
			f.IDs[id] = true
		}
	}
	err = s.view(c, func(tx *store.Tx) error {
		orgs, n, err := tx.Organizations(f, pg)
		if err != nil {
			return err
		}
		total = n
		unread := unreadAlarmsByOrg(tx, p, orgs)
		for i := range orgs {
			out = append(out, toOrganizationDTO(tx, p, &orgs[i], unread[orgs[i].ID]))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return okPage(c, out, total, pg)
}

// getOrganization handles GET /organizations/{orgId}.
func (s *Server) getOrganization(c *gin.Context) error {
	var out organizationDTO
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		out = toOrganizationDTO(tx, principal(c), o, unreadAlarmsByOrg(tx, principal(c), []store.Organization{*o})[o.ID])
		_, devices, err := tx.Devices(deviceFilter(principal(c), o.ID), store.Page{Limit: 1})
		if err != nil {
			return err
		}
		_, users, err := tx.Users(store.UserFilter{OrganizationID: o.ID}, store.Page{Limit: 1})
		if err != nil {
			return err
		}
		out.DevicesCount, out.UsersCount = &devices, &users
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// updateOrganizationRequest is PATCH /organizations/{orgId}: members left
// out keep their value.
type updateOrganizationRequest struct {
	Name                         *string  `json:"name"`
	ExclusivePartnerOnly         *bool    `json:"exclusivePartnerOnly"`
	PartnerIDs                   *[]int64 `json:"partnerIds"`
	IsOrganizationProfileEnabled *bool    `json:"isOrganizationProfileEnabled"`
	PurgeDays                    *int     `json:"purgeDays"`
	PurgeDaysFrontCamera         *int     `json:"purgeDaysFrontCamera"`
	PurgeDaysRearCamera          *int     `json:"purgeDaysRearCamera"`
	PurgeDaysAuxiliaryCameras    *int     `json:"purgeDaysAuxiliaryCameras"`
	DeviceRetentionMinutes       *int     `json:"deviceRetentionMinutes"`
	LiveVideoTimeoutSeconds      *int     `json:"liveVideoTimeoutSeconds"`
	DefaultDataProfileID         *int64   `json:"defaultDataProfileId"`
}

// Bounds of organization settings.
const (
	maxPurgeDays              = 366
	minDeviceRetentionMinutes = store.MinCameraRetentionMinutes
	maxDeviceRetentionMinutes = store.MaxCameraRetentionMinutes
	minLiveVideoTimeout       = 30
	maxLiveVideoTimeout       = 3600
	maxNameLength             = 100
)

// apply validates req and writes it onto o. Changing who may hold devices
// (exclusivePartnerOnly, partnerIds) is for the creating partner only.
// partnerIds is the whole list of partners the organization is shared
// with: a partner already sharing it stays, one left out leaves, and any
// other id becomes an invitation that partner accepts or declines
// (invitations.go). Whether such a partner exists is not looked up, so the
// answer is the same for every id.
func (req *updateOrganizationRequest) apply(p Principal, o *store.Organization) error {
	if *req == (updateOrganizationRequest{}) {
		return badRequest("the request body must name at least one member to change")
	}
	if req.Name != nil {
		name, err := requiredName("name", *req.Name)
		if err != nil {
			return err
		}
		o.Name = name
	}
	for _, f := range []struct {
		name string
		v    *int
		dst  *int
	}{
		{"purgeDays", req.PurgeDays, &o.Retention.PurgeDays},
		{"purgeDaysFrontCamera", req.PurgeDaysFrontCamera, &o.Retention.PurgeDaysFrontCamera},
		{"purgeDaysRearCamera", req.PurgeDaysRearCamera, &o.Retention.PurgeDaysRearCamera},
		{"purgeDaysAuxiliaryCameras", req.PurgeDaysAuxiliaryCameras, &o.Retention.PurgeDaysAuxiliaryCameras},
	} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 || *f.v > maxPurgeDays {
			return badField(f.name, fmt.Sprintf("must be an integer from 1 to %d (days)", maxPurgeDays))
		}
		*f.dst = *f.v
	}
	if v := req.DeviceRetentionMinutes; v != nil {
		if *v < minDeviceRetentionMinutes || *v > maxDeviceRetentionMinutes {
			return badField("deviceRetentionMinutes", fmt.Sprintf("must be an integer from %d to %d (minutes)", minDeviceRetentionMinutes, maxDeviceRetentionMinutes))
		}
		o.Retention.DeviceRetentionMinutes = *v
	}
	if v := req.LiveVideoTimeoutSeconds; v != nil {
		if *v < minLiveVideoTimeout || *v > maxLiveVideoTimeout {
			return badField("liveVideoTimeoutSeconds", fmt.Sprintf("must be an integer from %d to %d (seconds)", minLiveVideoTimeout, maxLiveVideoTimeout))
		}
		o.LiveVideoTimeoutSeconds = *v
	}
	if v := req.DefaultDataProfileID; v != nil {
		if *v < 0 {
			return badField("defaultDataProfileId", "must be a data profile id, or 0 for none")
		}
		o.DefaultDataProfileID = *v
	}
	if req.IsOrganizationProfileEnabled != nil {
		o.IsOrganizationProfileEnabled = *req.IsOrganizationProfileEnabled
	}
	if req.ExclusivePartnerOnly == nil && req.PartnerIDs == nil {
		return nil
	}
	if !p.IsPartner() || p.PartnerID != o.PartnerID {
		return forbidden("only the partner that created the organization can change exclusivePartnerOnly and partnerIds")
	}
	if req.ExclusivePartnerOnly != nil {
		o.ExclusivePartnerOnly = *req.ExclusivePartnerOnly
		if o.ExclusivePartnerOnly && req.PartnerIDs == nil {
			o.PartnerIDs, o.InvitedPartnerIDs = []int64{o.PartnerID}, nil
		}
	}
	if req.PartnerIDs == nil {
		return nil
	}
	if len(*req.PartnerIDs) > store.MaxInvitedPartners {
		return badField("partnerIds", fmt.Sprintf("must hold at most %d partner ids", store.MaxInvitedPartners))
	}
	shared, invited := []int64{o.PartnerID}, []int64{}
	for _, id := range *req.PartnerIDs {
		switch {
		case id <= 0:
			return badField("partnerIds", "must hold partner ids")
		case slices.Contains(shared, id) || slices.Contains(invited, id):
		case o.HasPartner(id):
			shared = append(shared, id)
		default:
			invited = append(invited, id)
		}
	}
	if o.ExclusivePartnerOnly && len(shared)+len(invited) > 1 {
		return badField("partnerIds", "can name other partners only when exclusivePartnerOnly is false")
	}
	o.PartnerIDs, o.InvitedPartnerIDs = shared, invited
	return nil
}

// updateOrganization handles PATCH /organizations/{orgId}; a guest partner
// of a shared organization is refused by the route table (hostOnly).
func (s *Server) updateOrganization(c *gin.Context) error {
	var req updateOrganizationRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	p := principal(c)
	var out organizationDTO
	var pushed []string
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		if err := req.apply(p, o); err != nil {
			return err
		}
		if err := tx.UpdateOrganization(o); err != nil {
			return err
		}
		out = toOrganizationDTO(tx, p, o, unreadAlarmsByOrg(tx, p, []store.Organization{*o})[o.ID])
		if req.DeviceRetentionMinutes != nil {
			// The SD-card retention is part of the devices' configuration.
			pushed, err = tx.OrgIMEIs(o.ID)
		}
		return err
	})
	if err != nil {
		return err
	}
	s.pushConfig(pushed...)
	return ok(c, out)
}

// requiredName trims v and checks it is a non-empty name of at most maxNameLength characters.
func requiredName(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return "", badField(field, "is required")
	case utf8.RuneCountInString(v) > maxNameLength:
		return "", badField(field, fmt.Sprintf("must be at most %d characters", maxNameLength))
	}
	return v, nil
}
