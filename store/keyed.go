package store

// Key is the key of a simple keyed record type: an id (an organization's)
// or a string (a device's IMEI).
type Key interface{ int64 | string }

// Keyed declares a simple keyed record type: one record per key, read,
// replaced and deleted whole, and asked for by its key alone. Each engine
// derives the type's record set (KeyedRecords) and its kind of record for
// copies from the declaration and the one bucket or table it keeps the
// records in, so such a type needs no engine code of its own
// (docs/storage.md, "Adding a record type"). A type whose records are
// queried by anything but their key (a list, a range, a purge) has a
// record interface and engine code of its own instead.
type Keyed[K Key, T any] struct {
	// Kind is the kind of record a copy between engines moves the records
	// as (copykinds.go).
	Kind Kind
	// Field is the member of a record that holds its key.
	Field func(r *T) *K
	// Defaults, when set, gives a new record the values that the members a
	// stored record lacks read as; without it they read as zero values.
	Defaults func(r *T)
}

// Key is the key r is stored under.
func (d *Keyed[K, T]) Key(r *T) K { return *d.Field(r) }

// New is a new record of key k with the defaults: what a stored record of
// k is read over.
func (d *Keyed[K, T]) New(k K) *T {
	r := new(T)
	if d.Defaults != nil {
		d.Defaults(r)
	}
	*d.Field(r) = k
	return r
}

// The simple keyed record types. A device's are keyed by its IMEI, an
// organization's by its id.
var (
	KeyedHotspots = &Keyed[string, HotspotState]{Kind: KindHotspots,
		Field: func(r *HotspotState) *string { return &r.IMEI }}
	KeyedDeviceSettings = &Keyed[string, DeviceSettings]{Kind: KindDeviceSettings,
		Field: func(r *DeviceSettings) *string { return &r.IMEI }}
	KeyedOrgSettings = &Keyed[int64, OrgSettings]{Kind: KindOrgSettings,
		Field: func(r *OrgSettings) *int64 { return &r.OrganizationID }}
	KeyedAlbums = &Keyed[int64, Album]{Kind: KindAlbums,
		Field: func(r *Album) *int64 { return &r.OrganizationID }}
	KeyedHealthStates = &Keyed[string, HealthState]{Kind: KindHealthStates,
		Field: func(r *HealthState) *string { return &r.IMEI }}
	KeyedDeviceBillings = &Keyed[string, DeviceBilling]{Kind: KindDeviceBillings,
		Field: func(r *DeviceBilling) *string { return &r.IMEI }}
	KeyedDeviceCredentials = &Keyed[string, DeviceCredential]{Kind: KindDeviceCredentials,
		Field: func(r *DeviceCredential) *string { return &r.IMEI }}
	KeyedWebhookSettings = &Keyed[int64, WebhookSettings]{Kind: KindWebhookSettings,
		Field:    func(r *WebhookSettings) *int64 { return &r.OrganizationID },
		Defaults: func(r *WebhookSettings) { *r = *DefaultWebhookSettings(0) }}
	KeyedWebhookSecrets = &Keyed[int64, WebhookSecret]{Kind: KindWebhookSecrets,
		Field: func(r *WebhookSecret) *int64 { return &r.OrganizationID }}
)
