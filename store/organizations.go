package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Organization is a partner's customer: a fleet with its own settings.
type Organization struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// PartnerID is the partner that created the organization.
	PartnerID int64 `json:"partnerId"`
	// PartnerIDs are the partners whose devices the organization may hold.
	// It is [PartnerID] while ExclusivePartnerOnly is true.
	PartnerIDs                   []int64 `json:"partnerIds"`
	IsOrganizationProfileEnabled bool    `json:"isOrganizationProfileEnabled"`
	ExclusivePartnerOnly         bool    `json:"exclusivePartnerOnly"`
	// SSOSalt with the server key derives the organization's ssoSecret; the
	// secret itself is never stored.
	SSOSalt []byte `json:"ssoSalt"`
	// Retention: how long data is kept in the cloud, in days (0: forever),
	// and on the devices' SD cards, in days.
	PurgeDays          PurgeDays `json:"purgeDays"`
	RetentionDays      int       `json:"retentionDays,omitempty"`
	DefaultDataProfile int64     `json:"defaultDataProfileId,omitempty"`
	CreatedAt          time.Time `json:"createdAt"`
}

// PurgeDays are the cloud retention limits per data kind, in days; 0 keeps forever.
type PurgeDays struct {
	Events    int `json:"events"`
	GPS       int `json:"gps"`
	Media     int `json:"media"`
	AuditLogs int `json:"auditLogs"`
}

// HasPartner reports whether partner id may hold devices in o.
func (o *Organization) HasPartner(id int64) bool {
	return o.PartnerID == id || slices.Contains(o.PartnerIDs, id)
}

// CreateOrganization adds an organization for partnerID with the defaults of
// the spec: profile disabled, exclusive to its partner.
func (tx *Tx) CreateOrganization(partnerID int64, name string, ssoSalt []byte) (*Organization, error) {
	id, err := tx.nextID(bucketOrgs)
	if err != nil {
		return nil, err
	}
	o := &Organization{ID: id, Name: name, PartnerID: partnerID, PartnerIDs: []int64{partnerID},
		ExclusivePartnerOnly: true, SSOSalt: ssoSalt, CreatedAt: tx.now}
	if err := putJSON(tx.bucket(bucketOrgs), itob(id), o); err != nil {
		return nil, err
	}
	return o, tx.Audit(AuditChange{Action: "organization.create", EntityType: "organization",
		EntityID: strconv.FormatInt(id, 10), OrganizationID: id, PartnerID: partnerID, After: o.public()})
}

func (o *Organization) public() Organization {
	c := *o
	c.SSOSalt = nil
	return c
}

// Organization returns the organization with id.
func (tx *Tx) Organization(id int64) (*Organization, error) {
	var o Organization
	if err := getJSON(tx.bucket(bucketOrgs), itob(id), &o); err != nil {
		return nil, fmt.Errorf("organization %d: %w", id, err)
	}
	return &o, nil
}

// UpdateOrganization stores o and audits the change from its previous value.
func (tx *Tx) UpdateOrganization(o *Organization) error {
	prev, err := tx.Organization(o.ID)
	if err != nil {
		return err
	}
	if err := putJSON(tx.bucket(bucketOrgs), itob(o.ID), o); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "organization.update", EntityType: "organization",
		EntityID: strconv.FormatInt(o.ID, 10), OrganizationID: o.ID, PartnerID: o.PartnerID,
		Before: prev.public(), After: o.public()})
}

// Organizations lists the organizations partnerID may see (0: all), in id order.
func (tx *Tx) Organizations(partnerID int64) ([]Organization, error) {
	var out []Organization
	err := tx.bucket(bucketOrgs).ForEach(func(_, v []byte) error {
		var o Organization
		if err := jsonUnmarshal(v, &o); err != nil {
			return err
		}
		if partnerID == 0 || o.HasPartner(partnerID) {
			out = append(out, o)
		}
		return nil
	})
	return out, err
}

func jsonUnmarshal(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("store: decode: %w", err)
	}
	return nil
}
