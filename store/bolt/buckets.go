package bolt

// The buckets of the file, by record group. Keys are built so that each
// query reads one range: ids as 8 bytes big-endian, strings separated by a
// 0 byte, times as unix milliseconds, 8 bytes big-endian.

// meta
var (
	bucketMeta = []byte("meta") // schema_version → 8 bytes
)

// directory: partners, users, organizations, invitations, groups, devices
var (
	bucketPartners     = []byte("partners")
	bucketUsers        = []byte("users")
	bucketUserEmails   = []byte("user_emails")
	bucketOrgs         = []byte("organizations")
	bucketDevices      = []byte("devices")
	bucketOrgDevices   = []byte("org_devices")
	bucketGroups       = []byte("groups")
	bucketInviteTokens = []byte("invite_tokens")
	bucketOwnerships   = []byte("device_ownerships")
)

// events
var (
	bucketEvents         = []byte("events")
	bucketEventDeviceIDs = []byte("event_device_ids") // imei 0x00 device's event id → id(8) [ownership(8)]
	bucketDeviceEvents   = []byte("device_events")
	bucketOrgEvents      = []byte("org_events")
	bucketEventComments  = []byte("event_comments")
	bucketOrgEventHours  = []byte("org_event_hours")
)

// tracks: GPS, device tracks, trips, hotspots, settings
var (
	bucketGPS            = []byte("gps")
	bucketDeviceTracks   = []byte("device_tracks")
	bucketTrips          = []byte("trips")     // imei, 0, start ms → trip
	bucketTripOpen       = []byte("trip_open") // imei → key of the open trip
	bucketHotspot        = []byte("device_hotspot")
	bucketDeviceSettings = []byte("device_settings")
	bucketOrgSettings    = []byte("org_settings")
	bucketAlbums         = []byte("albums")
)

// drivers
var (
	bucketDrivers           = []byte("drivers")
	bucketDriverCodes       = []byte("driver_codes")        // org, code → driver id
	bucketDriverThirdParty  = []byte("driver_third_party")  // org, third-party id → driver id
	bucketDriverQR          = []byte("driver_qr")           // qr payload → driver id
	bucketDriverAssignments = []byte("driver_assignments")  // imei, 0, start ms, assignment id → assignment
	bucketDriverAssignIDs   = []byte("driver_assign_by_id") // assignment id → imei key
	bucketDriverSessions    = []byte("driver_sessions")     // imei, 0, start ms → session
	bucketDriverCurrent     = []byte("driver_current")      // imei → key of the open session
	bucketPinFailures       = []byte("driver_pin_failures")
)

// alarms
var (
	bucketAlarms       = []byte("alarms")        // id → alarm
	bucketAlarmOpen    = []byte("alarm_open")    // imei, definition → id of the open system alarm
	bucketAlarmTriples = []byte("alarm_triples") // imei, definition, created ms → id
	bucketAlarmNotes   = []byte("alarm_notes")   // sequences of comment and action ids
	bucketHealthState  = []byte("device_health_state")
	bucketRecipients   = []byte("alarm_recipients")
)

// device state: media, auxiliary cameras, billing, data usage, device links
var (
	bucketMedia             = []byte("media")
	bucketMediaPending      = []byte("media_pending")
	bucketMediaEvents       = []byte("media_events")
	bucketMediaTrash        = []byte("media_trash")
	bucketMediaAge          = []byte("media_age")
	bucketAuxCameras        = []byte("aux_cameras")
	bucketBilling           = []byte("device_billing")
	bucketDataUsage         = []byte("data_usage") // imei, 0, period start ms → period
	bucketDeviceLinks       = []byte("device_links")
	bucketDeviceCredentials = []byte("device_credentials")
	bucketDeviceCommands    = []byte("device_commands")
	bucketEventMail         = []byte("event_mail") // event id, 0, recipient → queued e-mail
)

// webhooks: audit log, messages, outbox, deliveries, webhook settings
var (
	bucketAudit            = []byte("audit")
	bucketMessages         = []byte("messages")
	bucketOutbox           = []byte("webhook_outbox")
	bucketDeliveries       = []byte("webhook_deliveries")
	bucketQueue            = []byte("webhook_queue")
	bucketOrgDeliveries    = []byte("webhook_org_deliv")
	bucketWebhookSettings  = []byte("webhook_settings")
	bucketWebhookSubs      = []byte("webhook_subscriptions")
	bucketWebhookSecrets   = []byte("webhook_secrets")
	bucketWebhookEndpts    = []byte("webhook_endpoints")
	bucketWebhookReceivers = []byte("webhook_receivers")
)

// OAuth clients
var bucketOAuthClients = []byte("oauth_clients")

// bucketSpec is one bucket of the file.
type bucketSpec struct {
	name []byte
	// appends says new keys sort after the existing ones (sequence numbers,
	// or a device's or organization's time series). bbolt splits a full
	// page in half by default, which leaves such buckets with half-empty
	// pages for good: twice the file and twice the pages to write. Their
	// pages are left appendFill full instead.
	appends bool
}

// buckets is every bucket of the file. OpenEngine creates each one that is
// missing; a bucket that goes away leaves this list and a migration deletes
// it.
var buckets = []bucketSpec{
	{name: bucketMeta},
	{name: bucketPartners}, {name: bucketUsers}, {name: bucketUserEmails}, {name: bucketOrgs},
	{name: bucketDevices}, {name: bucketOrgDevices}, {name: bucketGroups}, {name: bucketInviteTokens},
	{name: bucketOwnerships},
	{name: bucketEvents, appends: true}, {name: bucketEventDeviceIDs}, {name: bucketDeviceEvents, appends: true},
	{name: bucketOrgEvents, appends: true}, {name: bucketEventComments}, {name: bucketOrgEventHours},
	{name: bucketGPS, appends: true}, {name: bucketDeviceTracks}, {name: bucketTrips}, {name: bucketTripOpen},
	{name: bucketHotspot}, {name: bucketDeviceSettings}, {name: bucketOrgSettings}, {name: bucketAlbums},
	{name: bucketDrivers}, {name: bucketDriverCodes}, {name: bucketDriverThirdParty}, {name: bucketDriverQR},
	{name: bucketDriverAssignments}, {name: bucketDriverAssignIDs}, {name: bucketDriverSessions},
	{name: bucketDriverCurrent}, {name: bucketPinFailures},
	{name: bucketAlarms}, {name: bucketAlarmOpen}, {name: bucketAlarmTriples}, {name: bucketAlarmNotes},
	{name: bucketHealthState}, {name: bucketRecipients},
	{name: bucketMedia}, {name: bucketMediaPending}, {name: bucketMediaEvents}, {name: bucketMediaTrash},
	{name: bucketMediaAge}, {name: bucketAuxCameras}, {name: bucketBilling}, {name: bucketDataUsage},
	{name: bucketDeviceLinks}, {name: bucketDeviceCredentials}, {name: bucketDeviceCommands},
	{name: bucketEventMail},
	{name: bucketAudit, appends: true}, {name: bucketMessages, appends: true},
	{name: bucketOutbox}, {name: bucketDeliveries}, {name: bucketQueue}, {name: bucketOrgDeliveries},
	{name: bucketWebhookSettings}, {name: bucketWebhookSubs}, {name: bucketWebhookSecrets},
	{name: bucketWebhookEndpts}, {name: bucketWebhookReceivers},
	{name: bucketOAuthClients},
}

// appendBuckets are the names of the buckets whose new keys sort after the
// existing ones.
var appendBuckets = func() map[string]bool {
	m := map[string]bool{}
	for _, b := range buckets {
		if b.appends {
			m[string(b.name)] = true
		}
	}
	return m
}()

// appendFill is how full pages of append buckets are left when they split.
const appendFill = 0.9
