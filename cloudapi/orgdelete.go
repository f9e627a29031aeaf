package cloudapi

import (
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// deleteOrganization handles DELETE /organizations/{orgId} (the partner
// that created it). An organization still holding devices is 409 naming
// how many; they must be removed or moved first, so that no device or its
// data is lost by surprise. Otherwise the organization goes with its users,
// groups, drivers and recipients (store.DeleteOrganization); what its
// former devices recorded there is purged by retention as its purge days
// say, and no call finds any of it from then on.
func (s *Server) deleteOrganization(c *gin.Context) error {
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		_, err = tx.DeleteOrganization(o.ID)
		return err
	})
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"requestId": requestID(c)})
}
