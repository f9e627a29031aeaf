package store

import "time"

// DeviceStateRecords are the record sets of media files, auxiliary cameras, billing, data usage and device links, credentials and queued commands, whose rules are in media.go, mediaretention.go, auxcameras.go, billing.go, datausage.go, devicelink.go.
type DeviceStateRecords interface {
	// Each accessor returns the records of one type in this transaction.
	MediaFiles() MediaFileRecords
	MediaEventRefs() MediaEventRefRecords
	MediaAges() MediaAgeRecords
	MediaTrash() MediaTrashRecords
	AuxCameras() AuxCameraRecords
	DeviceBillings() KeyedRecords[string, DeviceBilling]
	DataUsagePeriods() DataUsagePeriodRecords
	DeviceLinks() DeviceLinkRecords
	DeviceCredentials() KeyedRecords[string, DeviceCredential]
	QueuedCommands() QueuedCommandRecords
}

// MediaFileRecords are the media file records, by MediaRef, and the set of
// those the media service still has work on (pending).
type MediaFileRecords interface {
	// Get returns the file r names; ErrNotFound when there is none.
	Get(r MediaRef) (*MediaFile, error)
	// Put stores m under m.Ref(), replacing any record there. pending says
	// whether the media service still has work on m: Pending lists m until
	// a Put with pending false or a Delete.
	Put(m *MediaFile, pending bool) error
	// Delete removes the file r names, its pending entry and the events'
	// references to it (MediaEventRefRecords), so that a file stored again
	// under r starts with none; removing one that is not stored is no
	// error.
	Delete(r MediaRef) error
	// Pending returns the pending files in the order of their keys
	// (MediaRef.Key, bytewise), at most limit of them (all when limit <= 0).
	Pending(limit int) ([]MediaFile, error)
	// OfType returns the files of the device imei whose FileType is
	// fileType, in the order of their keys (MediaRef.Key, bytewise).
	OfType(imei, fileType string) ([]MediaFile, error)
}

// MediaUploadedLookup is implemented by MediaFileRecords that tell whether
// many files are uploaded in one lookup, or none (an SQL engine: one
// statement, or what the page of events it read said of them); the store
// uses it for the files of a page of events, and Get one file after the
// other otherwise.
type MediaUploadedLookup interface {
	// Uploaded reports, for each of refs in order, whether the file is
	// stored and its bytes are uploaded.
	Uploaded(refs []MediaRef) ([]bool, error)
}

// MediaEventRefRecords record which events reference which media file:
// one entry per file and event id.
type MediaEventRefRecords interface {
	// Add records that event eventID references the file r names; adding
	// one that is recorded is no error.
	Add(r MediaRef, eventID int64) error
	// Delete forgets that event eventID references the file r names;
	// forgetting one that is not recorded is no error.
	Delete(r MediaRef, eventID int64) error
	// EventIDs returns the ids of the events that reference the file r
	// names, in ascending order.
	EventIDs(r MediaRef) ([]int64, error)
}

// MediaClass is a media file's retention class (mediaretention.go): which
// of the organization's purge days applies to its bytes.
type MediaClass byte

// MediaAge is one entry of the media age index, which the media purge
// walks: a file whose bytes are to be purged once they are old enough.
type MediaAge struct {
	Ref        MediaRef
	Class      MediaClass
	RecordedAt time.Time
}

// MediaAgeRecords are the entries of the media age index, by device,
// retention class and age (RecordedAt, to the millisecond). A file has at
// most one entry while the store's rules hold; the index does not check it.
type MediaAgeRecords interface {
	// Add indexes a.
	Add(a MediaAge) error
	// Delete removes the entry a; removing one that is not indexed is no
	// error.
	Delete(a MediaAge) error
	// TakeDue is one batch of the media purge of class. It walks the
	// entries of class device by device, in IMEI order and oldest first
	// within a device, from p.From (an earlier batch's resume position; the
	// start when nil). An entry is due when p.Owners says the record of its
	// file's Ownership (0 when the file is not stored) recorded at its age
	// is; a device's entries from p.Owners' Latest on are skipped. It
	// removes up to p.Limit due entries from the index and returns the
	// stored files among them (an entry whose file is gone is removed
	// alone), how many entries it removed, and where the next batch
	// resumes: the next due entry, or nil when there is none.
	TakeDue(class MediaClass, p SeriesPurge) ([]MediaFile, int, []byte, error)
}

// MediaTrashRecords are the blob keys whose bytes are to be deleted from the
// blob store once the transaction that dropped them has committed.
type MediaTrashRecords interface {
	// Add puts blob in the trash; adding one that is there is no error.
	Add(blob string) error
	// List returns the blob keys in the trash in bytewise order, at most
	// limit of them (all when limit <= 0).
	List(limit int) ([]string, error)
	// Delete takes blob out of the trash; taking one that is not there is
	// no error.
	Delete(blob string) error
}

// AuxCameraRecords are the auxiliary cameras known for each device, one
// list per device.
type AuxCameraRecords interface {
	// Get returns the cameras stored for imei, in the order they were put,
	// an empty list (not nil) when the list put was empty; ErrNotFound
	// when none was ever put.
	Get(imei string) ([]AuxCamera, error)
	// Put stores cams, in their order, as imei's cameras, replacing those
	// stored before.
	Put(imei string, cams []AuxCamera) error
	// Delete forgets imei's cameras; forgetting none is no error.
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
