package store

// DeviceStateRecords are the record sets of media files, auxiliary cameras, billing, data usage and device links, credentials and queued commands, whose rules are in media.go, mediaretention.go, auxcameras.go, billing.go, datausage.go, devicelink.go.
type DeviceStateRecords interface {
	// Each accessor returns the records of one type in this transaction.
	DeviceLinks() DeviceLinkRecords
	DeviceCredentials() DeviceCredentialRecords
	QueuedCommands() QueuedCommandRecords
}

// DeviceLinkRecords are the devices' link states, by IMEI. They are read
// and written on every device connection and health report.
type DeviceLinkRecords interface {
	// Get returns imei's link state; ErrNotFound when none was stored.
	Get(imei string) (*DeviceLink, error)
	// Put stores l as l.IMEI's link state, replacing any earlier one.
	Put(l *DeviceLink) error
	// Delete removes imei's link state; removing none is no error.
	Delete(imei string) error
	// Each calls visit with every stored link state, in IMEI order, and
	// stops at the first error visit returns, which it returns. visit must
	// not write link states.
	Each(visit func(l *DeviceLink) error) error
}

// DeviceCredentialRecords are the devices' credentials, by IMEI.
type DeviceCredentialRecords interface {
	// Get returns imei's credential; ErrNotFound when none was stored.
	Get(imei string) (*DeviceCredential, error)
	// Put stores c as c.IMEI's credential, replacing any earlier one.
	Put(c *DeviceCredential) error
	// Delete removes imei's credential; removing none is no error.
	Delete(imei string) error
}

// QueuedCommandRecords are the commands queued for each device, in the
// order they were queued. Command ids are not checked for uniqueness: each
// lookup by id takes the oldest command of the device with that id.
type QueuedCommandRecords interface {
	// Add queues c for c.IMEI, after every command queued before it.
	Add(c *QueuedCommand) error
	// List returns the commands queued for imei, oldest first.
	List(imei string) ([]QueuedCommand, error)
	// Get returns the oldest command queued for imei whose ID is id;
	// ErrNotFound when there is none.
	Get(imei, id string) (*QueuedCommand, error)
	// Delete removes the oldest command queued for imei whose ID is id and
	// reports whether there was one.
	Delete(imei, id string) (bool, error)
}
