package store

// The store's tests are in package store_test, because they open stores
// through storetest, which imports store. These are the internals they
// use. What an engine keeps, and how, its own tests inspect (store/bolt).

const (
	HotspotAlphabet     = hotspotAlphabet
	TripStart           = tripStart
	TripEnd             = tripEnd
	DriverQRPayloadHead = driverQRPayloadHead
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

// StoreEvent stores e with its indexes and nothing else: no rules, no
// messages, no deduplication.
func (tx *Tx) StoreEvent(e *Event) error { return tx.storeEvent(e) }

// Inspect runs fn on the engine's records of tx, for a test that asks an
// engine what it offers beyond the record sets (its partitions).
func (tx *Tx) Inspect(fn func(Records) error) error { return fn(tx.rec) }

// TxRecords is the engine transaction tx writes through: the jobs of one
// group commit attempt share it.
func TxRecords(tx *Tx) Records { return tx.rec }
