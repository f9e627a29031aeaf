package store

// DeviceStateRecords are the record sets of media files, auxiliary cameras, billing, data usage and device links, credentials and queued commands, whose rules are in media.go, mediaretention.go, auxcameras.go, billing.go, datausage.go, devicelink.go.
type DeviceStateRecords interface {
	// Each accessor returns the records of one type in this transaction.
	AuxCameras() AuxCameraRecords
	DeviceBillings() DeviceBillingRecords
	DataUsagePeriods() DataUsagePeriodRecords
	DeviceLinks() DeviceLinkRecords
	DeviceCredentials() DeviceCredentialRecords
	QueuedCommands() QueuedCommandRecords
}

// AuxCameraRecords are the auxiliary cameras known for each device, one
// list per device.
type AuxCameraRecords interface {
	// Get returns the cameras stored for imei, in the order they were put;
	// ErrNotFound when none were ever put.
	Get(imei string) ([]AuxCamera, error)
	// Put stores cams, in their order, as imei's cameras, replacing those
	// stored before.
	Put(imei string, cams []AuxCamera) error
	// Delete forgets imei's cameras; forgetting none is no error.
	Delete(imei string) error
}

// DeviceBillingRecords are the devices' billing records, by IMEI.
type DeviceBillingRecords interface {
	// Get returns imei's billing record; ErrNotFound when there is none.
	Get(imei string) (*DeviceBilling, error)
	// Put stores b as b.IMEI's billing record, replacing any earlier one.
	Put(b *DeviceBilling) error
	// Delete removes imei's billing record; removing none is no error.
	Delete(imei string) error
}

// DataUsagePeriodRecords are the devices' data usage periods, by device and
// period start (to the millisecond): a time series of each device.
type DataUsagePeriodRecords interface {
	// Put stores p as the record of p.IMEI's period starting at
	// p.PeriodStart, replacing any earlier record of that period.
	Put(p *DataUsagePeriod) error
	// Latest returns up to n of imei's periods (all when n <= 0), the
	// latest start first.
	Latest(imei string, n int) ([]DataUsagePeriod, error)
	// DeleteDevice removes every period of imei.
	DeleteDevice(imei string) error
	// Purge is one batch p of the data usage retention: it deletes each
	// period p.Owners says is due, taking the periods as records of
	// ownership 0 recorded at their start, and returns how many it deleted
	// and where the next batch resumes (nil: done).
	Purge(p SeriesPurge) (int, []byte, error)
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
