package cloudapi

import (
	"net/http"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Tenancy: a caller never sees another partner's or organization's data.
// Whatever is not the caller's is answered exactly like what does not exist
// (404), so ids cannot be probed.

// canSeeOrg reports whether p may see organization o.
func canSeeOrg(p Principal, o *store.Organization) bool {
	switch {
	case p.IsPartner():
		return o.HasPartner(p.PartnerID)
	case p.Kind == kindScoped:
		return p.OrganizationID == o.ID
	default:
		return p.inOrg(o.ID)
	}
}

// canSeeDevice reports whether p may see device d. A partner sees only its own
// devices, also in an organization shared with other partners; a scoped token
// sees only the devices of its scope.
func canSeeDevice(tx *store.Tx, p Principal, d *store.Device) bool {
	switch {
	case p.IsPartner():
		return d.PartnerID == p.PartnerID
	case p.Kind == kindScoped:
		if p.OrganizationID != d.OrganizationID || p.Scope == nil ||
			p.Scope.PartnerID != 0 && p.Scope.PartnerID != d.PartnerID {
			return false
		}
		switch {
		case p.Scope.IMEI != "":
			return p.Scope.IMEI == d.IMEI
		case p.Scope.GroupID != 0:
			return p.Scope.GroupID == d.GroupID
		}
		return p.Scope.OrganizationID == d.OrganizationID
	default:
		return p.inOrg(d.OrganizationID)
	}
}

// org returns the organization of the path parameter orgId if the caller may see it.
func (s *Server) org(c *gin.Context, tx *store.Tx) (*store.Organization, error) {
	id, err := pathInt(c, "orgId")
	if err != nil {
		return nil, notFound("organization")
	}
	return s.orgByID(c, tx, id)
}

// orgByID returns organization id if the caller may see it, and on a route
// marked host only if the caller may change it.
func (s *Server) orgByID(c *gin.Context, tx *store.Tx, id int64) (*store.Organization, error) {
	o, err := readOrg(c, tx, id)
	if err != nil || !canSeeOrg(principal(c), o) {
		return nil, notFound("organization")
	}
	if err := checkHost(c, o); err != nil {
		return nil, err
	}
	return o, nil
}

// isGuest reports whether p is a partner that shares organization o
// without having created it: a guest there, which may manage its own
// devices but not the organization.
func isGuest(p Principal, o *store.Organization) bool {
	return p.IsPartner() && p.PartnerID != o.PartnerID
}

// hostOnlyKey marks a call the route table guards with hostOnly.
const hostOnlyKey = "fleetcam.hostOnly"

// hostOnly guards the writes of an organization's settings and records, and
// the reads of the host's configuration (webhook URLs, users), which the
// route table names: they are the host's, the partner that created the
// organization. Every organization such a call names, in its path, a
// query parameter or its body, is checked as the handler resolves it
// (orgByID, checkHost): a guest partner of a shared organization gets 403
// with the reason, and the transaction is not committed. The organization
// of the path is checked before the handler runs; one the caller cannot see
// stays 404.
func (s *Server) hostOnly(c *gin.Context) {
	c.Set(hostOnlyKey, true)
	if c.Param("orgId") == "" {
		return
	}
	err := s.view(c, func(tx *store.Tx) error {
		_, err := s.org(c, tx)
		return err
	})
	if err != nil {
		s.fail(c, err)
	}
}

// checkHost refuses a guest partner of organization o a call the route
// table marks host.
func checkHost(c *gin.Context, o *store.Organization) error {
	if !c.GetBool(hostOnlyKey) || !isGuest(principal(c), o) {
		return nil
	}
	if c.Request.Method == http.MethodGet {
		return forbidden("only the partner that created organization %d can see these settings", o.ID)
	}
	return forbidden("only the partner that created organization %d can change its settings", o.ID)
}

// device returns the device of the path parameter imei if the caller may see it.
func (s *Server) device(c *gin.Context, tx *store.Tx) (*store.Device, error) {
	return s.deviceByIMEI(c, tx, c.Param("imei"))
}

// deviceByIMEI returns the device with imei if the caller may see it.
func (s *Server) deviceByIMEI(c *gin.Context, tx *store.Tx, imei string) (*store.Device, error) {
	d, err := readDevice(c, tx, imei)
	if err != nil || !canSeeDevice(tx, principal(c), d) {
		return nil, notFound("device " + imei)
	}
	return d, nil
}

// deviceFilter narrows a device listing to what the caller may see.
func deviceFilter(p Principal, orgID int64) store.DeviceFilter {
	f := store.DeviceFilter{OrganizationID: orgID}
	if p.IsPartner() {
		f.PartnerID = p.PartnerID
	}
	if p.Kind == kindScoped && p.Scope != nil {
		f.PartnerID = p.Scope.PartnerID
		switch {
		case p.Scope.IMEI != "":
			f.IMEI = p.Scope.IMEI
		case p.Scope.GroupID != 0:
			f.GroupID = p.Scope.GroupID
		}
	}
	return f
}

// update runs fn in a write transaction on behalf of the caller. It does
// not commit once the call has timed out (withTimeout has answered 503).
func (s *Server) update(c *gin.Context, fn func(tx *store.Tx) error) error {
	return s.store.Update(c.Request.Context(), principal(c).actor(requestID(c)), fn)
}

// view runs fn in a read transaction for the call.
func (s *Server) view(c *gin.Context, fn func(tx *store.Tx) error) error {
	return s.store.View(c.Request.Context(), fn)
}
