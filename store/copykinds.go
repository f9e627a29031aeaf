package store

import (
	"crypto/sha256"
	"time"
)

// The kinds of record a copy between engines moves (copy.go), in the one
// order every engine loads them in, and the Go type each kind's records
// travel as: the store's own record type where one says everything the
// engine keeps, else one of the small types below, which add what an
// engine keeps beside the record (its key, whether it is the open one).

// Kind is one kind of record of a copy: the records of one engine record
// set, each with its identity (id, key or sequence number) as stored.
type Kind string

// The kinds, each with the Go type its records travel as.
const (
	KindPartners             Kind = "partners"              // *Partner
	KindOrganizations        Kind = "organizations"         // *Organization, with the partners it admits and invites
	KindUsers                Kind = "users"                 // *User
	KindInviteTokens         Kind = "invite_tokens"         // *InviteToken
	KindGroups               Kind = "groups"                // *Group
	KindDevices              Kind = "devices"               // *Device
	KindDeviceOwnerships     Kind = "device_ownerships"     // *DeviceOwnership
	KindEvents               Kind = "events"                // *Event, with its files and comments
	KindEventDeviceIDs       Kind = "event_device_ids"      // *EventDeviceID
	KindGPSSamples           Kind = "gps_samples"           // *GPSSample
	KindTrips                Kind = "trips"                 // *StoredTrip
	KindDeviceTracks         Kind = "device_tracks"         // *StoredDeviceTrack
	KindHotspots             Kind = "hotspots"              // *HotspotState
	KindDeviceSettings       Kind = "device_settings"       // *DeviceSettings
	KindOrgSettings          Kind = "organization_settings" // *OrgSettings
	KindAlbums               Kind = "albums"                // *Album
	KindDrivers              Kind = "drivers"               // *Driver
	KindDriverSessions       Kind = "driver_sessions"       // *StoredDriverSession
	KindDriverPinFailures    Kind = "driver_pin_failures"   // *DriverPinFailures
	KindDriverAssignments    Kind = "driver_assignments"    // *DriverAssignment
	KindAlarms               Kind = "alarms"                // *Alarm, with its comments and actions
	KindAlarmTriples         Kind = "alarm_triples"         // *AlarmTriple
	KindOpenAlarms           Kind = "open_alarms"           // *OpenAlarm
	KindHealthStates         Kind = "health_states"         // *HealthState
	KindAlarmRecipients      Kind = "alarm_recipients"      // *AlarmRecipient
	KindMediaFiles           Kind = "media_files"           // *StoredMediaFile
	KindMediaEventRefs       Kind = "media_event_refs"      // *MediaEventRef
	KindMediaAges            Kind = "media_ages"            // *MediaAge
	KindMediaTrash           Kind = "media_trash"           // *MediaTrashEntry
	KindAuxCameras           Kind = "aux_cameras"           // *AuxCameraList
	KindDeviceBillings       Kind = "device_billing"        // *DeviceBilling
	KindDataUsage            Kind = "data_usage"            // *DataUsagePeriod
	KindDeviceLinks          Kind = "device_links"          // *DeviceLink
	KindDeviceCredentials    Kind = "device_credentials"    // *DeviceCredential
	KindQueuedCommands       Kind = "queued_commands"       // *QueuedCommand, each device's in queue order
	KindEventMail            Kind = "event_mail"            // *EventMail
	KindAuditEntries         Kind = "audit_log"             // *AuditEntry
	KindMessages             Kind = "messages"              // *Message
	KindWebhookOutbox        Kind = "webhook_outbox"        // *OutboxCounters, one record while either counter is not 0
	KindDeliveries           Kind = "webhook_deliveries"    // *Delivery
	KindWebhookSettings      Kind = "webhook_settings"      // *WebhookSettings
	KindWebhookSubscriptions Kind = "webhook_subscriptions" // *WebhookSubscription
	KindWebhookSecrets       Kind = "webhook_secrets"       // *WebhookSecret
	KindWebhookEndpoints     Kind = "webhook_endpoints"     // *WebhookEndpoint
	KindWebhookReceivers     Kind = "webhook_receivers"     // *WebhookReceiverTypes
	KindOAuthClients         Kind = "oauth_clients"         // *OAuthClient
)

// Kinds is every kind of record, each after the kinds its records refer
// to (partners before organizations before users, devices before their
// state, events before the media that names them, alarms before the open
// alarms): the order a copy loads them in, which a relational engine's
// foreign keys need. An engine's record sets are each in exactly one kind
// (every engine has a test that holds it to that).
var Kinds = []Kind{
	KindPartners, KindOrganizations, KindUsers, KindInviteTokens, KindGroups, KindDevices, KindDeviceOwnerships,
	KindEvents, KindEventDeviceIDs,
	KindGPSSamples, KindTrips, KindDeviceTracks, KindHotspots, KindDeviceSettings, KindOrgSettings, KindAlbums,
	KindDrivers, KindDriverSessions, KindDriverPinFailures, KindDriverAssignments,
	KindAlarms, KindAlarmTriples, KindOpenAlarms, KindHealthStates, KindAlarmRecipients,
	KindMediaFiles, KindMediaEventRefs, KindMediaAges, KindMediaTrash, KindAuxCameras, KindDeviceBillings,
	KindDataUsage, KindDeviceLinks, KindDeviceCredentials, KindQueuedCommands,
	KindEventMail,
	KindAuditEntries, KindMessages, KindWebhookOutbox, KindDeliveries, KindWebhookSettings,
	KindWebhookSubscriptions, KindWebhookSecrets, KindWebhookEndpoints, KindWebhookReceivers,
	KindOAuthClients,
}

// Sequence is one of the engines' id generators: what gives the next
// partner id, event id, message sequence… A copy carries each one's last
// value over, so that a record created after the copy gets an id above
// every copied one (and above every id given before, whether or not its
// record is still stored).
type Sequence string

// The sequences.
const (
	SeqPartners             Sequence = "partners"
	SeqOrganizations        Sequence = "organizations"
	SeqUsers                Sequence = "users"
	SeqGroups               Sequence = "groups"
	SeqOwnerships           Sequence = "device_ownerships"
	SeqEvents               Sequence = "events"
	SeqEventComments        Sequence = "event_comments"
	SeqTrips                Sequence = "trips"
	SeqDrivers              Sequence = "drivers"
	SeqDriverAssignments    Sequence = "driver_assignments"
	SeqAlarms               Sequence = "alarms"
	SeqAlarmNotes           Sequence = "alarm_notes"
	SeqAlarmRecipients      Sequence = "alarm_recipients"
	SeqQueuedCommands       Sequence = "queued_commands"
	SeqAuditEntries         Sequence = "audit_log"
	SeqMessages             Sequence = "messages"
	SeqDeliveries           Sequence = "webhook_deliveries"
	SeqWebhookSubscriptions Sequence = "webhook_subscriptions"
)

// Sequences is every sequence.
var Sequences = []Sequence{
	SeqPartners, SeqOrganizations, SeqUsers, SeqGroups, SeqOwnerships, SeqEvents, SeqEventComments, SeqTrips,
	SeqDrivers, SeqDriverAssignments, SeqAlarms, SeqAlarmNotes, SeqAlarmRecipients, SeqQueuedCommands,
	SeqAuditEntries, SeqMessages, SeqDeliveries, SeqWebhookSubscriptions,
}

// InviteToken is an open invitation token as InviteTokenRecords keep it:
// the SHA-256 of the token and the user it was issued to.
type InviteToken struct {
	Hash   [sha256.Size]byte
	UserID int64
}

// GPSSample is a GPS sample as GPSSampleRecords keep it: of a device, for
// the ownership it was recorded for (0: none).
type GPSSample struct {
	IMEI      string
	Ownership int64
	Point     GPSPoint
}

// StoredTrip is a trip and whether it is its device's open trip.
type StoredTrip struct {
	Trip
	Open bool
}

// StoredDeviceTrack is the track of a device.
type StoredDeviceTrack struct {
	IMEI  string
	Track DeviceTrack
}

// StoredDriverSession is a check-in session and whether it is its
// device's open one.
type StoredDriverSession struct {
	DriverSession
	Open bool
}

// DriverPinFailures are the times of a device's recent wrong PINs, oldest
// first.
type DriverPinFailures struct {
	IMEI  string
	Times []time.Time
}

// AlarmTriple is a (device, definition, createdAt to the millisecond) an
// alarm was inserted with, and the alarm last inserted with it, which may
// have been purged since (AlarmSet).
type AlarmTriple struct {
	IMEI         string
	DefinitionID int64
	CreatedAt    time.Time
	AlarmID      int64
}

// OpenAlarm says which system alarm holds a device and definition
// (OpenAlarmSet).
type OpenAlarm struct {
	IMEI         string
	DefinitionID int64
	AlarmID      int64
}

// StoredMediaFile is a media file record and whether the media service
// still has work on it (MediaFileRecords' pending list).
type StoredMediaFile struct {
	MediaFile
	Pending bool
}

// MediaEventRef says that an event references a media file.
type MediaEventRef struct {
	Ref     MediaRef
	EventID int64
}

// MediaTrashEntry is a blob key in the media trash.
type MediaTrashEntry struct {
	Blob string
}

// AuxCameraList is the auxiliary cameras stored for a device, in their
// order; a list may be empty (every camera unpaired), which is not the
// same as none stored.
type AuxCameraList struct {
	IMEI    string
	Cameras []AuxCamera
}

// OutboxCounters are the webhook outbox's two counters
// (WebhookOutboxRecords).
type OutboxCounters struct {
	Cursor     int64
	Generation int64
}

// WebhookReceiverTypes are the webhook types some URL of an organization
// receives (WebhookReceiverRecords).
type WebhookReceiverTypes struct {
	OrganizationID int64
	Types          []string
}
