package store

import (
	"errors"
	"strconv"
	"time"
)

// Device statuses.
const (
	DevicePendingActivation = "pendingActivation"
	DeviceActivated         = "activated"
	DeviceDeactivated       = "deactivated"
	DeviceSuspended         = "suspended"
)

// ValidDeviceStatus reports whether s names a device status.
func ValidDeviceStatus(s string) bool {
	switch s {
	case DevicePendingActivation, DeviceActivated, DeviceDeactivated, DeviceSuspended:
		return true
	}
	return false
}

// Device is a dashcam in an organization's inventory, keyed by IMEI.
type Device struct {
	IMEI           string `json:"imei"`
	Name           string `json:"name"`
	OrganizationID int64  `json:"organizationId"`
	// PartnerID is the partner that owns the device; in a shared organization
	// each partner sees only its own devices.
	PartnerID   int64  `json:"partnerId"`
	GroupID     int64  `json:"groupId,omitempty"`
	Status      string `json:"status"`
	ProductType string `json:"productType,omitempty"`
	// DataProfileID is the device's data profile, from its organization's default when added.
	DataProfileID int64 `json:"dataProfileId,omitempty"`
	// CreatedAt is when the device was added to its organization.
	CreatedAt   time.Time `json:"createdAt"`
	ActivatedAt time.Time `json:"activatedAt,omitzero"`
	// Ownership numbers the device's stay in its organization, from
	// AddDevice to RemoveDevice; what is recorded for the device meanwhile
	// carries it (ownership.go). 0 for a device added before ownership
	// numbers existed.
	Ownership int64 `json:"ownership,omitempty"`
	// PreviousOwnerUntil is when the IMEI last left an organization before
	// this ownership (zero: never, as far as the store knows); what the
	// device's card recorded before then is not this owner's.
	PreviousOwnerUntil time.Time `json:"previousOwnerUntil,omitzero"`
}

// ValidIMEI reports whether s is 15 digits whose last is the Luhn check digit.
func ValidIMEI(s string) bool {
	if len(s) != 15 {
		return false
	}
	sum := 0
	for i := 0; i < 15; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return false
		}
		d := int(c - '0')
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// AddDevice puts d into its organization's inventory. An IMEI belongs to one
// organization at a time, so an IMEI already present is ErrConflict. The
// device's partner must be one the organization admits, and a device without
// a data profile gets the organization's default. Each add starts a new
// ownership: nothing the IMEI recorded before is the new owner's.
func (tx *Tx) AddDevice(d *Device) error {
	if !ValidIMEI(d.IMEI) {
		return Invalid("imei", "%q "+RuleIMEI, d.IMEI)
	}
	o, err := tx.Organization(d.OrganizationID)
	if err != nil {
		return err
	}
	if !o.HasPartner(d.PartnerID) {
		return Invalid("", "organization %d does not admit devices of partner %d", o.ID, d.PartnerID)
	}
	switch _, err := tx.rec.Devices().Get(d.IMEI); {
	case err == nil:
		return Conflict("device %s is already in an organization", d.IMEI)
	case !errors.Is(err, ErrNotFound):
		return err
	}
	if d.DataProfileID == 0 {
		d.DataProfileID = o.DefaultDataProfileID
	}
	if d.GroupID != 0 {
		g, err := tx.Group(d.GroupID)
		if err != nil || g.OrganizationID != d.OrganizationID {
			return NotFound("group %d", d.GroupID)
		}
	}
	if d.Status == "" {
		d.Status = DevicePendingActivation
	}
	d.CreatedAt = tx.now
	if err := tx.startOwnership(d); err != nil {
		return err
	}
	if err := tx.rec.Devices().Insert(d); err != nil {
		return err
	}
	// A device that joins an organization whose defaults switch the
	// hotspot on gets its password now.
	if err := tx.syncHotspot(d.IMEI); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "device.create", EntityType: "device", EntityID: d.IMEI,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID, After: d})
}

// Device returns the device with imei.
func (tx *Tx) Device(imei string) (*Device, error) {
	d, err := tx.rec.Devices().Get(imei)
	if err != nil {
		return nil, missing(err, "device %s", imei)
	}
	return d, nil
}

// DeviceStamp returns a fingerprint of the stored record of imei that
// changes whenever the record does, so a caller holding a decoded copy can
// tell cheaply whether it is still current.
func (tx *Tx) DeviceStamp(imei string) (uint64, error) {
	stamp, err := tx.rec.Devices().Stamp(imei)
	if err != nil {
		return 0, missing(err, "device %s", imei)
	}
	return stamp, nil
}

// UpdateDevice stores d and audits the change under action.
func (tx *Tx) UpdateDevice(d *Device, action string) error {
	prev, err := tx.Device(d.IMEI)
	if err != nil {
		return err
	}
	if prev.OrganizationID != d.OrganizationID {
		return Invalid("", "device %s cannot change organization in place", d.IMEI)
	}
	if !ValidDeviceStatus(d.Status) {
		return Invalid("", "device status %q", d.Status)
	}
	d.CreatedAt, d.Ownership, d.PreviousOwnerUntil = prev.CreatedAt, prev.Ownership, prev.PreviousOwnerUntil
	if d.GroupID != 0 && d.GroupID != prev.GroupID {
		g, err := tx.Group(d.GroupID)
		if err != nil || g.OrganizationID != d.OrganizationID {
			return NotFound("group %d", d.GroupID)
		}
	}
	if err := tx.rec.Devices().Put(d); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: action, EntityType: "device", EntityID: d.IMEI,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID, Before: prev, After: d})
}

// RemoveDevice deletes the device from its organization's inventory and
// records a deviceRemoved system message for the organization's webhooks.
func (tx *Tx) RemoveDevice(imei string) error {
	d, err := tx.Device(imei)
	if err != nil {
		return err
	}
	if err := tx.rec.Devices().Delete(imei); err != nil {
		return err
	}
	if err := tx.endOwnership(d); err != nil {
		return err
	}
	if err := tx.dropDeviceState(d); err != nil {
		return err
	}
	if err := tx.Audit(AuditChange{Action: "device.remove", EntityType: "device", EntityID: imei,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID, Before: d}); err != nil {
		return err
	}
	return tx.Emit(Message{Kind: MessageSystem, SubType: SystemDeviceRemoved, OrganizationID: d.OrganizationID,
		PartnerID: d.PartnerID, IMEI: imei, Removed: &RemovedFact{Name: d.Name}})
}

// dropDeviceState drops the per-device state that the other files of this
// package keep, in the transaction that removes the device. History that
// outlives the device (events, media, alarms, trips, driver sessions)
// stays.
//
// Each step touches only its own buckets and none audits or emits, so their
// order does not change the outcome; it is fixed, in the files' name order,
// which is the order they ran in before this list existed. A step that
// comes to depend on another goes after it, saying so.
func (tx *Tx) dropDeviceState(d *Device) error {
	for _, drop := range []func(tx *Tx, d *Device) error{
		dropHealthState,      // alarmhealth.go
		dropOpenAlarms,       // alarms.go
		dropAuxCameras,       // auxcameras.go
		dropBilling,          // billing.go
		dropDataUsage,        // datausage.go
		dropDeviceLink,       // devicelink.go: link, credentials, queued commands
		endDeviceAssignments, // driverassignments.go
		dropDriverState,      // driversessions.go: ends the session, PIN failures
		dropDeviceTrack,      // geofences.go
		dropHotspot,          // hotspot.go
		dropDeviceSettings,   // settings.go
		dropOpenTrip,         // trips.go
	} {
		if err := drop(tx, d); err != nil {
			return err
		}
	}
	return nil
}

// DeviceFilter selects devices of one organization or one partner.
type DeviceFilter struct {
	OrganizationID int64
	// PartnerID, when set, keeps only the devices this partner owns.
	PartnerID int64
	GroupID   int64
	IMEI      string
	// Name keeps devices whose name contains it, ignoring case
	// (ContainsFold).
	Name string
	// IMEIs, when not nil, keeps only these devices (scoped tokens).
	IMEIs map[string]bool
}

// Match reports whether f selects d.
func (f DeviceFilter) Match(d *Device) bool {
	return (f.OrganizationID == 0 || d.OrganizationID == f.OrganizationID) &&
		(f.PartnerID == 0 || d.PartnerID == f.PartnerID) &&
		(f.GroupID == 0 || d.GroupID == f.GroupID) &&
		(f.IMEI == "" || d.IMEI == f.IMEI) &&
		(f.Name == "" || ContainsFold(d.Name, f.Name)) &&
		(f.IMEIs == nil || f.IMEIs[d.IMEI])
}

// Devices returns the page p of the devices matching f, in IMEI order, and
// their total count. With no OrganizationID it lists the devices of every
// organization, which is how a partner lists all its devices.
func (tx *Tx) Devices(f DeviceFilter, p Page) ([]Device, int, error) {
	return tx.rec.Devices().List(f, p)
}

// Group is a named set of devices within an organization.
type Group struct {
	ID             int64     `json:"id"`
	OrganizationID int64     `json:"organizationId"`
	Name           string    `json:"name"`
	CreatedAt      time.Time `json:"createdAt"`
}

// CreateGroup adds a group to an organization.
func (tx *Tx) CreateGroup(orgID int64, name string) (*Group, error) {
	g := &Group{OrganizationID: orgID, Name: name, CreatedAt: tx.now}
	if err := tx.rec.Groups().Insert(g); err != nil {
		return nil, err
	}
	return g, tx.Audit(AuditChange{Action: "group.create", EntityType: "group", EntityID: strconv.FormatInt(g.ID, 10),
		OrganizationID: orgID, After: g})
}

// Group returns the group with id.
func (tx *Tx) Group(id int64) (*Group, error) {
	g, err := tx.rec.Groups().Get(id)
	if err != nil {
		return nil, missing(err, "group %d", id)
	}
	return g, nil
}

// Groups returns the page p of an organization's groups, in id order, and
// their total count.
func (tx *Tx) Groups(orgID int64, p Page) ([]Group, int, error) {
	return tx.rec.Groups().List(orgID, p)
}
