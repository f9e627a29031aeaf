package postgres

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// The tables of the simple keyed record types (keyed.go), each with the
// column of every member of its records but the key.
var (
	hotspotTable = keyed(store.KeyedHotspots, tableDeviceHotspots, "imei",
		value("is_on", func(h *store.HotspotState) *bool { return &h.On }),
		text("password", func(h *store.HotspotState) *string { return &h.Password }),
		at("password_changed_at", func(h *store.HotspotState) *time.Time { return &h.PasswordChangedAt }))
	// A device's settings are documents the API reads and writes whole,
	// NULL where the device has none of its own.
	deviceSettingsTable = keyed(store.KeyedDeviceSettings, tableDeviceSettings, "imei",
		value("version", func(s *store.DeviceSettings) *int64 { return &s.Version }),
		doc("device", func(s *store.DeviceSettings) **store.DeviceConfig { return &s.Device }, ""),
		doc("events", func(s *store.DeviceSettings) **store.EventConfig { return &s.Events }, ""),
		doc("privacy", func(s *store.DeviceSettings) **store.PrivacyConfig { return &s.Privacy }, ""),
		text("privacy_mode", func(s *store.DeviceSettings) *string { return &s.PrivacyMode }),
		doc("privacy_mode_config", func(s *store.DeviceSettings) **store.PrivacyModeConfig { return &s.PrivacyModeConfig }, ""),
		doc("geofences", func(s *store.DeviceSettings) *[]store.Geofence { return &s.Geofences }, ""),
		doc("control", func(s *store.DeviceSettings) **store.DeviceControl { return &s.Control }, ""),
		doc("camera_retention", func(s *store.DeviceSettings) *[]store.CameraRetention { return &s.CameraRetention }, ""),
		doc("notification_recipients", func(s *store.DeviceSettings) *map[string][]string { return &s.NotificationRecipients }, ""),
		at("updated_at", func(s *store.DeviceSettings) *time.Time { return &s.UpdatedAt }))
	orgSettingsTable = keyed(store.KeyedOrgSettings, tableOrgSettings, "organization_id",
		value("forbid_legacy_firmware", func(s *store.OrgSettings) *bool { return &s.ForbidLegacyFirmware }),
		doc("device", func(s *store.OrgSettings) **store.DeviceConfig { return &s.Device }, ""),
		doc("events", func(s *store.OrgSettings) **store.EventConfig { return &s.Events }, ""),
		doc("privacy", func(s *store.OrgSettings) **store.PrivacyConfig { return &s.Privacy }, ""),
		doc("privacy_mode_config", func(s *store.OrgSettings) **store.PrivacyModeConfig { return &s.PrivacyModeConfig }, ""),
		doc("control", func(s *store.OrgSettings) **store.DeviceControl { return &s.Control }, ""),
		at("updated_at", func(s *store.OrgSettings) *time.Time { return &s.UpdatedAt }))
	albumTable = keyed(store.KeyedAlbums, "organization_albums", "organization_id",
		at("enabled_at", func(a *store.Album) *time.Time { return &a.EnabledAt }),
		doc("statuses", func(a *store.Album) *map[string]string { return &a.Statuses }, "{}"))
	healthStateTable = keyed(store.KeyedHealthStates, tableHealthStates, "imei",
		text("recording_test", func(h *store.HealthState) *string { return &h.RecordingTest }),
		value("adas_calibrated", func(h *store.HealthState) *bool { return &h.AdasCalibrated }),
		at("reported_at", func(h *store.HealthState) *time.Time { return &h.ReportedAt }))
	billingTable = keyed(store.KeyedDeviceBillings, tableDeviceBilling, "imei",
		value("aux_billing_status", func(b *store.DeviceBilling) *string { return &b.AuxBillingStatus }),
		at("aux_billing_updated_at", func(b *store.DeviceBilling) *time.Time { return &b.AuxBillingUpdatedAt }),
		at("subscription_updated_at", func(b *store.DeviceBilling) *time.Time { return &b.SubscriptionUpdatedAt }),
		value("refurbished", func(b *store.DeviceBilling) *bool { return &b.Refurbished }),
		at("refurbished_at", func(b *store.DeviceBilling) *time.Time { return &b.RefurbishedAt }))
	credentialTable = keyed(store.KeyedDeviceCredentials, tableDeviceCredentials, "imei",
		blob("token_hash", func(c *store.DeviceCredential) *[]byte { return &c.TokenHash }),
		at("issued_at", func(c *store.DeviceCredential) *time.Time { return &c.IssuedAt }),
		value("generation", func(c *store.DeviceCredential) *int { return &c.Generation }),
		at("revoked_at", func(c *store.DeviceCredential) *time.Time { return &c.RevokedAt }),
		value("last_bootstrap", func(c *store.DeviceCredential) *int64 { return &c.LastBootstrap }))
	webhookSettingsTable = keyed(store.KeyedWebhookSettings, tableWebhookSettings, "organization_id",
		texts("gps_urls", func(s *store.WebhookSettings) *[]string { return &s.GPSURLs }),
		texts("event_urls", func(s *store.WebhookSettings) *[]string { return &s.EventURLs }),
		texts("alarm_urls", func(s *store.WebhookSettings) *[]string { return &s.AlarmURLs }),
		texts("activation_urls", func(s *store.WebhookSettings) *[]string { return &s.ActivationURLs }),
		value("notify_media_available", func(s *store.WebhookSettings) *bool { return &s.NotifyMediaAvailable }),
		value("subscribe_for_alarm_updates", func(s *store.WebhookSettings) *bool { return &s.SubscribeForAlarmUpdates }),
		doc("system_messages", func(s *store.WebhookSettings) *[]store.SystemMessagesWebhook { return &s.SystemMessages }, "[]"),
		value("allow_insecure_urls", func(s *store.WebhookSettings) *bool { return &s.AllowInsecureURLs }),
		at("updated_at", func(s *store.WebhookSettings) *time.Time { return &s.UpdatedAt }))
	webhookSecretTable = keyed(store.KeyedWebhookSecrets, tableWebhookSecrets, "organization_id",
		blob("salt", func(s *store.WebhookSecret) *[]byte { return &s.Salt }),
		blob("previous_salt", func(s *store.WebhookSecret) *[]byte { return &s.PreviousSalt }),
		at("previous_until", func(s *store.WebhookSecret) *time.Time { return &s.PreviousUntil }),
		at("created_at", func(s *store.WebhookSecret) *time.Time { return &s.CreatedAt }),
		at("rotated_at", func(s *store.WebhookSecret) *time.Time { return &s.RotatedAt }))
)

// keyedTables are the tables of every simple keyed record type.
var keyedTables = []keyedKind{hotspotTable, deviceSettingsTable, orgSettingsTable, albumTable, healthStateTable,
	billingTable, credentialTable, webhookSettingsTable, webhookSecretTable}

// The kinds of record of the keyed tables are derived from their
// declarations.
var _ = func() bool {
	for _, k := range keyedTables {
		kind, ck := k.copyKind()
		copyKinds[kind] = ck
	}
	return true
}()

// Hotspots implements store.TrackRecords.
func (t *tx) Hotspots() store.KeyedRecords[string, store.HotspotState] {
	return keyedRows[string, store.HotspotState]{t}
}

// DeviceSettings implements store.TrackRecords.
func (t *tx) DeviceSettings() store.KeyedRecords[string, store.DeviceSettings] {
	return keyedRows[string, store.DeviceSettings]{t}
}

// OrganizationSettings implements store.TrackRecords.
func (t *tx) OrganizationSettings() store.KeyedRecords[int64, store.OrgSettings] {
	return keyedRows[int64, store.OrgSettings]{t}
}

// Albums implements store.TrackRecords.
func (t *tx) Albums() store.KeyedRecords[int64, store.Album] {
	return keyedRows[int64, store.Album]{t}
}

// DeviceBillings implements store.DeviceStateRecords.
func (t *tx) DeviceBillings() store.KeyedRecords[string, store.DeviceBilling] {
	return keyedRows[string, store.DeviceBilling]{t}
}

// DeviceCredentials implements store.DeviceStateRecords.
func (t *tx) DeviceCredentials() store.KeyedRecords[string, store.DeviceCredential] {
	return keyedRows[string, store.DeviceCredential]{t}
}

// WebhookSettings implements store.WebhookRecords.
func (t *tx) WebhookSettings() store.KeyedRecords[int64, store.WebhookSettings] {
	return keyedRows[int64, store.WebhookSettings]{t}
}

// WebhookSecrets implements store.WebhookRecords.
func (t *tx) WebhookSecrets() store.KeyedRecords[int64, store.WebhookSecret] {
	return keyedRows[int64, store.WebhookSecret]{t}
}

// keyedColumn is a column of a keyed table: its name, the scan target of it in
// a record and what a scan of it leaves to finish, and the parameter of it
// a write of a record sends.
type keyedColumn[T any] struct {
	name   string
	scan   func(r *T) any
	finish func(r *T)
	arg    func(r *T) (any, error)
}

// value is a NOT NULL column of the member field points at, as it is.
func value[T, V any](name string, field func(*T) *V) keyedColumn[T] {
	return keyedColumn[T]{name: name, scan: func(r *T) any { return field(r) },
		arg: func(r *T) (any, error) { return *field(r), nil }}
}

// text is a text column of a string member: NULL for the empty string.
func text[T any](name string, field func(*T) *string) keyedColumn[T] {
	return keyedColumn[T]{name: name, scan: func(r *T) any { return zeroText{field(r)} },
		arg: func(r *T) (any, error) { s := *field(r); return pgtype.Text{String: s, Valid: s != ""}, nil }}
}

// at is a timestamptz column of a time member: NULL for the zero time.
func at[T any](name string, field func(*T) *time.Time) keyedColumn[T] {
	return keyedColumn[T]{name: name, scan: func(r *T) any { return zeroTime{field(r)} },
		arg: func(r *T) (any, error) { return nullTime(*field(r)), nil }}
}

// blob is a bytea column of a byte slice member: NULL for none.
func blob[T any](name string, field func(*T) *[]byte) keyedColumn[T] {
	return keyedColumn[T]{name: name, scan: func(r *T) any { return field(r) },
		arg: func(r *T) (any, error) {
			if b := *field(r); len(b) > 0 {
				return b, nil
			}
			return nil, nil
		}}
}

// texts is a NOT NULL text[] column of a string slice member: empty for
// none, and an empty one reads as nil.
func texts[T any](name string, field func(*T) *[]string) keyedColumn[T] {
	return keyedColumn[T]{name: name, scan: func(r *T) any { return field(r) },
		finish: func(r *T) {
			if len(*field(r)) == 0 {
				*field(r) = nil
			}
		},
		arg: func(r *T) (any, error) {
			if s := *field(r); s != nil {
				return s, nil
			}
			return []string{}, nil
		}}
}

// doc is a jsonb column of a member as a JSON document: empty (NULL when
// empty is "") for a nil member or one of no element, and NULL or empty
// reads as the zero value.
func doc[T, V any](name string, field func(*T) *V, empty string) keyedColumn[T] {
	return keyedColumn[T]{name: name, scan: func(r *T) any { return jsonDoc[V]{field(r), empty} },
		arg: func(r *T) (any, error) {
			v := *field(r)
			if none(v) {
				return nullZero(empty), nil
			}
			b, err := json.Marshal(v)
			return string(b), err
		}}
}

// none reports whether v is a nil pointer, or a map or slice of no
// element.
func none(v any) bool {
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	case reflect.Map, reflect.Slice:
		return rv.Len() == 0
	}
	return false
}

// jsonDoc scans a json(b) column into *into: the zero value for NULL and
// for the document empty.
type jsonDoc[V any] struct {
	into  *V
	empty string
}

// ScanBytes implements pgtype.BytesScanner.
func (d jsonDoc[V]) ScanBytes(raw []byte) error {
	var zero V
	*d.into = zero
	if raw == nil || string(raw) == d.empty {
		return nil
	}
	return json.Unmarshal(raw, d.into)
}

// zeroText scans a nullable text into *s: the empty string for NULL.
type zeroText struct{ s *string }

// ScanText implements pgtype.TextScanner.
func (z zeroText) ScanText(v pgtype.Text) error {
	*z.s = v.String
	return nil
}
