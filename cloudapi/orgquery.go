package cloudapi

import (
	"fmt"
	"strconv"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Organization selection of the organization-wide calls (drivers, driving
// history, alarms, recipients): an organization user acts on its own
// organization; a partner names one with the organizationId query
// parameter, which writes require and reads may leave out to cover all of
// the partner's organizations. An organization that does not exist or is
// not the caller's is 404.

// queryOrgID reads the organizationId query parameter (0 when absent).
func queryOrgID(c *gin.Context) (int64, error) {
	v, has := c.GetQuery("organizationId")
	if !has {
		return 0, nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, badField("organizationId", "must be a positive integer")
	}
	return id, nil
}

// readOrgs returns the organizations a read covers, by id.
func (s *Server) readOrgs(c *gin.Context, tx *store.Tx) (map[int64]*store.Organization, error) {
	id, err := queryOrgID(c)
	if err != nil {
		return nil, err
	}
	p := principal(c)
	if id == 0 && !p.IsPartner() {
		id = p.OrganizationID
	}
	if id != 0 {
		o, err := s.orgByID(c, tx, id)
		if err != nil {
			return nil, err
		}
		return map[int64]*store.Organization{o.ID: o}, nil
	}
	orgs, _, err := tx.Organizations(store.OrganizationFilter{PartnerID: p.PartnerID}, store.Page{})
	if err != nil {
		return nil, err
	}
	out := make(map[int64]*store.Organization, len(orgs))
	for i := range orgs {
		out[orgs[i].ID] = &orgs[i]
	}
	return out, nil
}

// orgIDs is the key set of orgs, for store filters.
func orgIDs(orgs map[int64]*store.Organization) map[int64]bool {
	out := make(map[int64]bool, len(orgs))
	for id := range orgs {
		out[id] = true
	}
	return out
}

// writeOrg returns the organization a write acts on. A partner must name it
// in the query.
func (s *Server) writeOrg(c *gin.Context, tx *store.Tx) (*store.Organization, error) {
	id, err := queryOrgID(c)
	if err != nil {
		return nil, err
	}
	p := principal(c)
	if p.IsPartner() && id == 0 {
		return nil, badField("organizationId", "is required as a query parameter with a partner token")
	}
	if id == 0 {
		id = p.OrganizationID
	}
	return s.orgByID(c, tx, id)
}

// bodyOrg checks the organizationId of a request body item against the
// organization of the write: a partner must repeat it in every item, and a
// different one is refused.
func bodyOrg(c *gin.Context, o *store.Organization, field string, v *int64) error {
	switch {
	case v == nil && principal(c).IsPartner():
		return badField(field, "is required with a partner token")
	case v == nil:
		return nil
	case *v == o.ID:
		return nil
	case principal(c).IsPartner():
		return badField(field, fmt.Sprintf("must equal the organizationId query parameter (%d)", o.ID))
	}
	return notFound("organization")
}

// itemField names a member of the i-th item of a body's data array.
func itemField(i int, name string) string { return fmt.Sprintf("data[%d].%s", i, name) }
