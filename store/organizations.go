package store

import (
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
	PartnerIDs []int64 `json:"partnerIds"`
	// InvitedPartnerIDs are the partners the creating partner invited to
	// share the organization that have not answered yet (invitations.go).
	// They are kept as named, whether or not such a partner exists, and
	// hold nothing in the organization until they accept.
	InvitedPartnerIDs            []int64 `json:"invitedPartnerIds,omitempty"`
	IsOrganizationProfileEnabled bool    `json:"isOrganizationProfileEnabled"`
	ExclusivePartnerOnly         bool    `json:"exclusivePartnerOnly"`
	// SSOSalt with the server key derives the organization's ssoSecret; the
	// secret itself is never stored.
	SSOSalt []byte `json:"ssoSalt"`
	// Retention says how long the organization's data is kept in the cloud
	// and on its devices' SD cards.
	Retention Retention `json:"retention"`
	// LiveVideoTimeoutSeconds ends a live stream after this long (0: the default).
	LiveVideoTimeoutSeconds int `json:"liveVideoTimeoutSeconds,omitempty"`
	// DefaultDataProfileID is assigned to devices added to the organization (0: none).
	DefaultDataProfileID int64     `json:"defaultDataProfileId,omitempty"`
	CreatedAt            time.Time `json:"createdAt"`
	// DeletedAt is when the organization was deleted (orgdelete.go); zero
	// while it exists. A deleted organization's record stays for the audit
	// log and the retention purge, and is found by nothing else.
	DeletedAt time.Time `json:"deletedAt,omitzero"`
}

// DefaultPurgeDays is the general cloud retention of a new organization.
const DefaultPurgeDays = 31

// Retention is an organization's purge days and retention times.
type Retention struct {
	// PurgeDays is how long events, GPS and media stay in the cloud, in days.
	PurgeDays int `json:"purgeDays"`
	// PurgeDaysFrontCamera, PurgeDaysRearCamera and PurgeDaysAuxiliaryCameras
	// override PurgeDays for the media of the road-facing (1), in-cab (2) and
	// auxiliary (50+) cameras; 0 follows PurgeDays.
	PurgeDaysFrontCamera      int `json:"purgeDaysFrontCamera,omitempty"`
	PurgeDaysRearCamera       int `json:"purgeDaysRearCamera,omitempty"`
	PurgeDaysAuxiliaryCameras int `json:"purgeDaysAuxiliaryCameras,omitempty"`
	// DeviceRetentionMinutes is how long recordings stay on the SD card, as
	// the organization set it (0: never set; see DeviceMinutes).
	DeviceRetentionMinutes int `json:"deviceRetentionMinutes,omitempty"`
}

// DefaultDeviceRetentionMinutes is the SD-card retention of the devices of
// an organization that never set one: the longest that may be set (366
// days), so that a device keeps its recordings until its card is full,
// and never longer than a year.
const DefaultDeviceRetentionMinutes = MaxCameraRetentionMinutes

// DeviceMinutes is how long the organization's devices keep recordings on
// their SD card, in minutes: DeviceRetentionMinutes, or
// DefaultDeviceRetentionMinutes for an organization that never set one.
// It is what the devices are given (Effective.RetentionMinutes) and what
// the API shows.
func (r Retention) DeviceMinutes() int {
	if r.DeviceRetentionMinutes == 0 {
		return DefaultDeviceRetentionMinutes
	}
	return r.DeviceRetentionMinutes
}

// MediaPurgeDays is the cloud retention of media from cameraID, in days.
func (r Retention) MediaPurgeDays(cameraID int) int {
	d := 0
	switch {
	case cameraID == 1:
		d = r.PurgeDaysFrontCamera
	case cameraID == 2:
		d = r.PurgeDaysRearCamera
	case cameraID >= 50:
		d = r.PurgeDaysAuxiliaryCameras
	}
	if d == 0 {
		return r.PurgeDays
	}
	return d
}

// HasPartner reports whether partner id may hold devices in o.
func (o *Organization) HasPartner(id int64) bool {
	return o.PartnerID == id || slices.Contains(o.PartnerIDs, id)
}

// CreateOrganization adds an organization for partnerID with the defaults
// of a new organization: organization profile disabled, exclusive to its
// partner.
func (tx *Tx) CreateOrganization(partnerID int64, name string, ssoSalt []byte) (*Organization, error) {
	o := &Organization{Name: name, PartnerID: partnerID, ExclusivePartnerOnly: true, SSOSalt: ssoSalt}
	return o, tx.AddOrganization(o)
}

// AddOrganization stores the new organization o as given, setting its id and
// creation time. The creating partner is always among PartnerIDs, and a zero
// general purge time becomes DefaultPurgeDays.
func (tx *Tx) AddOrganization(o *Organization) error {
	if o.PartnerID == 0 {
		return Invalid("", "organization without a partner")
	}
	if _, err := tx.Partner(o.PartnerID); err != nil {
		return err
	}
	o.CreatedAt = tx.now
	if !slices.Contains(o.PartnerIDs, o.PartnerID) {
		o.PartnerIDs = append([]int64{o.PartnerID}, o.PartnerIDs...)
	}
	if o.Retention.PurgeDays == 0 {
		o.Retention.PurgeDays = DefaultPurgeDays
	}
	if err := tx.rec.Organizations().Insert(o); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "organization.create", EntityType: "organization",
		EntityID: strconv.FormatInt(o.ID, 10), OrganizationID: o.ID, PartnerID: o.PartnerID, After: o.public()})
}

// Copy is a copy of o that shares nothing with it.
func (o *Organization) Copy() *Organization {
	c := *o
	c.PartnerIDs = slices.Clone(o.PartnerIDs)
	c.InvitedPartnerIDs = slices.Clone(o.InvitedPartnerIDs)
	c.SSOSalt = slices.Clone(o.SSOSalt)
	return &c
}

func (o *Organization) public() Organization {
	c := *o
	c.SSOSalt = nil
	return c
}

// Organization returns the organization with id; a deleted one is
// ErrNotFound.
func (tx *Tx) Organization(id int64) (*Organization, error) {
	o, err := tx.rec.Organizations().Get(id)
	if err != nil {
		return nil, missing(err, "organization %d", id)
	}
	if !o.DeletedAt.IsZero() {
		return nil, NotFound("organization %d", id)
	}
	return o, nil
}

// UpdateOrganization stores o and audits the change from its previous value.
// The creating partner stays; an exclusive organization holds only its
// creating partner and invites no one; a partner taken off PartnerIDs must
// have no device left in the organization (ErrConflict). An invitation of a
// partner that already shares the organization is dropped.
func (tx *Tx) UpdateOrganization(o *Organization) error {
	prev, err := tx.Organization(o.ID)
	if err != nil {
		return err
	}
	if o.PartnerID != prev.PartnerID {
		return Invalid("", "organization %d cannot change its creating partner", o.ID)
	}
	if !slices.Contains(o.PartnerIDs, o.PartnerID) {
		o.PartnerIDs = append([]int64{o.PartnerID}, o.PartnerIDs...)
	}
	o.InvitedPartnerIDs = slices.DeleteFunc(o.InvitedPartnerIDs, o.HasPartner)
	if o.ExclusivePartnerOnly && len(o.PartnerIDs)+len(o.InvitedPartnerIDs) > 1 {
		return Invalid("", "organization %d is exclusive to partner %d and cannot hold or invite other partners", o.ID, o.PartnerID)
	}
	if len(o.InvitedPartnerIDs) > MaxInvitedPartners {
		return Invalid("", "organization %d can invite at most %d partners at a time", o.ID, MaxInvitedPartners)
	}
	for _, pid := range o.PartnerIDs {
		if _, err := tx.Partner(pid); err != nil {
			return err
		}
	}
	for _, pid := range prev.PartnerIDs {
		if slices.Contains(o.PartnerIDs, pid) {
			continue
		}
		_, n, err := tx.Devices(DeviceFilter{OrganizationID: o.ID, PartnerID: pid}, Page{Limit: 1})
		if err != nil {
			return err
		}
		if n > 0 {
			return Conflict("partner %d still has %d devices in organization %d", pid, n, o.ID)
		}
	}
	if err := tx.rec.Organizations().Put(o); err != nil {
		return err
	}
	if err := tx.Audit(AuditChange{Action: "organization.update", EntityType: "organization",
		EntityID: strconv.FormatInt(o.ID, 10), OrganizationID: o.ID, PartnerID: o.PartnerID,
		Before: prev.public(), After: o.public()}); err != nil {
		return err
	}
	if o.Retention.DeviceRetentionMinutes != prev.Retention.DeviceRetentionMinutes {
		// The SD-card retention is part of every device's desired configuration.
		return tx.touchOrganizationConfigs(o.ID)
	}
	return nil
}

// OrganizationFilter selects organizations; zero fields do not filter.
type OrganizationFilter struct {
	// IDs admits only these organizations (nil: any).
	IDs map[int64]bool
	// PartnerID keeps the organizations this partner may hold devices in:
	// those it created and those shared with it.
	PartnerID int64
	// InvitedPartnerID keeps the organizations that invite this partner to
	// share them (invitations.go).
	InvitedPartnerID int64
	// WithDeleted admits deleted organizations too (the retention purge).
	WithDeleted bool
}

// Match reports whether f selects o.
func (f OrganizationFilter) Match(o *Organization) bool {
	return (f.WithDeleted || o.DeletedAt.IsZero()) && (f.IDs == nil || f.IDs[o.ID]) &&
		(f.PartnerID == 0 || o.HasPartner(f.PartnerID)) &&
		(f.InvitedPartnerID == 0 || slices.Contains(o.InvitedPartnerIDs, f.InvitedPartnerID))
}

// Organizations returns the page p of the organizations matching f, in id
// order, and their total count.
func (tx *Tx) Organizations(f OrganizationFilter, p Page) ([]Organization, int, error) {
	return tx.rec.Organizations().List(f, p)
}
