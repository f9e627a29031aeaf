package cloudapi

import (
	"fmt"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// roleAccess maps the roles of the reference contract onto fleetcam's
// access levels (store.AccessEditor …; docs/api.md): administrators and
// supervisors edit, users edit without media, restricted users and map
// viewers only read.
var roleAccess = map[string]string{
	"administrator": store.AccessEditor,
	"supervisor":    store.AccessEditor,
	"user":          store.AccessEditorWithoutMediaAccess,
	"restricted":    store.AccessViewer,
	"usermapviewer": store.AccessViewer,
}

// roleNames lists the roles roleAccess knows, for error messages.
const roleNames = "restricted, user, administrator, supervisor, usermapviewer"

// allGroups is the group id that grants access to every group.
const allGroups = -2

// permissionsRequest is the body of PATCH
// /users/{userId}/organizations/{orgId}/permissions.
type permissionsRequest struct {
	Role     *string `json:"role"`
	GroupIDs []int64 `json:"organizationAccessEdgeGroupIds"`
}

// validate checks the request and returns the access level of its role.
func (req permissionsRequest) validate() (string, error) {
	if req.Role == nil {
		return "", badField("role", "is required")
	}
	level, known := roleAccess[*req.Role]
	if !known {
		return "", badField("role", "must be one of "+roleNames)
	}
	switch {
	case req.GroupIDs == nil:
		return "", badField("organizationAccessEdgeGroupIds", "is required")
	case len(req.GroupIDs) != 1 || req.GroupIDs[0] != allGroups:
		return "", badField("organizationAccessEdgeGroupIds",
			fmt.Sprintf("must be [%d]: a user of an organization has access to all of its groups", allGroups))
	}
	return level, nil
}

// patchUserPermissions handles PATCH
// /users/{userId}/organizations/{orgId}/permissions: the user, one of the
// organization's, gets the access level of the role given. Nobody grants
// more than their own access level, nor changes a user above it.
func (s *Server) patchUserPermissions(c *gin.Context) error {
	var req permissionsRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	level, err := req.validate()
	if err != nil {
		return err
	}
	p := principal(c)
	if p.Kind == kindUser && accessRank[level] > accessRank[p.AccessLevel] {
		return forbidden("a %s cannot grant the %s access level", p.AccessLevel, level)
	}
	var out userDTO
	err = s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		id, err := pathInt(c, "userId")
		if err != nil {
			return notFound("user")
		}
		u, err := visibleUser(c, tx, id)
		if err != nil || u.OrganizationID != o.ID {
			return notFound(fmt.Sprintf("user %d", id))
		}
		if err := checkManage(p, u, "change"); err != nil {
			return err
		}
		u.AccessLevel = level
		if err := tx.UpdateUser(u, "user.permissions"); err != nil {
			return err
		}
		out = toUserDTO(u)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}
