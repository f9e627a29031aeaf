package cloudapi

import (
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// routes is the API's index: every route of fleetcam, top to bottom. Each
// chain reads left to right: scope declaration (scoped tokens allowed),
// authentication, access checks, handler. s.handle runs a handler that
// returns its error and answers that error (errors.go).
func (s *Server) routes(r *gin.Engine) {
	r.GET("/healthz", s.handle(s.healthz))
	r.GET("/readyz", s.handle(s.readyz))
	if s.cfg.Metrics.Addr == "" {
		r.GET("/metrics", gin.WrapH(s.metricsHandler))
	}

	v2 := r.Group("/v2")
	auth := s.authenticate
	write := s.writer
	partner := s.partnerOnly
	// host marks the writes of an organization's settings and records
	// (drivers, alarm recipients...), which a guest partner of a shared
	// organization may not do, whether the call names the organization in
	// its path, its query or its body, and the reads of the host's
	// configuration (webhook URLs, users); a guest still adds and manages
	// its own devices there.
	host := s.hostOnly
	// anyScope admits a scoped token of any feature, for reading the
	// devices of its scope.
	anyScope := scoped(allFeatures...)

	v2.GET("/openapi.json", s.handle(s.openapiDoc))

	// Sessions and identity.
	v2.POST("/authenticate", s.limitByAddress, s.handle(s.login))
	v2.GET("/me", anyScope, auth, s.handle(s.me))
	v2.POST("/scoped-token", auth, s.handle(s.createScopedToken))
	v2.POST("/reset-password/:token", s.handle(s.resetPassword))

	// Organizations. GET /organizations/sso authenticates with the
	// organization's own SSO JWT, not an API token.
	v2.GET("/organizations/sso", s.handle(s.sso))
	v2.POST("/organizations", auth, partner, write, s.ssoSecretHolder, s.handle(s.createOrganization))
	v2.GET("/organizations", auth, s.handle(s.listOrganizations))
	v2.GET("/organizations/:orgId", auth, s.handle(s.getOrganization))
	v2.PATCH("/organizations/:orgId", auth, write, host, s.handle(s.updateOrganization))
	v2.GET("/organizations/:orgId/default-settings", auth, s.handle(s.defaultSettings))

	// Sharing an organization takes the other partner's consent: the creating
	// partner invites with PATCH partnerIds, the invited partner answers.
	v2.GET("/partners/organization-invitations", auth, partner, s.handle(s.listOrganizationInvitations))
	v2.POST("/partners/organization-invitations/:orgId/accept", auth, partner, write, s.handle(s.acceptOrganizationInvitation))
	v2.POST("/partners/organization-invitations/:orgId/decline", auth, partner, write, s.handle(s.declineOrganizationInvitation))

	// Users: partner contacts and organization users.
	v2.POST("/partners/:partnerId/contacts", auth, partner, write, s.handle(s.createPartnerContact))
	v2.GET("/partners/:partnerId/contacts", auth, partner, s.handle(s.listPartnerContacts))
	v2.GET("/partner-contacts", auth, partner, s.handle(s.listPartnerContacts))
	v2.POST("/organizations/:orgId/users", auth, write, host, s.handle(s.createOrganizationUser))
	v2.GET("/organizations/:orgId/users", auth, host, s.handle(s.listOrganizationUsers))

	// Device inventory and groups.
	v2.POST("/organizations/:orgId/devices", auth, write, s.handle(s.addDevice))
	v2.GET("/organizations/:orgId/devices", anyScope, auth, s.handle(s.listOrganizationDevices))
	v2.DELETE("/organizations/:orgId/devices/:imei", auth, write, s.handle(s.removeDevice))
	v2.GET("/partners/devices", auth, partner, s.handle(s.listPartnerDevices))
	v2.GET("/partner-devices", auth, partner, s.handle(s.listPartnerDevices))
	v2.GET("/devices/:imei", anyScope, auth, s.handle(s.getDevice))
	v2.PATCH("/devices/:imei", auth, write, s.handle(s.updateDevice))
	v2.GET("/organizations/:orgId/groups", auth, s.handle(s.listGroups))
	v2.POST("/organizations/:orgId/groups", auth, write, host, s.handle(s.createGroup))
	v2.POST("/organizations/:orgId/groups/:groupId/devices", auth, write, s.handle(s.assignGroupDevices))

	// The nodes of the cluster, for the partner's administrators.
	v2.GET("/cluster", auth, partner, s.partnerEditor, s.handle(s.clusterNodes))

	// Audit log.
	v2.GET("/audit-logs", auth, s.handle(s.listAuditLogs))

	// Device configuration: PUT replaces, the organization POST sets what it names.
	v2.GET("/devices/:imei/device-config", auth, s.handle(s.getDeviceConfig))
	v2.PUT("/devices/:imei/device-config", auth, write, s.handle(s.putDeviceConfig))
	v2.PUT("/devices/device-config", auth, write, s.handle(s.putDevicesConfig))
	v2.GET("/organizations/:orgId/device-settings", auth, s.handle(s.getOrgDeviceSettings))
	v2.POST("/organizations/:orgId/device-settings", auth, write, host, s.handle(s.postOrgDeviceSettings))

	// Event configuration: PUT and the organization POST replace, PATCH changes what it names.
	v2.GET("/devices/:imei/event-config", auth, s.handle(s.getEventConfig))
	v2.PUT("/devices/:imei/event-config", auth, write, s.handle(s.putDeviceEventConfig))
	v2.PUT("/devices/event-config", auth, write, s.handle(s.putDevicesEventConfig))
	v2.GET("/organizations/:orgId/event-settings", auth, s.handle(s.getOrgEventSettings))
	v2.POST("/organizations/:orgId/event-settings", auth, write, host, s.handle(s.postOrgEventSettings))
	v2.PATCH("/organizations/:orgId/event-settings", auth, write, host, s.handle(s.patchOrgEventSettings))

	// Privacy mode and what it keeps enabled.
	v2.POST("/devices/privacy-control", auth, write, s.handle(s.postPrivacyControl))
	v2.GET("/devices/:imei/privacy-control", auth, s.handle(s.getPrivacyControl))
	v2.GET("/devices/:imei/privacy-config", auth, s.handle(s.getPrivacyConfig))
	v2.PATCH("/devices/bulk/privacy-config", auth, write, s.handle(s.patchBulkPrivacyConfig))
	v2.GET("/organizations/:orgId/privacy-config", auth, s.handle(s.getOrgPrivacyConfig))
	v2.PATCH("/organizations/:orgId/privacy-config", auth, write, host, s.handle(s.patchOrgPrivacyConfig))

	// Wi-Fi hotspot (AI-12): switch, and passwords for drivers.
	v2.GET("/devices/:imei/hotspot", auth, s.secrets, s.handle(s.getHotspot))
	v2.PUT("/devices/:imei/hotspot", auth, write, s.handle(s.putHotspot))
	v2.POST("/devices/wifi-password", auth, s.secrets, s.handle(s.postWifiPassword))

	// Commands and data that reach the device.
	v2.GET("/devices/:imei/format-storage", auth, write, s.handle(s.formatStorage))
	v2.GET("/devices/:imei/gps", scoped(FeatureDeviceGPS), auth, s.handle(s.getGPS))

	// Webhooks: organization settings, device subscriptions, signing secret,
	// delivery log and endpoint state.
	v2.GET("/organizations/:orgId/webhook-settings", auth, host, s.handle(s.getWebhookSettings))
	v2.POST("/organizations/:orgId/webhook-settings", auth, write, host, s.handle(s.replaceWebhookSettings))
	v2.PATCH("/organizations/:orgId/webhook-settings", auth, write, host, s.handle(s.patchWebhookSettings))
	v2.POST("/organizations/:orgId/webhook-secret/rotate", auth, write, host, s.handle(s.rotateWebhookSecret))
	v2.GET("/organizations/:orgId/webhooks", auth, host, s.handle(s.listWebhooks))
	v2.POST("/organizations/:orgId/webhooks", auth, write, host, s.handle(s.addWebhook))
	v2.PUT("/organizations/:orgId/webhooks", auth, write, host, s.handle(s.replaceWebhooks))
	v2.DELETE("/organizations/:orgId/webhooks/:webhookId", auth, write, host, s.handle(s.deleteWebhook))
	v2.GET("/organizations/:orgId/webhook-endpoints", auth, host, s.handle(s.listWebhookEndpoints))
	v2.GET("/organizations/:orgId/webhook-deliveries", auth, s.handle(s.listWebhookDeliveries))
	v2.POST("/organizations/:orgId/webhook-deliveries/:deliveryId/redeliver", auth, write, host, s.handle(s.redeliverWebhook))

	// Events: device and organization queries, review, deletion.
	event := scoped(FeatureDeviceEvent)
	media := s.media
	v2.GET("/devices/:imei/events", event, auth, s.handle(s.listDeviceEvents))
	v2.GET("/devices/:imei/events/:eventId", event, auth, s.handle(s.getDeviceEvent))
	v2.DELETE("/devices/:imei/events/:eventId", auth, write, s.handle(s.deleteDeviceEvent))
	v2.PATCH("/devices/event-review-state", auth, write, s.handle(s.reviewEvents))
	v2.POST("/organizations/:orgId/events", event, auth, s.handle(s.listOrganizationEvents))
	v2.POST("/devices/:imei/virtual-event", auth, write, s.handle(s.createVirtualEvent))

	// Geofences, delivered to the device with its configuration.
	v2.PUT("/devices/:imei/geofences", auth, write, s.handle(s.putGeofences))
	v2.GET("/devices/:imei/geofences", auth, s.handle(s.getGeofences))

	// Media: event files, recordings, live video, ADAS calibration images.
	v2.GET("/devices/:imei/event-file-link", event, auth, media, s.handle(s.eventFileLink))
	v2.GET("/devices/:imei/recording-ranges", scoped(FeatureDeviceRecordingTimeline), auth, media, s.handle(s.recordingRanges))
	v2.POST("/devices/:imei/connect-media", scoped(FeatureDeviceLiveStreaming), auth, media, s.handle(s.connectMedia))
	v2.GET("/devices/:imei/adas-calibration-images", auth, media, s.handle(s.adasCalibrationImages))
	v2.DELETE("/devices/:imei/adas-delete-calibration-images", auth, write, media, s.handle(s.deleteADASImages))
	v2.GET("/devices/:imei/adas-delete-calibration-images", auth, write, media, s.handle(s.deleteADASImages))

	// Signed media URLs (no bearer token): device uploads and live frames,
	// downloads and live viewing. They stream, outside the call timeout.
	v2.PUT("/media/upload/:imei/:fileType/:cameraId/:fileId", s.handle(s.uploadMedia))
	v2.GET("/media/files/:imei/:fileType/:cameraId/:fileId", s.handle(s.downloadMedia))
	v2.POST("/media/live/:imei/:stream/frames", s.handle(s.liveFrame))
	v2.GET("/media/live/:imei/:stream", s.handle(s.watchLive))

	// Drivers: profiles, QR codes, assignments to devices, check-out and driving history.
	v2.GET("/drivers", auth, s.handle(s.listDrivers))
	v2.POST("/drivers", auth, write, host, s.handle(s.createDrivers))
	v2.PATCH("/drivers", auth, write, host, s.handle(s.updateDrivers))
	v2.PUT("/drivers", auth, write, host, s.handle(s.setDriversActive))
	v2.DELETE("/drivers", auth, write, host, s.handle(s.deleteDrivers))
	v2.GET("/drivers/:driverId/qr-code", auth, s.handle(s.driverQRCode))
	v2.POST("/drivers/devices", auth, write, host, s.handle(s.assignDrivers))
	v2.DELETE("/drivers/devices", auth, write, host, s.handle(s.unassignDrivers))
	v2.POST("/devices/:imei/driver-checkout", auth, write, s.handle(s.checkoutDriver))
	v2.GET("/driving-history", auth, s.handle(s.listDrivingHistory))

	// Alarms: the report, details, actions, comments, simulation and e-mail recipients.
	v2.GET("/alarm-definitions", auth, s.handle(s.listAlarmDefinitions))
	v2.GET("/alarms", auth, s.handle(s.listAlarms))
	v2.GET("/alarms/:alarmId", auth, s.handle(s.getAlarm))
	v2.POST("/alarms/:alarmId/actions", auth, write, s.handle(s.actOnAlarm))
	v2.POST("/alarms/:alarmId/comments", auth, write, s.handle(s.commentOnAlarm))
	v2.POST("/devices/:imei/alarm-simulator", auth, write, s.handle(s.simulateAlarm))
	v2.GET("/recipients/alarms", auth, s.handle(s.listRecipients(store.RecipientAlarms)))
	v2.POST("/recipients/alarms", auth, write, host, s.handle(s.addRecipient(store.RecipientAlarms)))
	v2.PATCH("/recipients/alarms/:recipientId", auth, write, host, s.handle(s.updateRecipient))
	v2.DELETE("/recipients/alarms/:recipientId", auth, write, host, s.handle(s.deleteRecipient(store.RecipientAlarms)))
	v2.GET("/recipients/health", auth, s.handle(s.listRecipients(store.RecipientHealth)))
	v2.POST("/recipients/health", auth, write, host, s.handle(s.addRecipient(store.RecipientHealth)))
	v2.DELETE("/recipients/health/:recipientId", auth, write, host, s.handle(s.deleteRecipient(store.RecipientHealth)))

	// Auxiliary cameras and billing (partners only).
	v2.GET("/devices/:imei/auxiliary-cameras", auth, partner, s.handle(s.listAuxCameras))
	v2.GET("/devices/:imei/auxiliary-cameras/search", auth, partner, write, s.handle(s.searchAuxCameras))
	v2.POST("/devices/:imei/auxiliary-cameras/pair", auth, partner, write, s.handle(s.pairAuxCameras))
	v2.POST("/devices/:imei/auxiliary-cameras/unpair", auth, partner, write, s.handle(s.unpairAuxCameras))
	v2.POST("/auxiliary-cameras/billing-status", auth, partner, s.handle(s.auxBillingStatus))
	v2.POST("/devices/auxiliary-cameras/billing-status", auth, partner, s.handle(s.auxBillingStatus))
	v2.POST("/auxiliary-cameras/billing", auth, partner, write, s.handle(s.setAuxBilling))
	v2.POST("/devices/auxiliary-cameras/billing", auth, partner, write, s.handle(s.setAuxBilling))
	v2.GET("/devices/:imei/billing-status", auth, partner, s.handle(s.deviceBillingStatus))
	v2.GET("/devices/rma-devices", auth, s.handle(s.rmaDevices))
	v2.PUT("/devices/:imei/billing-status/:billingStatus", auth, partner, write, s.handle(s.setDeviceBillingStatus))
	v2.PUT("/devices/billing-status/:billingStatus", auth, partner, write, s.handle(s.setBulkBillingStatus))
	v2.GET("/organizations/:orgId/devices/billing-status", auth, partner, s.handle(s.organizationBillingStatus))
	v2.PUT("/devices/:imei/data-profile/:dataProfileId", auth, partner, write, s.handle(s.setDeviceDataProfile))
	v2.PUT("/devices/data-profile/:dataProfileId", auth, partner, write, s.handle(s.setBulkDataProfile))
	v2.PUT("/organizations/:orgId/devices/data-profile/:dataProfileId", auth, partner, write, s.handle(s.setOrganizationDevicesDataProfile))
	v2.GET("/organizations/:orgId/data-profile", auth, partner, s.handle(s.organizationDataProfile))
	v2.PUT("/organizations/:orgId/data-profile", auth, partner, write, host, s.handle(s.setOrganizationDataProfile))

	// OAuth 2.0 client credentials for machine-to-machine integrations: a
	// partner's or an organization's editors manage its clients (a guest
	// partner not those of a shared organization); a client buys tokens
	// with its secret and introspects tokens, both braked per client
	// address and per client like sign-ins.
	oauth := s.oauthManager
	v2.POST("/oauth/clients/:entityType/:entityId", auth, write, host, oauth, s.handle(s.createOAuthClient))
	v2.GET("/oauth/clients", auth, oauth, s.handle(s.listOAuthClients))
	v2.GET("/oauth/clients/:clientId", auth, oauth, s.handle(s.getOAuthClient))
	v2.PATCH("/oauth/clients/:clientId", auth, write, oauth, s.handle(s.updateOAuthClient))
	v2.DELETE("/oauth/clients/:clientId", auth, write, oauth, s.handle(s.deleteOAuthClient))
	v2.PUT("/oauth/clients/:clientId/secret", auth, write, oauth, s.handle(s.rotateOAuthClientSecret))
	v2.POST("/oauth/token", s.limitByAddress, s.handle(s.oauthToken))
	v2.POST("/oauth/introspect", s.limitByAddress, s.handle(s.introspectOAuthToken))

	// Partner statistics and device data usage.
	v2.GET("/partners/operational-statistics", auth, partner, s.handle(s.operationalStatistics))
	v2.GET("/devices/:imei/data-usage", scoped(FeatureDeviceInfo), auth, s.handle(s.deviceDataUsage))

	// Device control. One-shot commands are immediate (the device must be
	// online: 417); operating mode, USB OTG, tailgating mute, camera names
	// and PIN codes are settings delivered with the configuration, so an
	// offline device gets them when it connects. PIN codes are issued anew
	// and shown once (only their hashes are kept).
	v2.POST("/devices/:imei/reboot", auth, write, s.handle(s.rebootDevice))
	v2.POST("/devices/:imei/factory-reset", auth, write, s.handle(s.factoryResetDevice))
	v2.POST("/devices/:imei/wakeup", auth, write, s.handle(s.wakeupDevice))
	v2.PUT("/devices/:imei/demo-mode", auth, write, s.handle(s.setMode(store.ModeDemo)))
	v2.DELETE("/devices/:imei/demo-mode", auth, write, s.handle(s.setMode(store.ModeNormal)))
	v2.PUT("/devices/:imei/semi-online", auth, write, s.handle(s.setMode(store.ModeSemiOnline)))
	v2.POST("/devices/:imei/otg-settings", auth, write, s.handle(s.postOTGSettings))
	v2.POST("/devices/tailgating-event-mute/configure", auth, write, s.handle(s.configureTailgatingMute))
	v2.GET("/devices/:imei/cameras", scoped(FeatureDeviceLiveStreaming), auth, s.handle(s.getCameras))
	v2.PATCH("/devices/:imei/cameras", auth, write, s.handle(s.patchCameras))
	v2.GET("/devices/:imei/cameras/:cameraId/snapshot", auth, media, s.handle(s.cameraSnapshot))
	v2.POST("/devices/:imei/pin-codes", auth, write, s.secrets, s.handle(s.postDevicePinCodes))
	v2.POST("/organizations/:orgId/default-settings/pin-codes", auth, write, host, s.secrets, s.handle(s.postOrgPinCodes))

	// ADAS calibration: measurements, calibration now and its state,
	// auto-calibration, recalibration; accelerometer calibration.
	v2.GET("/devices/:imei/calibrate-adas", auth, s.handle(s.getCalibrateADAS))
	v2.PUT("/devices/:imei/calibrate-adas", auth, write, s.handle(s.putCalibrateADAS))
	v2.POST("/devices/:imei/calibrate-adas", auth, write, s.handle(s.postCalibrateADAS))
	v2.GET("/devices/:imei/calibrate-adas/state", auth, s.handle(s.getCalibrateADASState))
	v2.POST("/devices/auto-calibration/config", auth, write, s.handle(s.postAutoCalibrationConfig))
	v2.GET("/devices/:imei/auto-calibration/status", auth, s.handle(s.getAutoCalibrationStatus))
	v2.POST("/devices/auto-recalibrate", auth, write, s.handle(s.postAutoRecalibrate))
	v2.POST("/organizations/:orgId/devices/calibrate-accelerometer", auth, write, s.handle(s.postCalibrateAccelerometer))

	// User, contact and organization management: bulk device adds (each
	// device as POST /organizations/{orgId}/devices adds it), the portal's
	// white label and password reset e-mails (before sign-in), each user's
	// own password and settings (any access level), deleting users and
	// setting their permissions, external users of organizations, editing
	// partner contacts, renaming and deleting groups, deleting
	// organizations that hold no device.
	v2.POST("/organizations/:orgId/bulk-devices", auth, write, s.handle(s.addBulkDevices))
	v2.PUT("/organizations/:orgId/partner-bulk-devices", auth, partner, write, s.handle(s.addBulkDevices))
	v2.GET("/white-label-information/:whiteLabelDomainAddress", s.limitByAddress, s.handle(s.whiteLabelInformation))
	v2.POST("/forget-password/:email", s.limitByAddress, s.handle(s.forgotPassword))
	v2.POST("/users/:userId/change-password", auth, s.handle(s.changePassword))
	v2.PUT("/users/update-settings", auth, s.handle(s.putUserSettings))
	v2.DELETE("/users/:userId", auth, write, s.handle(s.deleteUser))
	v2.PATCH("/users/:userId/organizations/:orgId/permissions", auth, write, host, s.handle(s.patchUserPermissions))
	v2.PATCH("/partners/:partnerId/contacts/:partnerContactId", auth, partner, write, s.handle(s.patchPartnerContact))
	v2.DELETE("/partners/:partnerId/contacts/:partnerContactId", auth, partner, write, s.handle(s.deletePartnerContact))
	v2.DELETE("/organizations/:orgId", auth, partner, write, host, s.handle(s.deleteOrganization))
	v2.GET("/organizations/:orgId/external-users", auth, host, s.handle(s.listExternalUsers))
	v2.POST("/organizations/:orgId/external-users", auth, write, host, s.handle(s.addExternalUser))
	v2.DELETE("/organizations/:orgId/external-users", auth, write, host, s.handle(s.removeExternalUser))
	v2.PUT("/organizations/:orgId/groups", auth, write, host, s.handle(s.updateGroup))
	v2.DELETE("/organizations/:orgId/groups", auth, write, host, s.handle(s.deleteGroup))

	// Device data: trips, telemetry and safety score, links to several
	// event files, SD-card retention, fleet reports of data usage and
	// health, recording encryption keys (credentials: not for viewers,
	// every read audited) and the organization album of in-cabin snapshots.
	v2.GET("/devices/:imei/trips", scoped(FeatureDeviceGPS), auth, s.handle(s.getDeviceTrips))
	v2.GET("/devices/:imei/score", event, auth, s.handle(s.getDeviceScore))
	v2.GET("/devices/:imei/telemetry", scoped(FeatureDeviceInfo), auth, s.handle(s.getDeviceTelemetry))
	v2.GET("/devices/:imei/:cameraId/telemetry", scoped(FeatureDeviceInfo), auth, s.handle(s.getCameraTelemetry))
	v2.GET("/devices/:imei/event-file-links", event, auth, media, s.handle(s.eventFileLinks))
	v2.GET("/devices/:imei/retention-config", auth, s.handle(s.getRetentionConfig))
	v2.PUT("/devices/:imei/retention-config", auth, write, s.handle(s.putRetentionConfig))
	v2.GET("/device-data-usage", auth, s.handle(s.dataUsageReport))
	v2.POST("/devices/bulk-data-usage", auth, s.handle(s.bulkDataUsage))
	v2.GET("/organizations/:orgId/devices-data-usage", auth, s.handle(s.organizationDataUsage))
	v2.GET("/device-health", auth, s.handle(s.deviceHealthReport))
	v2.POST("/associated-devices", auth, s.handle(s.associatedDevices))
	v2.GET("/devices/:imei/recording-encryption-keys", auth, s.keyReaders, s.handle(s.getRecordingKeys))
	v2.POST("/organizations/:orgId/get-recording-encryption-keys", auth, s.keyReaders, s.handle(s.orgRecordingKeys))
	v2.PUT("/generate-encryption-key", auth, write, s.handle(s.generateEncryptionKey))
	v2.GET("/organization-album/:orgId/album", auth, media, s.handle(s.albumImages))
	v2.GET("/organization-album/:orgId/album/config", auth, s.handle(s.getAlbumConfig))
	v2.POST("/organization-album/:orgId/album/config", auth, write, host, s.handle(s.postAlbumConfig))
	v2.POST("/organization-album/:orgId/album/status", auth, write, host, s.handle(s.postAlbumImageStatus))

	// Event notification recipients: the e-mail addresses told of each
	// event type on a device, kept in the device's settings; the bulk write
	// changes the caller's devices of an organization or an IMEI list.
	v2.GET("/devices/:imei/notification-recipients", auth, s.handle(s.getEventRecipients))
	v2.DELETE("/devices/:imei/notification-recipients/:email", auth, write, s.handle(s.deleteEventRecipient))
	v2.PUT("/devices/:imei/events/:eventType/notification-recipients", auth, write, s.handle(s.putEventRecipients))
	v2.PUT("/devices/events/:eventType/notification-recipients", auth, write, s.handle(s.putBulkEventRecipients))
}
