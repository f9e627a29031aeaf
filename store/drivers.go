package store

import (
	"cmp"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Driver is a person who drives an organization's vehicles. A driver checks
// in at a dashcam with a 5-digit PIN (Code) or by showing a QR code that
// carries QRPayload; later trips, events and GPS are then attributed to them.
type Driver struct {
	ID             int64  `json:"id"`
	OrganizationID int64  `json:"organizationId"`
	ThirdPartyID   string `json:"driverThirdPartyId"`
	FirstName      string `json:"firstName,omitempty"`
	LastName       string `json:"lastName,omitempty"`
	DrivingLicense string `json:"drivingLicense,omitempty"`
	// Code is the 5-digit PIN, unique within the organization.
	Code string `json:"driverCode"`
	// QRPayload is the random text the driver's QR code encodes; it cannot be
	// derived from the PIN or the id.
	QRPayload string    `json:"qrPayload"`
	IsActive  bool      `json:"isActive"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Driver name and code rules, shared with the API's validation messages.
const (
	DriverCodeDigits    = 5
	DriverFieldMinLen   = 2
	DriverFieldMaxLen   = 100
	driverCodeAttempts  = 200
	driverQRPayloadHead = "FCDRV1-"
)

// ValidDriverCode reports whether s is a 5-digit PIN.
func ValidDriverCode(s string) bool {
	if len(s) != DriverCodeDigits {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// validate checks the fields a caller sets.
func (d *Driver) validate() error {
	d.ThirdPartyID = strings.TrimSpace(d.ThirdPartyID)
	switch {
	case d.ThirdPartyID == "":
		return Invalid("driverThirdPartyId", "is required")
	case len(d.ThirdPartyID) > DriverFieldMaxLen:
		return Invalid("driverThirdPartyId", "must be at most %d characters", DriverFieldMaxLen)
	case d.Code != "" && !ValidDriverCode(d.Code):
		return Invalid("driverCode", "must be %d digits", DriverCodeDigits)
	}
	for _, f := range []struct{ name, v string }{{"firstName", d.FirstName}, {"lastName", d.LastName}, {"drivingLicense", d.DrivingLicense}} {
		if f.v != "" && (len([]rune(f.v)) < DriverFieldMinLen || len(f.v) > DriverFieldMaxLen) {
			return Invalid(f.name, "must be from %d to %d characters", DriverFieldMinLen, DriverFieldMaxLen)
		}
	}
	return nil
}

// CreateDriver adds d to its organization, active, with a fresh PIN unless
// d.Code is set and a fresh QR payload. The organization's devices get the
// new credential with their next configuration version.
func (tx *Tx) CreateDriver(d *Driver) error {
	if _, err := tx.Organization(d.OrganizationID); err != nil {
		return err
	}
	if err := d.validate(); err != nil {
		return err
	}
	drivers := tx.rec.Drivers()
	if _, err := drivers.IDByThirdPartyID(d.OrganizationID, d.ThirdPartyID); err == nil {
		return Conflict("driverThirdPartyId %q is already used in organization %d", d.ThirdPartyID, d.OrganizationID)
	} else if !isNotFound(err) {
		return err
	}
	if d.Code == "" {
		code, err := tx.freeDriverCode(d.OrganizationID)
		if err != nil {
			return err
		}
		d.Code = code
	} else if _, err := drivers.IDByCode(d.OrganizationID, d.Code); err == nil {
		return Conflict("driverCode %s is already used in organization %d", d.Code, d.OrganizationID)
	} else if !isNotFound(err) {
		return err
	}
	d.IsActive, d.CreatedAt, d.UpdatedAt = true, tx.now, tx.now
	d.QRPayload = newQRPayload()
	if err := drivers.Insert(d); err != nil {
		return err
	}
	if err := tx.Audit(AuditChange{Action: "driver.create", EntityType: "driver", EntityID: strconv.FormatInt(d.ID, 10),
		OrganizationID: d.OrganizationID, After: d.public()}); err != nil {
		return err
	}
	return tx.touchOrganizationConfigs(d.OrganizationID)
}

// public is the driver without its QR payload, for the audit log.
func (d *Driver) public() Driver {
	c := *d
	c.QRPayload = ""
	return c
}

// freeDriverCode draws random PINs until one is unused in the organization.
func (tx *Tx) freeDriverCode(orgID int64) (string, error) {
	drivers := tx.rec.Drivers()
	for range driverCodeAttempts {
		n, err := rand.Int(rand.Reader, big.NewInt(100000))
		if err != nil {
			return "", err
		}
		code := fmt.Sprintf("%05d", n.Int64())
		if _, err := drivers.IDByCode(orgID, code); isNotFound(err) {
			return code, nil
		} else if err != nil {
			return "", err
		}
	}
	return "", Conflict("organization %d has no free driver code left", orgID)
}

func newQRPayload() string {
	var b [15]byte
	rand.Read(b[:])
	return driverQRPayloadHead + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
}

// Driver returns the driver with id.
func (tx *Tx) Driver(id int64) (*Driver, error) {
	d, err := tx.rec.Drivers().Get(id)
	if err != nil {
		return nil, missing(err, "driver %d", id)
	}
	return d, nil
}

// DriverByThirdPartyID returns the driver of orgID with the given third-party id.
func (tx *Tx) DriverByThirdPartyID(orgID int64, thirdPartyID string) (*Driver, error) {
	id, err := tx.rec.Drivers().IDByThirdPartyID(orgID, thirdPartyID)
	if err != nil {
		return nil, missing(err, "driver %q", thirdPartyID)
	}
	return tx.Driver(id)
}

// DriverByCode returns the driver of orgID whose PIN is code.
func (tx *Tx) DriverByCode(orgID int64, code string) (*Driver, error) {
	id, err := tx.rec.Drivers().IDByCode(orgID, code)
	if err != nil {
		return nil, missing(err, "driver code")
	}
	return tx.Driver(id)
}

// DriverByQR returns the driver whose QR code carries payload.
func (tx *Tx) DriverByQR(payload string) (*Driver, error) {
	if payload == "" {
		return nil, NotFound("driver QR code")
	}
	id, err := tx.rec.Drivers().IDByQR(payload)
	if err != nil {
		return nil, missing(err, "driver QR code")
	}
	return tx.Driver(id)
}

// DriverPatch holds the fields of a partial driver update; nil keeps a field.
type DriverPatch struct {
	ThirdPartyID   *string
	FirstName      *string
	LastName       *string
	DrivingLicense *string
	Code           *string
	IsActive       *bool
}

// UpdateDriver applies p to driver id and audits the change.
func (tx *Tx) UpdateDriver(id int64, p DriverPatch) (*Driver, error) {
	prev, err := tx.Driver(id)
	if err != nil {
		return nil, err
	}
	d := *prev
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&d.ThirdPartyID, p.ThirdPartyID)
	set(&d.FirstName, p.FirstName)
	set(&d.LastName, p.LastName)
	set(&d.DrivingLicense, p.DrivingLicense)
	set(&d.Code, p.Code)
	if p.IsActive != nil {
		d.IsActive = *p.IsActive
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	drivers := tx.rec.Drivers()
	if d.Code != prev.Code {
		if owner, err := drivers.IDByCode(d.OrganizationID, d.Code); err == nil && owner != id {
			return nil, Conflict("driverCode %s is already used in organization %d", d.Code, d.OrganizationID)
		} else if err != nil && !isNotFound(err) {
			return nil, err
		}
	}
	if d.ThirdPartyID != prev.ThirdPartyID {
		if owner, err := drivers.IDByThirdPartyID(d.OrganizationID, d.ThirdPartyID); err == nil && owner != id {
			return nil, Conflict("driverThirdPartyId %q is already used in organization %d", d.ThirdPartyID, d.OrganizationID)
		} else if err != nil && !isNotFound(err) {
			return nil, err
		}
	}
	d.UpdatedAt = tx.now
	if err := drivers.Update(&d); err != nil {
		return nil, err
	}
	if err := tx.Audit(AuditChange{Action: "driver.update", EntityType: "driver", EntityID: strconv.FormatInt(id, 10),
		OrganizationID: d.OrganizationID, Before: prev.public(), After: d.public()}); err != nil {
		return nil, err
	}
	return &d, tx.touchOrganizationConfigs(d.OrganizationID)
}

// DeleteDriver removes an inactive driver with its assignments. Its past
// check-ins stay, so history still names it by id.
func (tx *Tx) DeleteDriver(id int64) error {
	d, err := tx.Driver(id)
	if err != nil {
		return err
	}
	if d.IsActive {
		return Invalid("", "driver %d is active; deactivate it (PUT /drivers) before deleting it", id)
	}
	if err := tx.rec.Drivers().Delete(id); err != nil {
		return err
	}
	as, err := tx.rec.DriverAssignments().ByDriver(id)
	if err != nil {
		return err
	}
	for _, a := range as {
		if err := tx.rec.DriverAssignments().Delete(a.ID); err != nil {
			return err
		}
	}
	if err := tx.Audit(AuditChange{Action: "driver.delete", EntityType: "driver", EntityID: strconv.FormatInt(id, 10),
		OrganizationID: d.OrganizationID, Before: d.public()}); err != nil {
		return err
	}
	return tx.touchOrganizationConfigs(d.OrganizationID)
}

// DriverFilter selects drivers; zero fields do not filter.
type DriverFilter struct {
	// OrganizationIDs admits drivers of these organizations only (nil: any).
	OrganizationIDs map[int64]bool
	ID              int64
	ThirdPartyID    string
	// FirstName and LastName keep drivers whose name matches them: the API's
	// regular expressions, compiled case-insensitive (SQL: ~).
	FirstName, LastName *regexp.Regexp
	IsActive            *bool
}

// Match reports whether f admits d. An engine that cannot filter drivers
// in its query filters with it.
func (f DriverFilter) Match(d *Driver) bool {
	return (f.OrganizationIDs == nil || f.OrganizationIDs[d.OrganizationID]) &&
		(f.ID == 0 || d.ID == f.ID) &&
		(f.ThirdPartyID == "" || d.ThirdPartyID == f.ThirdPartyID) &&
		(f.FirstName == nil || f.FirstName.MatchString(d.FirstName)) &&
		(f.LastName == nil || f.LastName.MatchString(d.LastName)) &&
		(f.IsActive == nil || d.IsActive == *f.IsActive)
}

// Driver sort keys. Names compare ignoring case (CompareFold); createdAt
// is creation order, which is id order.
const (
	DriverByCreatedAt      = "createdAt"
	DriverByDrivingLicense = "drivingLicense"
	DriverByFirstName      = "firstName"
	DriverByLastName       = "lastName"
)

var driverSortKeys = sortKeys[Driver]{
	DriverByCreatedAt:      func(a, b *Driver) int { return cmp.Compare(a.ID, b.ID) },
	DriverByDrivingLicense: func(a, b *Driver) int { return strings.Compare(a.DrivingLicense, b.DrivingLicense) },
	DriverByFirstName:      func(a, b *Driver) int { return CompareFold(a.FirstName, b.FirstName) },
	DriverByLastName:       func(a, b *Driver) int { return CompareFold(a.LastName, b.LastName) },
}

// Drivers returns the page p of the drivers matching f in the order s (by
// default by id) and their total count. A sort key that is not one of the
// Driver sort keys is ErrInvalid.
func (tx *Tx) Drivers(f DriverFilter, s Sort, p Page) ([]Driver, int, error) {
	if _, ok := driverSortKeys[s.Key]; s.Key != "" && !ok {
		return SortDrivers(nil, s, p) // the error naming the keys there are
	}
	return tx.rec.Drivers().List(f, s, p)
}

// SortDrivers orders ds by s as DriverSet.List answers, records equal under
// s.Key in id order, and returns the page p of them and their total. An
// engine that cannot order drivers in its query orders them with it. A sort
// key that is not one of the Driver sort keys is ErrInvalid.
func SortDrivers(ds []Driver, s Sort, p Page) ([]Driver, int, error) {
	return sortPage(ds, s, driverSortKeys, func(d *Driver) int64 { return d.ID }, p)
}

// touchOrganizationConfigs bumps the configuration version of every device
// of an organization so that the broker delivers what changed (driver
// credentials, SD-card retention).
func (tx *Tx) touchOrganizationConfigs(orgID int64) error {
	return tx.eachOrgDevice(orgID, tx.touchDeviceConfig)
}

// touchDeviceConfig bumps one device's configuration version without
// changing its settings: no new UpdatedAt, no audit entry.
func (tx *Tx) touchDeviceConfig(imei string) error {
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return err
	}
	ds.Version++
	return tx.rec.DeviceSettings().Put(ds)
}
