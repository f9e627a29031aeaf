package cloudapi

import (
	"fmt"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// groupRequest is the body of PUT and DELETE /organizations/{orgId}/groups.
type groupRequest struct {
	GroupID *int64  `json:"groupId"`
	Name    *string `json:"name"`
}

// orgGroup returns the group of a request's groupId if it is one of the
// path organization's groups, which the caller may see.
func (s *Server) orgGroup(c *gin.Context, tx *store.Tx, req groupRequest) (*store.Organization, *store.Group, error) {
	o, err := s.org(c, tx)
	if err != nil {
		return nil, nil, err
	}
	g, err := tx.Group(*req.GroupID)
	if err != nil || g.OrganizationID != o.ID {
		return nil, nil, notFound(fmt.Sprintf("group %d", *req.GroupID))
	}
	return o, g, nil
}

// decodeGroupRequest reads a group request and checks its groupId.
func decodeGroupRequest(c *gin.Context) (groupRequest, error) {
	var req groupRequest
	if err := decode(c, &req); err != nil {
		return req, err
	}
	switch {
	case req.GroupID == nil:
		return req, badField("groupId", "is required")
	case *req.GroupID < 1:
		return req, badField("groupId", "must be a group id (1 or more)")
	}
	return req, nil
}

// updateGroup handles PUT /organizations/{orgId}/groups: the group of
// groupId takes the name given, unique within the organization
// (case-insensitive) as when groups are created. Its devices stay.
func (s *Server) updateGroup(c *gin.Context) error {
	req, err := decodeGroupRequest(c)
	if err != nil {
		return err
	}
	if req.Name == nil {
		return badField("name", "is required")
	}
	name, err := requiredName("name", *req.Name)
	if err != nil {
		return err
	}
	var out groupDTO
	err = s.update(c, func(tx *store.Tx) error {
		o, g, err := s.orgGroup(c, tx, req)
		if err != nil {
			return err
		}
		if err := checkGroupName(tx, o.ID, g.ID, name); err != nil {
			return err
		}
		if g, err = tx.RenameGroup(g.ID, name); err != nil {
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

// deleteGroup handles DELETE /organizations/{orgId}/groups: the group of
// groupId is deleted; its devices stay in the organization, in no group
// (each move audited as device.group). The answer lists them.
func (s *Server) deleteGroup(c *gin.Context) error {
	req, err := decodeGroupRequest(c)
	if err != nil {
		return err
	}
	if req.Name != nil {
		return badField("name", "is not a member of a group deletion")
	}
	var out groupDTO
	var moved []string
	err = s.update(c, func(tx *store.Tx) error {
		_, g, err := s.orgGroup(c, tx, req)
		if err != nil {
			return err
		}
		out = toGroupDTO(g)
		moved, err = tx.DeleteGroup(g.ID)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, gin.H{"group": out, "ungrouped": moved})
}
