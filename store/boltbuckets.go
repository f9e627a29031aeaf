package store

// The buckets of the record groups whose code has not moved to store/bolt
// yet, by the file that used them. store/bolt declares and creates every
// bucket; these go with the last code that names them.

// alarmhealth.go
var bucketHealthState = []byte("device_health_state")

// alarmrecipients.go
var bucketRecipients = []byte("alarm_recipients")

// auxcameras.go
var bucketAuxCameras = []byte("aux_cameras")

// billing.go
var bucketBilling = []byte("device_billing")

// datausage.go
var bucketDataUsage = []byte("data_usage") // imei, 0, period start ms → period

// geofences.go
var bucketDeviceTracks = []byte("device_tracks")

// gps.go
var bucketGPS = []byte("gps")

// hotspot.go
var bucketHotspot = []byte("device_hotspot")

// ownership.go
var bucketOwnerships = []byte("device_ownerships")

// webhookreceivers.go
var bucketWebhookReceivers = []byte("webhook_receivers")

// alarms.go
var (
	bucketAlarms       = []byte("alarms")        // id → alarm
	bucketAlarmOpen    = []byte("alarm_open")    // imei, definition → id of the open system alarm
	bucketAlarmTriples = []byte("alarm_triples") // imei, definition, created ms → id
	bucketAlarmNotes   = []byte("alarm_notes")   // sequences of comment and action ids
)

// devicelink.go
var (
	bucketDeviceLinks       = []byte("device_links")
	bucketDeviceCredentials = []byte("device_credentials")
	bucketDeviceCommands    = []byte("device_commands")
)

// drivers.go
var (
	bucketDrivers           = []byte("drivers")
	bucketDriverCodes       = []byte("driver_codes")        // org, code → driver id
	bucketDriverThirdParty  = []byte("driver_third_party")  // org, third-party id → driver id
	bucketDriverQR          = []byte("driver_qr")           // qr payload → driver id
	bucketDriverAssignments = []byte("driver_assignments")  // imei, 0, start ms, assignment id → assignment
	bucketDriverAssignIDs   = []byte("driver_assign_by_id") // assignment id → imei key
)

// driversessions.go
var (
	bucketDriverSessions = []byte("driver_sessions") // imei, 0, start ms → session
	bucketDriverCurrent  = []byte("driver_current")  // imei → key of the open session
	bucketPinFailures    = []byte("driver_pin_failures")
)

// eventcounts.go
var (
	bucketOrgEventHours = []byte("org_event_hours")
)

// events.go
var (
	bucketEvents         = []byte("events")
	bucketEventDeviceIDs = []byte("event_device_ids") // imei 0x00 device's event id → id(8) [ownership(8)]
	bucketDeviceEvents   = []byte("device_events")
	bucketOrgEvents      = []byte("org_events")
	bucketEventComments  = []byte("event_comments")
)

// media.go
var (
	bucketMedia        = []byte("media")
	bucketMediaPending = []byte("media_pending")
	bucketMediaEvents  = []byte("media_events")
	bucketMediaTrash   = []byte("media_trash")
	// bucketMediaAge indexes files with bytes to purge: imei, 0, retention
	// class, RecordedAt (unix ms), record key (mediaretention.go).
	bucketMediaAge = []byte("media_age")
)

// outbox.go
var (
	bucketOutbox        = []byte("webhook_outbox")
	bucketDeliveries    = []byte("webhook_deliveries")
	bucketQueue         = []byte("webhook_queue")
	bucketOrgDeliveries = []byte("webhook_org_deliv")
)

// settings.go
var (
	bucketDeviceSettings = []byte("device_settings")
	bucketOrgSettings    = []byte("org_settings")
)

// trips.go
var (
	bucketTrips    = []byte("trips")     // imei, 0, start ms → trip
	bucketTripOpen = []byte("trip_open") // imei → key of the open trip
)

// webhooks.go
var (
	bucketWebhookSettings = []byte("webhook_settings")
	bucketWebhookSubs     = []byte("webhook_subscriptions")
	bucketWebhookSecrets  = []byte("webhook_secrets")
	bucketWebhookEndpts   = []byte("webhook_endpoints")
)

// store.go
var (
	bucketMeta         = []byte("meta")
	bucketPartners     = []byte("partners")
	bucketUsers        = []byte("users")
	bucketUserEmails   = []byte("user_emails")
	bucketOrgs         = []byte("organizations")
	bucketDevices      = []byte("devices")
	bucketOrgDevices   = []byte("org_devices")
	bucketGroups       = []byte("groups")
	bucketAudit        = []byte("audit")
	bucketMessages     = []byte("messages")
	bucketInviteTokens = []byte("invite_tokens")
)

// storeBucket is one bucket of the store.
type storeBucket struct {
	name []byte
	// appends says new keys sort after the existing ones (sequence numbers,
	// or a device's or organization's time series). bbolt splits a full
	// page in half by default, which leaves such buckets with half-empty
	// pages for good: twice the file and twice the pages to write. Their
	// pages are left appendFill full instead.
	appends bool
}

// buckets is every bucket of the store whose code has not moved to
// store/bolt yet, by the file that owns it; store/bolt creates every
// bucket. Here only appendBuckets reads it.
var buckets = []storeBucket{
	// store.go
	{name: bucketMeta}, {name: bucketPartners}, {name: bucketUsers}, {name: bucketUserEmails},
	{name: bucketOrgs}, {name: bucketDevices}, {name: bucketOrgDevices}, {name: bucketGroups},
	{name: bucketAudit, appends: true}, {name: bucketMessages, appends: true}, {name: bucketInviteTokens},
	// alarmhealth.go, alarmrecipients.go, alarms.go
	{name: bucketHealthState}, {name: bucketRecipients},
	{name: bucketAlarms}, {name: bucketAlarmOpen}, {name: bucketAlarmTriples}, {name: bucketAlarmNotes},
	// auxcameras.go, billing.go, datausage.go
	{name: bucketAuxCameras}, {name: bucketBilling}, {name: bucketDataUsage},
	// devicelink.go
	{name: bucketDeviceLinks}, {name: bucketDeviceCredentials}, {name: bucketDeviceCommands},
	// drivers.go, driversessions.go
	{name: bucketDrivers}, {name: bucketDriverCodes}, {name: bucketDriverThirdParty},
	{name: bucketDriverQR}, {name: bucketDriverAssignments}, {name: bucketDriverAssignIDs},
	{name: bucketDriverSessions}, {name: bucketDriverCurrent}, {name: bucketPinFailures},
	// events.go, eventcounts.go
	{name: bucketEvents, appends: true}, {name: bucketEventDeviceIDs}, {name: bucketDeviceEvents, appends: true},
	{name: bucketOrgEvents, appends: true}, {name: bucketEventComments}, {name: bucketOrgEventHours},
	// geofences.go, gps.go, hotspot.go
	{name: bucketDeviceTracks}, {name: bucketGPS, appends: true}, {name: bucketHotspot},
	// media.go
	{name: bucketMedia}, {name: bucketMediaPending}, {name: bucketMediaEvents}, {name: bucketMediaTrash},
	{name: bucketMediaAge},
	// outbox.go
	{name: bucketOutbox}, {name: bucketDeliveries}, {name: bucketQueue}, {name: bucketOrgDeliveries},
	// ownership.go, settings.go, trips.go
	{name: bucketOwnerships}, {name: bucketDeviceSettings}, {name: bucketOrgSettings},
	{name: bucketTrips}, {name: bucketTripOpen},
	// webhooks.go, webhookreceivers.go
	{name: bucketWebhookSettings}, {name: bucketWebhookSubs}, {name: bucketWebhookSecrets},
	{name: bucketWebhookEndpts}, {name: bucketWebhookReceivers},
}
