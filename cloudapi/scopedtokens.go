package cloudapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// scopedTokenRequest is POST /scoped-token: one entity (a device, a group or
// an organization) and the features the token grants on it.
type scopedTokenRequest struct {
	Entities []scopedEntity `json:"entities"`
}

type scopedEntity struct {
	EntityType string `json:"entityType"`
	// EntityID is an IMEI, a group id or an organization id, as a JSON
	// number or string.
	EntityID json.RawMessage `json:"entityId"`
	Features []scopedFeature `json:"features"`
}

type scopedFeature struct {
	FeatureType string `json:"featureType"`
	// AllowMedia lets the token reach media through this feature; default true.
	AllowMedia *bool `json:"allowMedia"`
}

type scopedTokenResult struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expiresAt"`
	Scope     *Scope `json:"scope"`
}

// Entity types of a scoped token.
const (
	entityDevice       = "device"
	entityGroup        = "group"
	entityOrganization = "organization"
)

// scope validates the request's shape and returns the scope it asks for,
// without the entity lookup.
func (req *scopedTokenRequest) scope() (*Scope, string, error) {
	if len(req.Entities) != 1 {
		return nil, "", badField("entities", "must hold exactly one entity (a device, a group or an organization)")
	}
	e := req.Entities[0]
	id := strings.Trim(string(bytes.TrimSpace(e.EntityID)), `"`)
	if id == "" || id == "null" {
		return nil, "", badField("entities[0].entityId", "is required")
	}
	sc := &Scope{}
	switch e.EntityType {
	case entityDevice:
		if !store.ValidIMEI(id) {
			return nil, "", badField("entities[0].entityId", "of a device "+store.RuleIMEI)
		}
		sc.IMEI = id
	case entityGroup, entityOrganization:
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n < 1 {
			return nil, "", badField("entities[0].entityId", "of a "+e.EntityType+" must be a positive integer id")
		}
		if e.EntityType == entityGroup {
			sc.GroupID = n
		} else {
			sc.OrganizationID = n
		}
	case "":
		return nil, "", badField("entities[0].entityType", "is required")
	default:
		return nil, "", badField("entities[0].entityType", "must be one of device, group, organization")
	}
	if len(e.Features) == 0 {
		return nil, "", badField("entities[0].features", "must name at least one feature")
	}
	for i, f := range e.Features {
		if !slices.Contains(allFeatures, f.FeatureType) {
			return nil, "", badField(fmt.Sprintf("entities[0].features[%d].featureType", i), "must be one of "+strings.Join(allFeatures, ", "))
		}
		if !slices.Contains(sc.Features, f.FeatureType) {
			sc.Features = append(sc.Features, f.FeatureType)
		}
		if (f.AllowMedia == nil || *f.AllowMedia) && !slices.Contains(sc.MediaFeatures, f.FeatureType) {
			sc.MediaFeatures = append(sc.MediaFeatures, f.FeatureType)
		}
	}
	return sc, e.EntityType, nil
}

// createScopedToken handles POST /scoped-token: from the caller's token, a
// 24-hour token limited to one entity the caller sees and to named features.
// Scoped tokens cannot call it (the route declares no feature).
func (s *Server) createScopedToken(c *gin.Context) error {
	var req scopedTokenRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	sc, kind, err := req.scope()
	if err != nil {
		return err
	}
	p := principal(c)
	err = s.view(c, func(tx *store.Tx) error {
		switch kind {
		case entityDevice:
			d, err := s.deviceByIMEI(c, tx, sc.IMEI)
			if err != nil {
				return err
			}
			sc.OrganizationID = d.OrganizationID
		case entityGroup:
			g, err := tx.Group(sc.GroupID)
			if err != nil {
				return notFound(fmt.Sprintf("group %d", sc.GroupID))
			}
			if _, err := s.orgByID(c, tx, g.OrganizationID); err != nil {
				return notFound(fmt.Sprintf("group %d", sc.GroupID))
			}
			sc.OrganizationID = g.OrganizationID
		case entityOrganization:
			if _, err := s.orgByID(c, tx, sc.OrganizationID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if p.IsPartner() {
		sc.PartnerID = p.PartnerID
	}
	// The token names its issuer (user or OAuth client), so that it ends
	// with the issuer's access (checkToken).
	sp := Principal{Kind: kindScoped, UserID: p.UserID, PartnerID: p.PartnerID, OrganizationID: sc.OrganizationID,
		AccessLevel: p.AccessLevel, Scope: sc, ClientID: p.ClientID, Generation: p.Generation}
	tok, exp, err := s.issue(sp, s.cfg.Auth.ScopedTokenTTL)
	if err != nil {
		return err
	}
	return ok(c, scopedTokenResult{Token: tok, ExpiresAt: isoTime(exp), Scope: sc})
}
