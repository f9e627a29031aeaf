package store

import (
	"errors"
	"time"
)

// Driver sessions: who is checked in at a device, from when to when. The
// device reports every check-in attempt as a driverCheckIn event carrying
// the PIN or the QR payload it read (or only the driver id when it verified
// the credential itself); the cloud resolves it, keeps the session, counts
// wrong PINs and tells the caller which driver events to record.

// Driver event types as the API names them.
const (
	driverCheckIn  = "driverCheckIn"
	driverCheckOut = "driverCheckOut"
	wrongPinCode   = "wrongPinCode"
	noCheckIn      = "noCheckIn"
)

// Wrong-PIN rule: this many wrong PINs within the window make one wrongPinCode event.
const (
	WrongPinAttempts = 3
	WrongPinWindow   = 3 * time.Minute
)

// DriverSession is one driver checked in at one device.
type DriverSession struct {
	IMEI           string    `json:"imei"`
	OrganizationID int64     `json:"organizationId"`
	DriverID       int64     `json:"driverId"`
	Start          time.Time `json:"start"`
	End            time.Time `json:"end,omitzero"`
	// Method is how the driver checked in: "pin", "qr" or "device" (the
	// device verified the credential and sent the driver id).
	Method string `json:"method"`
	// EndedBy is "device", "api", "checkIn" (a newer check-in replaced it)
	// or "deviceRemoved" (the device left its organization).
	EndedBy string `json:"endedBy,omitempty"`
	// EventID is the device's id of the check-in event, so a redelivery is a no-op.
	EventID string `json:"eventId,omitempty"`
	// Ownership is the device's ownership the session was recorded for (ownership.go).
	Ownership int64 `json:"ownership,omitempty"`
}

// DriverTransition is a driver event the state machine decided on; the
// caller records each one as an event of that type (and its webhook).
type DriverTransition struct {
	// Type is driverCheckIn, driverCheckOut, wrongPinCode or noCheckIn.
	Type     string    `json:"eventType"`
	DriverID int64     `json:"driverId,omitempty"`
	Time     time.Time `json:"time"`
	// DeviceEventID identifies the event for deduplication: the device's
	// event id, suffixed for events the cloud derives from it.
	DeviceEventID string `json:"deviceEventId,omitempty"`
	// Method is how a check-in was made (pin, qr, device).
	Method string `json:"method,omitempty"`
}

// dropDriverState ends the session open at a device that leaves its
// organization and forgets its wrong PINs.
func dropDriverState(tx *Tx, d *Device) error {
	if _, err := tx.endSession(d.IMEI, tx.now, "deviceRemoved", ""); err != nil {
		return err
	}
	return tx.rec.DriverPinFailures().Delete(d.IMEI)
}

// ApplyDriverEvent runs the driver state machine on an event from dev and
// returns the driver events to record, in order. Types other than the four
// driver events return nothing.
func (tx *Tx) ApplyDriverEvent(dev *Device, ev EventInput) ([]DriverTransition, error) {
	// The event's own rules come first: no driver is checked in or out by
	// an event the store refuses.
	if err := ev.validate(); err != nil {
		return nil, err
	}
	at := ev.Time
	switch ev.Type {
	case driverCheckIn:
		return tx.checkIn(dev, ev, at)
	case driverCheckOut:
		t, err := tx.endSession(dev.IMEI, at, "device", ev.DeviceEventID)
		if err != nil || t == nil {
			return nil, err
		}
		return []DriverTransition{*t}, nil
	case wrongPinCode, noCheckIn:
		return []DriverTransition{{Type: ev.Type, Time: at, DeviceEventID: ev.DeviceEventID}}, nil
	}
	return nil, nil
}

func (tx *Tx) checkIn(dev *Device, ev EventInput, at time.Time) ([]DriverTransition, error) {
	if open, err := tx.rec.DriverSessions().Current(dev.IMEI); err != nil {
		return nil, err
	} else if open != nil && ev.DeviceEventID != "" && open.EventID == ev.DeviceEventID {
		return nil, nil // redelivery of the check-in that opened this session
	}
	d, method, err := tx.resolveCheckIn(dev, ev)
	if err != nil {
		return nil, err
	}
	if d == nil {
		if ev.PinCode == "" {
			return nil, nil
		}
		return tx.wrongPin(dev.IMEI, at, ev.DeviceEventID)
	}
	if err := tx.rec.DriverPinFailures().Delete(dev.IMEI); err != nil {
		return nil, err
	}
	var out []DriverTransition
	prev, err := tx.endSession(dev.IMEI, at, "checkIn", ev.DeviceEventID+"/checkout")
	if err != nil {
		return nil, err
	}
	if prev != nil {
		out = append(out, *prev)
	}
	s := &DriverSession{IMEI: dev.IMEI, OrganizationID: dev.OrganizationID, DriverID: d.ID, Start: at, Method: method,
		EventID: ev.DeviceEventID, Ownership: dev.Ownership}
	if err := tx.rec.DriverSessions().Begin(s); err != nil {
		return nil, err
	}
	return append(out, DriverTransition{Type: driverCheckIn, DriverID: d.ID, Time: at, DeviceEventID: ev.DeviceEventID, Method: method}), nil
}

// resolveCheckIn finds the driver a check-in names, or nil when the
// credential is unknown or the driver may not check in at this device.
func (tx *Tx) resolveCheckIn(dev *Device, ev EventInput) (*Driver, string, error) {
	var d *Driver
	var method string
	var err error
	switch {
	case ev.QRCode != "":
		d, err = tx.DriverByQR(ev.QRCode)
		method = "qr"
	case ev.PinCode != "":
		d, err = tx.DriverByCode(dev.OrganizationID, ev.PinCode)
		method = "pin"
	case ev.DriverID != 0:
		d, err = tx.Driver(ev.DriverID)
		method = "device"
	default:
		return nil, "", nil
	}
	if err != nil {
		if isNotFound(err) {
			return nil, method, nil
		}
		return nil, "", err
	}
	if d.OrganizationID != dev.OrganizationID || !d.IsActive {
		return nil, method, nil
	}
	allowed, err := tx.allowedDrivers(dev)
	if err != nil {
		return nil, "", err
	}
	for _, a := range allowed {
		if a.ID == d.ID {
			return d, method, nil
		}
	}
	return nil, method, nil
}

// wrongPin counts a wrong PIN; the third within the window yields a
// wrongPinCode event and starts the count again.
func (tx *Tx) wrongPin(imei string, at time.Time, eventID string) ([]DriverTransition, error) {
	failures := tx.rec.DriverPinFailures()
	times, err := failures.Get(imei)
	if err != nil {
		return nil, err
	}
	kept := times[:0]
	for _, t := range times {
		if at.Sub(t) < WrongPinWindow && !t.After(at) {
			kept = append(kept, t)
		}
	}
	kept = append(kept, at)
	if len(kept) >= WrongPinAttempts {
		if err := failures.Delete(imei); err != nil {
			return nil, err
		}
		return []DriverTransition{{Type: wrongPinCode, Time: at, DeviceEventID: eventID + "/wrongPin"}}, nil
	}
	return nil, failures.Put(imei, kept)
}

// endSession closes the open session of imei at t and returns its
// driverCheckOut, or nil when nobody is checked in.
func (tx *Tx) endSession(imei string, t time.Time, by, eventID string) (*DriverTransition, error) {
	sessions := tx.rec.DriverSessions()
	s, err := sessions.Current(imei)
	if err != nil || s == nil {
		return nil, err
	}
	if t.Before(s.Start) {
		t = s.Start
	}
	s.End, s.EndedBy = t, by
	if err := sessions.End(s); err != nil {
		return nil, err
	}
	return &DriverTransition{Type: driverCheckOut, DriverID: s.DriverID, Time: t, DeviceEventID: eventID}, nil
}

// CheckOutDriver ends the session at imei on behalf of the API caller and
// returns its driverCheckOut. Nobody checked in is ErrNotFound.
func (tx *Tx) CheckOutDriver(imei string) (*DriverTransition, error) {
	dev, err := tx.Device(imei)
	if err != nil {
		return nil, err
	}
	t, err := tx.endSession(imei, tx.now, "api", "")
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, NotFound("checked-in driver on device %s", imei)
	}
	return t, tx.Audit(AuditChange{Action: "driver.checkout", EntityType: "device", EntityID: imei,
		OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID, After: t})
}

// CheckedInDriver returns the open session of imei, or nil.
func (tx *Tx) CheckedInDriver(imei string) (*DriverSession, error) {
	return tx.rec.DriverSessions().Current(imei)
}

// CurrentDriver returns the driver attributed to dev's data at time at: the
// driver checked in then, else the driver assigned then, of dev's current
// ownership. It returns nil and no error when there is none. Ingest stamps
// events, trips and GPS with it.
func (tx *Tx) CurrentDriver(dev *Device, at time.Time) (*Driver, error) {
	id, err := tx.driverIDAt(dev, at)
	if err != nil || id == 0 {
		return nil, err
	}
	d, err := tx.Driver(id)
	if isNotFound(err) {
		return &Driver{ID: id}, nil // deleted since; history still names the id
	}
	return d, err
}

func (tx *Tx) driverIDAt(dev *Device, at time.Time) (int64, error) {
	s, err := tx.rec.DriverSessions().LastStarted(dev.IMEI, at)
	if err != nil {
		return 0, err
	}
	if s != nil && (s.End.IsZero() || at.Before(s.End)) && dev.holds(s.Ownership, s.OrganizationID, s.Start) {
		return s.DriverID, nil
	}
	a, err := tx.assignmentAt(dev, at)
	if err != nil || a == nil {
		return 0, err
	}
	return a.DriverID, nil
}

// DriverSegment is a stretch of time attributed to one driver.
type DriverSegment struct {
	DriverID int64     `json:"driverId"`
	Start    time.Time `json:"startTime"`
	End      time.Time `json:"endTime,omitzero"`
}

// DriverSegments returns who drove dev between start and end: the check-in
// sessions of its current ownership overlapping the range, clipped to it,
// or when there are none the assignments overlapping it. end zero means
// until now.
func (tx *Tx) DriverSegments(dev *Device, start, end time.Time) ([]DriverSegment, error) {
	if end.IsZero() {
		end = tx.now
	}
	var out []DriverSegment
	clip := func(id int64, s, e time.Time) {
		if s.Before(start) {
			s = start
		}
		if e.IsZero() || e.After(end) {
			e = end
		}
		if e.After(s) || e.Equal(s) && s.Equal(start) {
			out = append(out, DriverSegment{DriverID: id, Start: s, End: e})
		}
	}
	sessions, err := tx.rec.DriverSessions().StartedBy(dev.IMEI, end)
	if err != nil {
		return nil, err
	}
	for _, s := range sessions {
		if (s.End.IsZero() || s.End.After(start)) && dev.holds(s.Ownership, s.OrganizationID, s.Start) {
			clip(s.DriverID, s.Start, s.End)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	as, err := tx.heldAssignments(dev)
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		if !a.Start.After(end) && (a.End.IsZero() || a.End.After(start)) {
			clip(a.DriverID, a.Start, a.End)
		}
	}
	return out, nil
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// CheckedInDrivers maps every checked-in driver to the device it is at.
func (tx *Tx) CheckedInDrivers() (map[int64]string, error) {
	open, err := tx.rec.DriverSessions().AllCurrent()
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(open))
	for _, s := range open {
		out[s.DriverID] = s.IMEI
	}
	return out, nil
}

// purgeDriverSessions is the retention step of driver sessions. The session
// of a driver still checked in stays, however old.
func purgeDriverSessions(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error) {
	return tx.rec.DriverSessions().Purge(seriesPurge(tx, cut, from, limit))
}
