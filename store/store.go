// Package store keeps every fleetcam record in one bbolt file: partners,
// users, organizations, devices, the audit log and the messages that later
// become webhooks. It knows nothing about HTTP or MQTT.
package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Clock returns the current time. Tests inject a fixed or stepping clock.
type Clock func() time.Time

// Options tune how the store is opened.
type Options struct {
	// Now is the clock used for timestamps; time.Now when nil.
	Now Clock
	// Timeout bounds the wait for the file lock held by another process.
	Timeout time.Duration
}

// DB is the fleetcam store. It is safe for concurrent use.
type DB struct {
	bolt *bolt.DB
	now  Clock
	// outbox wakes the webhook dispatcher after commits that touch the outbox.
	outbox *signal
}

// Buckets of this file; the other files declare the buckets they own.
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

// buckets is every bucket of the store, by the file that owns it. Open
// creates each one that is missing before it runs the migrations; a new
// bucket is added here, and a bucket that goes away leaves this list and
// is deleted by a migration.
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

// Open opens (creating when missing) the bbolt file at path and brings
// it up to date: every bucket exists and every migration has run. It
// refuses a store written by a newer version (ErrNewerStore).
func Open(path string, opts Options) (*DB, error) {
	return open(path, opts, migrations)
}

// open is Open with the list of migrations to apply.
func open(path string, opts Options, list []migration) (*DB, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create data directory: %w", err)
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// While the store is open, commits do not write bbolt's free-page list:
	// bbolt writes all of it, sorted, on every commit, and with the pages a
	// retention purge or the outbox pruning frees (126,000 in a store with a
	// million events) that made a commit 7× dearer. Close writes it once, so
	// the next Open reads it; after a crash Open rebuilds it by walking the
	// file (about 0.4 s for 1.2 GB in the page cache).
	b.NoFreelistSync = true
	db := &DB{bolt: b, now: opts.Now, outbox: newSignal()}
	if err := db.migrate(list); err != nil {
		b.Close()
		return nil, err
	}
	return db, nil
}

// Close writes the free-page list, so that the next Open reads it instead
// of walking the file, and closes the file. No write may run beside it.
func (db *DB) Close() error {
	db.bolt.NoFreelistSync = false
	err := db.bolt.Update(func(*bolt.Tx) error { return nil })
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		err = nil // closed before
	}
	return errors.Join(err, db.bolt.Close())
}

// Now returns the store clock's current time in UTC.
func (db *DB) Now() time.Time { return db.now().UTC() }

// Path is the file the store lives in.
func (db *DB) Path() string { return db.bolt.Path() }

// Actor is who causes a write; every write records it in the audit log.
type Actor struct {
	UserID         int64
	Email          string
	PartnerID      int64
	OrganizationID int64
	// Source names a non-user origin: "device", "system", "cli".
	Source    string
	RequestID string
}

// Tx is one read-write or read-only transaction. Writes made through it and
// the audit entries and messages they record commit together or not at all.
type Tx struct {
	tx    *bolt.Tx
	db    *DB
	actor Actor
	now   time.Time
	// signalled is set once the commit is due to wake outbox watchers.
	signalled bool
}

// Update runs fn in one read-write transaction on behalf of actor.
func (db *DB) Update(actor Actor, fn func(*Tx) error) error {
	return db.bolt.Update(func(btx *bolt.Tx) error {
		return fn(&Tx{tx: btx, db: db, actor: actor, now: db.Now()})
	})
}

// View runs fn in one read-only transaction.
func (db *DB) View(fn func(*Tx) error) error {
	return db.bolt.View(func(btx *bolt.Tx) error {
		return fn(&Tx{tx: btx, db: db, now: db.Now()})
	})
}

// Now is the time the transaction started, by the store clock.
func (tx *Tx) Now() time.Time { return tx.now }

// Actor is who the transaction writes for.
func (tx *Tx) Actor() Actor { return tx.actor }

func (tx *Tx) bucket(name []byte) *bolt.Bucket {
	b := tx.tx.Bucket(name)
	if appendBuckets[string(name)] {
		b.FillPercent = appendFill
	}
	return b
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

// nextID returns the next integer id of a bucket's sequence.
func (tx *Tx) nextID(name []byte) (int64, error) {
	seq, err := tx.bucket(name).NextSequence()
	return int64(seq), err
}

// itob encodes an id as an 8-byte big-endian key so keys sort numerically.
func itob(v int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b
}

func btoi(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// compositeKey joins parts into one key: ids as 8 bytes, strings as-is with a 0 separator.
func compositeKey(parts ...any) []byte {
	var k []byte
	for i, p := range parts {
		switch v := p.(type) {
		case int64:
			k = append(k, itob(v)...)
		case string:
			if i > 0 && len(k) > 0 {
				k = append(k, 0)
			}
			k = append(k, v...)
		case []byte:
			k = append(k, v...)
		}
	}
	return k
}

func getJSON(b *bolt.Bucket, key []byte, v any) error {
	raw := b.Get(key)
	if raw == nil {
		return NotFound("")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("store: decode %s: %w", key, err)
	}
	return nil
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encode: %w", err)
	}
	return b.Put(key, raw)
}

// Page selects a window of a list.
type Page struct {
	Limit  int
	Offset int
}

// window returns the slice bounds of page within n items.
func (p Page) window(n int) (int, int) {
	lo := min(p.Offset, n)
	hi := n
	if p.Limit > 0 {
		hi = min(lo+p.Limit, n)
	}
	return lo, hi
}

// Paginate returns the page of items and the total count.
func Paginate[T any](items []T, p Page) ([]T, int) {
	lo, hi := p.window(len(items))
	return items[lo:hi], len(items)
}
