package store

import "time"

// Driver events in the event records: the event ingest stamps every event
// with the driver of its device at its time (eventDriver); the event's
// message records that driver's names as they are then (eventFact).

// eventDriver picks the driver of an event: the one the device or the
// state machine reported when it is a driver of the device's organization,
// else the driver attributed to the device at that time.
func eventDriver(tx *Tx, dev *Device, reportedID int64, at time.Time) (int64, error) {
	if reportedID != 0 {
		if d, err := tx.Driver(reportedID); err == nil && d.OrganizationID == dev.OrganizationID {
			return reportedID, nil
		}
	}
	d, err := tx.CurrentDriver(dev, at)
	if err != nil || d == nil {
		return 0, err
	}
	return d.ID, nil
}

// IsDriverEvent reports whether a device event type goes through the driver
// state machine (ApplyDriverEvent) rather than straight to the event records.
func IsDriverEvent(eventType string) bool {
	switch eventType {
	case driverCheckIn, driverCheckOut, wrongPinCode, noCheckIn:
		return true
	}
	return false
}

// RecordDriverEvents stores each driver transition of dev as an event of
// its type, with its webhook. base is the device event the transitions come
// from (its position and files go with the event of the same id); a zero
// base takes the position from the device's GPS.
func (tx *Tx) RecordDriverEvents(dev *Device, ts []DriverTransition, base EventInput) error {
	for _, t := range ts {
		in := EventInput{DeviceEventID: t.DeviceEventID, Type: t.Type, Time: t.Time, DriverID: t.DriverID}
		switch {
		case base.Time.IsZero():
			in.PositionFromGPS = true
		case t.DeviceEventID == base.DeviceEventID:
			in.Lat, in.Lon, in.Alt, in.Speed, in.Accuracy = base.Lat, base.Lon, base.Alt, base.Speed, base.Accuracy
			in.Severity, in.Files = base.Severity, base.Files
		default:
			in.Lat, in.Lon, in.Alt, in.Speed, in.Accuracy = base.Lat, base.Lon, base.Alt, base.Speed, base.Accuracy
		}
		if _, err := tx.IngestEvent(dev, in); err != nil {
			return err
		}
	}
	return nil
}
