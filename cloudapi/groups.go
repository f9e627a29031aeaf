package cloudapi

import (
	"fmt"
	"strings"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// groupDTO is a group of devices as the API shows it.
type groupDTO struct {
	ID             int64  `json:"id"`
	Name           string `json:"name"`
	OrganizationID int64  `json:"organizationId"`
	CreatedAt      string `json:"createdAt"`
}

func toGroupDTO(g *store.Group) groupDTO {
	return groupDTO{ID: g.ID, Name: g.Name, OrganizationID: g.OrganizationID, CreatedAt: isoTime(g.CreatedAt)}
}

// listGroups handles GET /organizations/{orgId}/groups.
func (s *Server) listGroups(c *gin.Context) error {
	pg, err := s.page(c)
	if err != nil {
		return err
	}
	var out []groupDTO
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		groups, n, err := tx.Groups(o.ID, pg)
		if err != nil {
			return err
		}
		total = n
		for i := range groups {
			out = append(out, toGroupDTO(&groups[i]))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return okPage(c, out, total, pg)
}

type createGroupRequest struct {
	Name string `json:"name"`
}

// createGroup handles POST /organizations/{orgId}/groups. Group names are
// unique within an organization (case-insensitive).
func (s *Server) createGroup(c *gin.Context) error {
	var req createGroupRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	name, err := requiredName("name", req.Name)
	if err != nil {
		return err
	}
	var out groupDTO
	err = s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		if err := checkGroupName(tx, o.ID, 0, name); err != nil {
			return err
		}
		g, err := tx.CreateGroup(o.ID, name)
		if err != nil {
			return err
		}
		out = toGroupDTO(g)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// checkGroupName refuses (409) a name another group of organization orgID
// than group id has, whatever its case.
func checkGroupName(tx *store.Tx, orgID, id int64, name string) error {
	groups, _, err := tx.Groups(orgID, store.Page{})
	if err != nil {
		return err
	}
	for _, g := range groups {
		if g.ID != id && strings.EqualFold(g.Name, name) {
			return conflict("group %q already exists in organization %d (id %d)", name, orgID, g.ID)
		}
	}
	return nil
}

// maxGroupAssign bounds the IMEIs of one group assignment.
const maxGroupAssign = 1500

// assignGroupDevices handles POST /organizations/{orgId}/groups/{groupId}/devices:
// the body is a JSON array of IMEIs that move into the group (out of any
// other). Every device must be one of the organization's that the caller
// sees, else nothing changes and the answer is 404 naming the IMEI.
func (s *Server) assignGroupDevices(c *gin.Context) error {
	var imeis []string
	if err := decode(c, &imeis); err != nil {
		return err
	}
	switch {
	case len(imeis) == 0:
		return badRequest("the request body must be a non-empty array of IMEIs")
	case len(imeis) > maxGroupAssign:
		return badRequest("the request body may name at most %d IMEIs", maxGroupAssign)
	}
	for i, imei := range imeis {
		if !store.ValidIMEI(imei) {
			return badField(fmt.Sprintf("[%d]", i), "is not an IMEI: "+store.RuleIMEI)
		}
	}
	var out groupDTO
	var moved []string
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		gid, err := pathInt(c, "groupId")
		if err != nil {
			return err
		}
		g, err := tx.Group(gid)
		if err != nil || g.OrganizationID != o.ID {
			return notFound(fmt.Sprintf("group %d", gid))
		}
		for _, imei := range imeis {
			d, err := s.deviceByIMEI(c, tx, imei)
			if err != nil {
				return err
			}
			if d.OrganizationID != o.ID {
				return notFound("device " + imei)
			}
			if d.GroupID == g.ID {
				continue
			}
			d.GroupID = g.ID
			if err := tx.UpdateDevice(d, "device.group"); err != nil {
				return err
			}
			moved = append(moved, imei)
		}
		out = toGroupDTO(g)
		return nil
	})
	if err != nil {
		return err
	}
	if moved == nil {
		moved = []string{}
	}
	return ok(c, gin.H{"group": out, "moved": moved})
}
