package store

import bolt "go.etcd.io/bbolt"

// The store's tests are in package store_test, because they open stores
// through storetest, which imports store. These are the internals they
// inspect: bucket names, key codecs and the bbolt handles beneath.

const (
	HotspotAlphabet     = hotspotAlphabet
	TripStart           = tripStart
	TripEnd             = tripEnd
	DriverQRPayloadHead = driverQRPayloadHead
)

var (
	Btoi            = btoi
	Itob            = itob
	CompositeKey    = compositeKey
	PutJSON         = putJSON
	OrgEventKey     = orgEventKey
	QueueKey        = queueKey
	QueueValue      = queueValue
	ParseQueueEntry = parseQueueEntry

	KeyEventHours           = keyEventHours
	KeySchemaVersion        = []byte("schema_version")
	BucketMeta              = bucketMeta
	BucketMessages          = bucketMessages
	BucketDevices           = bucketDevices
	BucketDeviceLinks       = bucketDeviceLinks
	BucketDeviceTracks      = bucketDeviceTracks
	BucketTrips             = bucketTrips
	BucketDriverSessions    = bucketDriverSessions
	BucketOrgEvents         = bucketOrgEvents
	BucketOrgEventHours     = bucketOrgEventHours
	BucketMediaAge          = bucketMediaAge
	BucketDeliveries        = bucketDeliveries
	BucketOrgDeliveries     = bucketOrgDeliveries
	BucketWebhookReceivers  = bucketWebhookReceivers
	BucketGPS               = bucketGPS
	BucketHealthState       = bucketHealthState
	BucketAlarmOpen         = bucketAlarmOpen
	BucketAuxCameras        = bucketAuxCameras
	BucketBilling           = bucketBilling
	BucketDataUsage         = bucketDataUsage
	BucketDeviceCredentials = bucketDeviceCredentials
	BucketPinFailures       = bucketPinFailures
	BucketHotspot           = bucketHotspot
	BucketDeviceSettings    = bucketDeviceSettings
	BucketTripOpen          = bucketTripOpen
	BucketPartners          = bucketPartners
)

// Migration is a migration as the tests list, count and make up.
type Migration struct {
	Version int
	Name    string
	Up      func(tx *Tx) error
}

// Migrations lists the store's migrations in order.
func Migrations() []Migration {
	out := make([]Migration, len(migrations))
	for i, m := range migrations {
		out[i] = Migration{Version: m.version, Name: m.name, Up: m.up}
	}
	return out
}

// NewMigrations puts the store over engine as New does, applying list in
// place of the store's migrations.
func NewMigrations(engine Engine, opts Options, list []Migration) (*DB, error) {
	ms := make([]migration, len(list))
	for i, m := range list {
		ms[i] = migration{version: m.Version, name: m.Name, up: m.Up}
	}
	return newDB(engine, opts, ms)
}

// SchemaVersion is the version the meta bucket of a bbolt file records.
func SchemaVersion(btx *bolt.Tx) (int, error) {
	v := btx.Bucket([]byte("meta")).Get([]byte("schema_version"))
	if v == nil {
		return 0, nil
	}
	return int(btoi(v)), nil
}

// Bolt is the bbolt database beneath the store.
func (db *DB) Bolt() *bolt.DB { return db.engine.(interface{ Bolt() *bolt.DB }).Bolt() }

// Bolt is the bbolt transaction beneath tx.
func (tx *Tx) Bolt() *bolt.Tx { return tx.tx }

// Bucket is the bbolt bucket name, as the store's own code opens it.
func (tx *Tx) Bucket(name []byte) *bolt.Bucket { return tx.bucket(name) }

// StoreEvent stores e with its indexes and nothing else: no rules, no
// messages, no deduplication.
func (tx *Tx) StoreEvent(e *Event) error { return tx.storeEvent(e) }

// WalkEvents pages through the events of one index between from and to.
func (tx *Tx) WalkEvents(index, from, to []byte, match func(k, v []byte) bool, status string, p Page) ([]Event, int, error) {
	return tx.walkEvents(index, from, to, match, status, p)
}
