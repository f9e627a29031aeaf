package bolt

import (
	"encoding/json"
	"fmt"

	"github.com/fleetcam/fleetcam/store"
)

// The simple keyed record types (store.Keyed): each in a bucket of its
// own, a record as JSON under its key (an id as 8 bytes big-endian, a
// string as it is), read, written and copied by the one implementation
// below.

// keyedBucket is the bucket of a type store.Keyed declares.
type keyedBucket[K store.Key, T any] struct {
	decl *store.Keyed[K, T]
	name []byte
}

// The buckets of the simple keyed record types.
var (
	hotspotBucket         = &keyedBucket[string, store.HotspotState]{store.KeyedHotspots, bucketHotspot}
	deviceSettingsBucket  = &keyedBucket[string, store.DeviceSettings]{store.KeyedDeviceSettings, bucketDeviceSettings}
	orgSettingsBucket     = &keyedBucket[int64, store.OrgSettings]{store.KeyedOrgSettings, bucketOrgSettings}
	albumBucket           = &keyedBucket[int64, store.Album]{store.KeyedAlbums, bucketAlbums}
	healthStateBucket     = &keyedBucket[string, store.HealthState]{store.KeyedHealthStates, bucketHealthState}
	billingBucket         = &keyedBucket[string, store.DeviceBilling]{store.KeyedDeviceBillings, bucketBilling}
	credentialBucket      = &keyedBucket[string, store.DeviceCredential]{store.KeyedDeviceCredentials, bucketDeviceCredentials}
	webhookSettingsBucket = &keyedBucket[int64, store.WebhookSettings]{store.KeyedWebhookSettings, bucketWebhookSettings}
	webhookSecretsBucket  = &keyedBucket[int64, store.WebhookSecret]{store.KeyedWebhookSecrets, bucketWebhookSecrets}
)

// keyedBuckets are the buckets of every simple keyed record type.
var keyedBuckets = []keyedKind{hotspotBucket, deviceSettingsBucket, orgSettingsBucket, albumBucket, healthStateBucket,
	billingBucket, credentialBucket, webhookSettingsBucket, webhookSecretsBucket}

// The kinds of record of the keyed buckets are derived from their
// declarations.
func init() {
	for _, b := range keyedBuckets {
		k, ck := b.copyKind()
		copyKinds[k] = ck
	}
}

// Hotspots implements store.TrackRecords.
func (t *tx) Hotspots() store.KeyedRecords[string, store.HotspotState] {
	return keyedRecords[string, store.HotspotState]{t}
}

// DeviceSettings implements store.TrackRecords.
func (t *tx) DeviceSettings() store.KeyedRecords[string, store.DeviceSettings] {
	return keyedRecords[string, store.DeviceSettings]{t}
}

// OrganizationSettings implements store.TrackRecords.
func (t *tx) OrganizationSettings() store.KeyedRecords[int64, store.OrgSettings] {
	return keyedRecords[int64, store.OrgSettings]{t}
}

// Albums implements store.TrackRecords.
func (t *tx) Albums() store.KeyedRecords[int64, store.Album] {
	return keyedRecords[int64, store.Album]{t}
}

// DeviceHealthStates implements store.AlarmRecords.
func (t *tx) DeviceHealthStates() store.KeyedRecords[string, store.HealthState] {
	return keyedRecords[string, store.HealthState]{t}
}

// DeviceBillings implements store.DeviceStateRecords.
func (t *tx) DeviceBillings() store.KeyedRecords[string, store.DeviceBilling] {
	return keyedRecords[string, store.DeviceBilling]{t}
}

// DeviceCredentials implements store.DeviceStateRecords.
func (t *tx) DeviceCredentials() store.KeyedRecords[string, store.DeviceCredential] {
	return keyedRecords[string, store.DeviceCredential]{t}
}

// WebhookSettings implements store.WebhookRecords.
func (t *tx) WebhookSettings() store.KeyedRecords[int64, store.WebhookSettings] {
	return keyedRecords[int64, store.WebhookSettings]{t}
}

// WebhookSecrets implements store.WebhookRecords.
func (t *tx) WebhookSecrets() store.KeyedRecords[int64, store.WebhookSecret] {
	return keyedRecords[int64, store.WebhookSecret]{t}
}

// keyedRecords are the records in t of the keyed bucket of T. They hold
// the transaction alone, so that an accessor returns them as an interface
// without allocating (every GPS message asks for its device's and its
// organization's settings).
type keyedRecords[K store.Key, T any] struct{ t *tx }

// bucket is the keyed bucket of T's records, which keyedBuckets lists.
func (r keyedRecords[K, T]) bucket() *keyedBucket[K, T] {
	for _, b := range keyedBuckets {
		if b, ok := b.(*keyedBucket[K, T]); ok {
			return b
		}
	}
	panic(fmt.Sprintf("store: no keyed bucket of %T", (*T)(nil)))
}

// Get implements store.KeyedRecords.
func (r keyedRecords[K, T]) Get(k K) (*T, error) { return r.bucket().get(r.t, k) }

// Put implements store.KeyedRecords.
func (r keyedRecords[K, T]) Put(rec *T) error { return r.bucket().put(r.t, rec) }

// Delete implements store.KeyedRecords.
func (r keyedRecords[K, T]) Delete(k K) error { return r.bucket().del(r.t, k) }

// get returns the record of key k in t; store.ErrNotFound when there is
// none. A stored record is decoded over a new one of its key: one that
// does not name its key is of the key it is stored under. Nothing is
// decoded for a record that is not there (every GPS message reads its
// organization's settings, which most do not have).
func (b *keyedBucket[K, T]) get(t *tx, k K) (*T, error) {
	key := keyBytes(k)
	raw := t.bucket(b.name).Get(key)
	if raw == nil {
		return nil, store.NotFound("")
	}
	return b.decode(k, key, raw)
}

// put stores r in t under its key.
func (b *keyedBucket[K, T]) put(t *tx, r *T) error {
	return putJSON(t.bucket(b.name), keyBytes(b.decl.Key(r)), r)
}

// del deletes the record of key k in t.
func (b *keyedBucket[K, T]) del(t *tx, k K) error { return t.bucket(b.name).Delete(keyBytes(k)) }

// decode decodes raw, the record stored under key, which is k's, over a
// new record of k.
func (b *keyedBucket[K, T]) decode(k K, key, raw []byte) (*T, error) {
	rec := b.decl.New(k)
	if err := json.Unmarshal(raw, rec); err != nil {
		return nil, fmt.Errorf("store: decode %s: %w", key, err)
	}
	return rec, nil
}

// keyBytes is the bucket key of k.
func keyBytes[K store.Key](k K) []byte {
	switch k := any(k).(type) {
	case int64:
		return itob(k)
	case string:
		return []byte(k)
	}
	panic("unreachable")
}

// parseKey is the key a bucket key b is of.
func parseKey[K store.Key](bucket, b []byte) (K, error) {
	var k K
	switch p := any(&k).(type) {
	case *int64:
		if len(b) != 8 {
			return k, fmt.Errorf("store: %s key %x is not of its layout", bucket, b)
		}
		*p = btoi(b)
	case *string:
		*p = string(b)
	}
	return k, nil
}

// keyedKind is a keyed bucket as a kind of record of a copy.
type keyedKind interface{ copyKind() (store.Kind, copyKind) }

// copyKind is the kind of record of b's records: its bucket, each record
// read over a new one of its key.
func (b *keyedBucket[K, T]) copyKind() (store.Kind, copyKind) {
	return b.decl.Kind, kindOf(bucketList(b.name),
		records(b.name, func(key, raw []byte) (*T, error) {
			k, err := parseKey[K](b.name, key)
			if err != nil {
				return nil, err
			}
			return b.decode(k, key, raw)
		}),
		b.put)
}
