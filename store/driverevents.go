package store

// RecordDriverEvents stores each driver transition of dev as an event of
// its type, with its webhook.
func (tx *Tx) RecordDriverEvents(dev *Device, ts []DriverTransition) error {
	return nil
}
