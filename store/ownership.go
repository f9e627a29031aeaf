package store

import (
	"errors"
	"time"
)

// Ownership: an IMEI changes hands. Removing a device from its organization
// and adding it to another one (of the same partner or of another) must not
// hand the new owner what the device recorded for the old one, so every
// AddDevice starts a new ownership with a number of its own
// (Device.Ownership), and what is recorded for the device meanwhile carries
// that number: events, GPS samples, trips, driver check-in sessions and
// driver assignments. The device-scoped reads (a device's events, an event
// by id, GPS, event file links, trips and the drivers who drove them) keep
// only the records of the device's current ownership, in the store query,
// so counts and pages are those of the current owner.
//
// What the cloud recorded decides, not the time the device put on it: an
// event the device buffered while offline and sends after the move has a
// time from before the move and still belongs to the new owner, who
// received it. A device's own event ids are unique within one ownership: a
// reset device may count them from the start again.
//
// The old owner's records stay until its retention purge deletes them
// (records keyed by organization, such as its event list, alarms and
// webhook deliveries, stay visible to it meanwhile); no later owner sees
// them, even when the device returns to the same organization.
//
// Records written before ownership numbers existed carry none (0), nor do
// devices added before then. Such a record belongs to such a device's
// current ownership when it is of the device's organization (where the
// record says) and was recorded at or after the device was added
// (Device.CreatedAt): an event's CreatedAt, an assignment's CreatedAt, and
// for the records without a cloud time (GPS samples, trips, sessions) the
// device's time. A device added since has a number, so records without one
// are never its own.

// What a device keeps on its own SD card carries only the device's time;
// Device.PreviousOwnerUntil says when the IMEI's previous ownership ended,
// and recordings from before it are not the current owner's.
//
// The retention purge deletes each record after the purge days of the
// organization it was recorded for, whichever organization the device is
// in now, or none: the ownership log (DeviceOwnership, one entry per
// ownership of each IMEI: its organization and when it ended) says which
// organization each ownership was.
//
// A device added before ownership numbers gets its entry, under ownership
// 0, when it is removed.

// DeviceOwnership is one entry of the ownership log: one stay of an IMEI
// in an organization.
type DeviceOwnership struct {
	IMEI string
	// Ownership is the stay's number (Device.Ownership); 0 for the stay of
	// a device added before ownership numbers, logged when it was removed.
	Ownership      int64
	OrganizationID int64
	// EndedAt is when the device left the organization, to the
	// millisecond; zero while it is there.
	EndedAt time.Time
}

// startOwnership gives d, about to be added, a new ownership number and
// the end of the IMEI's previous ownership, and logs the ownership.
func (tx *Tx) startOwnership(d *Device) error {
	d.PreviousOwnerUntil = time.Time{}
	switch last, err := tx.rec.DeviceOwnerships().Last(d.IMEI); {
	case err == nil:
		d.PreviousOwnerUntil = last.EndedAt
	case !errors.Is(err, ErrNotFound):
		return err
	}
	o := &DeviceOwnership{IMEI: d.IMEI, OrganizationID: d.OrganizationID}
	if err := tx.rec.DeviceOwnerships().Insert(o); err != nil {
		return err
	}
	d.Ownership = o.Ownership
	return nil
}

// endOwnership logs that d leaves its organization now.
func (tx *Tx) endOwnership(d *Device) error {
	return tx.rec.DeviceOwnerships().Put(&DeviceOwnership{IMEI: d.IMEI, Ownership: d.Ownership,
		OrganizationID: d.OrganizationID, EndedAt: tx.now})
}

// ownershipNow is the current ownership of imei (0: none, or from before
// ownership numbers), for records that arrive without the device at hand.
func (tx *Tx) ownershipNow(imei string) int64 {
	d, err := tx.Device(imei)
	if err != nil {
		return 0
	}
	return d.Ownership
}

// ownershipOrgs maps each ownership of imei to its organization. Records
// from before ownership numbers (0) are of the organization the log names
// for them (the device was removed since), else of the one the device is
// in now.
func (tx *Tx) ownershipOrgs(imei string) (map[int64]int64, error) {
	log, err := tx.rec.DeviceOwnerships().List(imei)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(log)+1)
	for _, o := range log {
		out[o.Ownership] = o.OrganizationID
	}
	if _, logged := out[0]; !logged {
		d, err := tx.Device(imei)
		switch {
		case err == nil:
			out[0] = d.OrganizationID
		case !errors.Is(err, ErrNotFound):
			return nil, err
		}
	}
	return out, nil
}

// holds reports whether a record stamped with ownership, of organization
// org (0: the record does not say) and recorded at recorded, belongs to d's
// current ownership.
func (d *Device) holds(ownership, org int64, recorded time.Time) bool {
	switch {
	case ownership != d.Ownership:
		return false
	case ownership != 0:
		return true
	}
	return (org == 0 || org == d.OrganizationID) && !recorded.Before(d.CreatedAt)
}

// HoldsEvent reports whether e was recorded for d's current ownership; an
// event of an earlier owner of the IMEI is not d's.
func (d *Device) HoldsEvent(e *Event) bool {
	return e.IMEI == d.IMEI && d.holds(e.Ownership, e.OrganizationID, e.CreatedAt)
}
