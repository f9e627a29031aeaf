package store

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// DriverAssignment reserves a device for one driver from Start until End
// (zero: open-ended). A device has at most one driver assigned at a time and
// a driver at most one device. While assigned, the device accepts only the
// assigned driver's check-in, and its data is attributed to that driver when
// nobody is checked in; an assignment may also be made afterwards to
// attribute a past trip.
type DriverAssignment struct {
	ID             int64     `json:"id"`
	OrganizationID int64     `json:"organizationId"`
	DriverID       int64     `json:"driverId"`
	IMEI           string    `json:"imei"`
	Start          time.Time `json:"startTime"`
	End            time.Time `json:"endTime,omitzero"`
	CreatedAt      time.Time `json:"createdAt"`
	// Ownership is the device's ownership the assignment was made for (ownership.go).
	Ownership int64 `json:"ownership,omitempty"`
}

// endDeviceAssignments ends the assignments of a device that leaves its
// organization, so that its next owner can assign its own drivers and the
// device stops accepting this organization's drivers.
func endDeviceAssignments(tx *Tx, d *Device) error {
	as, err := tx.DeviceAssignments(d.IMEI)
	if err != nil {
		return err
	}
	for i := range as {
		if as[i].End.IsZero() || as[i].End.After(tx.now) {
			if _, err := tx.endAssignment(&as[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// covers reports whether the assignment is in force at t.
func (a *DriverAssignment) covers(t time.Time) bool {
	return !t.Before(a.Start) && (a.End.IsZero() || t.Before(a.End))
}

// overlaps reports whether two assignments share an instant.
func (a *DriverAssignment) overlaps(b *DriverAssignment) bool {
	aEnd, bEnd := a.End, b.End
	return (bEnd.IsZero() || a.Start.Before(bEnd)) && (aEnd.IsZero() || b.Start.Before(aEnd))
}

// AssignDriver records a; Start defaults to now. It refuses a driver or
// device of another organization, an inactive driver, an end not after the
// start, and an overlap with another assignment of the device or the driver.
func (tx *Tx) AssignDriver(a *DriverAssignment) error {
	d, err := tx.Driver(a.DriverID)
	if err != nil {
		return err
	}
	dev, err := tx.Device(a.IMEI)
	if err != nil {
		return err
	}
	switch {
	case d.OrganizationID != a.OrganizationID:
		return NotFound("driver %d", a.DriverID)
	case dev.OrganizationID != a.OrganizationID:
		return NotFound("device %s", a.IMEI)
	case !d.IsActive:
		return Invalid("", "driver %q is inactive and cannot be assigned", d.ThirdPartyID)
	}
	if a.Start.IsZero() {
		a.Start = tx.now
	}
	if !a.End.IsZero() && !a.End.After(a.Start) {
		return Invalid("endTime", "must be after startTime")
	}
	others, err := tx.assignmentsOf(a.IMEI, a.DriverID)
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.overlaps(a) {
			if o.IMEI == a.IMEI {
				return Conflict("device %s already has driver %d assigned from %s", a.IMEI, o.DriverID, o.Start.Format(time.RFC3339))
			}
			return Conflict("driver %q is already assigned to device %s from %s", d.ThirdPartyID, o.IMEI, o.Start.Format(time.RFC3339))
		}
	}
	a.CreatedAt, a.Ownership = tx.now, dev.Ownership
	if err := tx.rec.DriverAssignments().Insert(a); err != nil {
		return err
	}
	if err := tx.Audit(AuditChange{Action: "driver.assign", EntityType: "device", EntityID: a.IMEI,
		OrganizationID: a.OrganizationID, PartnerID: dev.PartnerID, After: a}); err != nil {
		return err
	}
	return tx.touchDeviceConfig(a.IMEI)
}

// UnassignDriver ends the assignments of driverID to imei that are in force
// or to come: one in force ends now, one in the future is deleted. Past
// assignments stay for attribution. None to end is ErrNotFound.
func (tx *Tx) UnassignDriver(orgID, driverID int64, imei string) error {
	as, err := tx.DeviceAssignments(imei)
	if err != nil {
		return err
	}
	as = slices.DeleteFunc(as, func(a DriverAssignment) bool {
		return a.OrganizationID != orgID || a.DriverID != driverID || !a.End.IsZero() && !a.End.After(tx.now)
	})
	if len(as) == 0 {
		return NotFound("assignment of driver %d to device %s", driverID, imei)
	}
	for _, a := range as {
		after, err := tx.endAssignment(&a)
		if err != nil {
			return err
		}
		if err := tx.Audit(AuditChange{Action: "driver.unassign", EntityType: "device", EntityID: imei,
			OrganizationID: orgID, Before: a, After: after}); err != nil {
			return err
		}
	}
	return tx.touchDeviceConfig(imei)
}

// endAssignment ends a, in force or to come, and returns what is left of
// it: one in force ends now, one in the future is deleted (zero).
func (tx *Tx) endAssignment(a *DriverAssignment) (DriverAssignment, error) {
	if !a.Start.Before(tx.now) {
		return DriverAssignment{}, tx.rec.DriverAssignments().Delete(a.ID)
	}
	after := *a
	after.End = tx.now
	return after, tx.rec.DriverAssignments().Update(&after)
}

// assignmentsOf returns the assignments of the device imei and those of
// the driver driverID, each once, by device, start and id: the overlap
// AssignDriver reports is the first in that order.
func (tx *Tx) assignmentsOf(imei string, driverID int64) ([]DriverAssignment, error) {
	out, err := tx.DeviceAssignments(imei)
	if err != nil {
		return nil, err
	}
	ofDriver, err := tx.rec.DriverAssignments().ByDriver(driverID)
	if err != nil {
		return nil, err
	}
	for _, a := range ofDriver {
		if a.IMEI != imei {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b DriverAssignment) int {
		return cmp.Or(strings.Compare(a.IMEI, b.IMEI), a.Start.Compare(b.Start), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// DeviceAssignments returns the assignments of imei, oldest first.
func (tx *Tx) DeviceAssignments(imei string) ([]DriverAssignment, error) {
	return tx.rec.DriverAssignments().ByDevice(imei)
}

// heldAssignments returns the assignments of dev made for its current
// ownership, oldest first.
func (tx *Tx) heldAssignments(dev *Device) ([]DriverAssignment, error) {
	as, err := tx.DeviceAssignments(dev.IMEI)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(as, func(a DriverAssignment) bool {
		return !dev.holds(a.Ownership, a.OrganizationID, a.CreatedAt)
	}), nil
}

// assignmentAt returns the assignment of dev's current ownership in force
// at t, or nil.
func (tx *Tx) assignmentAt(dev *Device, t time.Time) (*DriverAssignment, error) {
	as, err := tx.heldAssignments(dev)
	if err != nil {
		return nil, err
	}
	for i := len(as) - 1; i >= 0; i-- {
		if as[i].covers(t) {
			return &as[i], nil
		}
	}
	return nil, nil
}

// DriverAssignedDevice returns the IMEI the driver is assigned to now, or "".
func (tx *Tx) DriverAssignedDevice(driverID int64) (string, error) {
	as, err := tx.rec.DriverAssignments().ByDriver(driverID)
	if err != nil {
		return "", err
	}
	for _, a := range as {
		if a.covers(tx.now) {
			return a.IMEI, nil
		}
	}
	return "", nil
}

// DriverCredential is what a device accepts at check-in for one driver:
// the driver's PIN and QR payload. Both are secrets of the driver.
type DriverCredential struct {
	DriverID int64
	PinCode  string
	QRCode   string
}

// DriverCredentials are the PINs and QR payloads a device accepts: those of
// the drivers assigned to it now or later, or, when none is, those of every
// active driver of its organization.
func (tx *Tx) DriverCredentials(imei string) ([]DriverCredential, error) {
	dev, err := tx.Device(imei)
	if err != nil {
		return nil, err
	}
	allowed, err := tx.allowedDrivers(dev)
	if err != nil {
		return nil, err
	}
	out := make([]DriverCredential, 0, len(allowed))
	for _, d := range allowed {
		out = append(out, DriverCredential{DriverID: d.ID, PinCode: d.Code, QRCode: d.QRPayload})
	}
	return out, nil
}

func (tx *Tx) allowedDrivers(dev *Device) ([]Driver, error) {
	as, err := tx.heldAssignments(dev)
	if err != nil {
		return nil, err
	}
	var out []Driver
	seen := map[int64]bool{}
	for _, a := range as {
		if !a.End.IsZero() && !a.End.After(tx.now) || seen[a.DriverID] {
			continue
		}
		seen[a.DriverID] = true
		d, err := tx.Driver(a.DriverID)
		if err != nil {
			continue
		}
		if d.IsActive {
			out = append(out, *d)
		}
	}
	if len(seen) > 0 {
		return out, nil
	}
	active := true
	all, _, err := tx.Drivers(DriverFilter{OrganizationIDs: map[int64]bool{dev.OrganizationID: true}, IsActive: &active}, Sort{}, Page{})
	return all, err
}
