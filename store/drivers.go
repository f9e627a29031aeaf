package store

import (
	"bytes"
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
	if tx.bucket(bucketDriverThirdParty).Get(compositeKey(d.OrganizationID, d.ThirdPartyID)) != nil {
		return Conflict("driverThirdPartyId %q is already used in organization %d", d.ThirdPartyID, d.OrganizationID)
	}
	if d.Code == "" {
		code, err := tx.freeDriverCode(d.OrganizationID)
		if err != nil {
			return err
		}
		d.Code = code
	} else if tx.bucket(bucketDriverCodes).Get(compositeKey(d.OrganizationID, d.Code)) != nil {
		return Conflict("driverCode %s is already used in organization %d", d.Code, d.OrganizationID)
	}
	id, err := tx.nextID(bucketDrivers)
	if err != nil {
		return err
	}
	d.ID, d.IsActive, d.CreatedAt, d.UpdatedAt = id, true, tx.now, tx.now
	d.QRPayload = newQRPayload()
	if err := tx.putDriver(d, nil); err != nil {
		return err
	}
	if err := tx.Audit(AuditChange{Action: "driver.create", EntityType: "driver", EntityID: strconv.FormatInt(id, 10),
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

// putDriver stores d and keeps its indexes in step with prev (nil: new driver).
func (tx *Tx) putDriver(d *Driver, prev *Driver) error {
	idx := []struct {
		b         []byte
		old, next []byte
	}{
		{bucketDriverCodes, nil, compositeKey(d.OrganizationID, d.Code)},
		{bucketDriverThirdParty, nil, compositeKey(d.OrganizationID, d.ThirdPartyID)},
		{bucketDriverQR, nil, []byte(d.QRPayload)},
	}
	if prev != nil {
		idx[0].old = compositeKey(prev.OrganizationID, prev.Code)
		idx[1].old = compositeKey(prev.OrganizationID, prev.ThirdPartyID)
		idx[2].old = []byte(prev.QRPayload)
	}
	for _, x := range idx {
		if x.old != nil && !bytes.Equal(x.old, x.next) {
			if err := tx.bucket(x.b).Delete(x.old); err != nil {
				return err
			}
		}
		if err := tx.bucket(x.b).Put(x.next, itob(d.ID)); err != nil {
			return err
		}
	}
	return putJSON(tx.bucket(bucketDrivers), itob(d.ID), d)
}

// freeDriverCode draws random PINs until one is unused in the organization.
func (tx *Tx) freeDriverCode(orgID int64) (string, error) {
	b := tx.bucket(bucketDriverCodes)
	for range driverCodeAttempts {
		n, err := rand.Int(rand.Reader, big.NewInt(100000))
		if err != nil {
			return "", err
		}
		code := fmt.Sprintf("%05d", n.Int64())
		if b.Get(compositeKey(orgID, code)) == nil {
			return code, nil
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
	var d Driver
	if err := getJSON(tx.bucket(bucketDrivers), itob(id), &d); err != nil {
		return nil, missing(err, "driver %d", id)
	}
	return &d, nil
}

// DriverByThirdPartyID returns the driver of orgID with the given third-party id.
func (tx *Tx) DriverByThirdPartyID(orgID int64, thirdPartyID string) (*Driver, error) {
	id := tx.bucket(bucketDriverThirdParty).Get(compositeKey(orgID, thirdPartyID))
	if id == nil {
		return nil, NotFound("driver %q", thirdPartyID)
	}
	return tx.Driver(btoi(id))
}

// DriverByCode returns the driver of orgID whose PIN is code.
func (tx *Tx) DriverByCode(orgID int64, code string) (*Driver, error) {
	id := tx.bucket(bucketDriverCodes).Get(compositeKey(orgID, code))
	if id == nil {
		return nil, NotFound("driver code")
	}
	return tx.Driver(btoi(id))
}

// DriverByQR returns the driver whose QR code carries payload.
func (tx *Tx) DriverByQR(payload string) (*Driver, error) {
	id := tx.bucket(bucketDriverQR).Get([]byte(payload))
	if id == nil || payload == "" {
		return nil, NotFound("driver QR code")
	}
	return tx.Driver(btoi(id))
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
	if d.Code != prev.Code {
		if owner := tx.bucket(bucketDriverCodes).Get(compositeKey(d.OrganizationID, d.Code)); owner != nil && btoi(owner) != id {
			return nil, Conflict("driverCode %s is already used in organization %d", d.Code, d.OrganizationID)
		}
	}
	if d.ThirdPartyID != prev.ThirdPartyID {
		if owner := tx.bucket(bucketDriverThirdParty).Get(compositeKey(d.OrganizationID, d.ThirdPartyID)); owner != nil && btoi(owner) != id {
			return nil, Conflict("driverThirdPartyId %q is already used in organization %d", d.ThirdPartyID, d.OrganizationID)
		}
	}
	d.UpdatedAt = tx.now
	if err := tx.putDriver(&d, prev); err != nil {
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
	if err := tx.bucket(bucketDriverCodes).Delete(compositeKey(d.OrganizationID, d.Code)); err != nil {
		return err
	}
	if err := tx.bucket(bucketDriverThirdParty).Delete(compositeKey(d.OrganizationID, d.ThirdPartyID)); err != nil {
		return err
	}
	if err := tx.bucket(bucketDriverQR).Delete([]byte(d.QRPayload)); err != nil {
		return err
	}
	if err := tx.bucket(bucketDrivers).Delete(itob(id)); err != nil {
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

func (f DriverFilter) match(d *Driver) bool {
	return (f.OrganizationIDs == nil || f.OrganizationIDs[d.OrganizationID]) &&
		(f.ID == 0 || d.ID == f.ID) &&
		(f.ThirdPartyID == "" || d.ThirdPartyID == f.ThirdPartyID) &&
		(f.FirstName == nil || f.FirstName.MatchString(d.FirstName)) &&
		(f.LastName == nil || f.LastName.MatchString(d.LastName)) &&
		(f.IsActive == nil || d.IsActive == *f.IsActive)
}

// Driver sort keys. Names compare ignoring case; createdAt is creation
// order, which is id order.
const (
	DriverByCreatedAt      = "createdAt"
	DriverByDrivingLicense = "drivingLicense"
	DriverByFirstName      = "firstName"
	DriverByLastName       = "lastName"
)

var driverSortKeys = sortKeys[Driver]{
	DriverByCreatedAt:      func(a, b *Driver) int { return cmp.Compare(a.ID, b.ID) },
	DriverByDrivingLicense: func(a, b *Driver) int { return strings.Compare(a.DrivingLicense, b.DrivingLicense) },
	DriverByFirstName: func(a, b *Driver) int {
		return strings.Compare(strings.ToLower(a.FirstName), strings.ToLower(b.FirstName))
	},
	DriverByLastName: func(a, b *Driver) int {
		return strings.Compare(strings.ToLower(a.LastName), strings.ToLower(b.LastName))
	},
}

// Drivers returns the page p of the drivers matching f in the order s (by
// default by id) and their total count.
func (tx *Tx) Drivers(f DriverFilter, s Sort, p Page) ([]Driver, int, error) {
	var all []Driver
	err := tx.bucket(bucketDrivers).ForEach(func(_, v []byte) error {
		var d Driver
		if err := jsonUnmarshal(v, &d); err != nil {
			return err
		}
		if f.match(&d) {
			all = append(all, d)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return sortPage(all, s, driverSortKeys, func(d *Driver) int64 { return d.ID }, p)
}

// touchOrganizationConfigs bumps the configuration version of every device
// of an organization so that the broker delivers what changed (driver
// credentials, SD-card retention).
func (tx *Tx) touchOrganizationConfigs(orgID int64) error {
	imeis, err := tx.orgIMEIs(orgID)
	if err != nil {
		return err
	}
	for _, imei := range imeis {
		if err := tx.touchDeviceConfig(imei); err != nil {
			return err
		}
	}
	return nil
}

// touchDeviceConfig bumps one device's configuration version without
// changing its settings.
func (tx *Tx) touchDeviceConfig(imei string) error {
	ds, err := tx.DeviceSettings(imei)
	if err != nil {
		return err
	}
	ds.Version++
	return putJSON(tx.bucket(bucketDeviceSettings), []byte(imei), ds)
}
