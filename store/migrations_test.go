package store_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/storetest"
	bolt "go.etcd.io/bbolt"
)

// Open opens the bbolt store at path.
func Open(path string, opts Options) (*DB, error) { return boltstore.Open(path, opts) }

// OpenMigrations opens the bbolt store at path, applying list in place of
// the store's migrations.
func OpenMigrations(path string, opts Options, list []Migration) (*DB, error) {
	e, err := boltstore.OpenEngine(path, opts.Timeout)
	if err != nil {
		return nil, err
	}
	db, err := NewMigrations(e, opts, list)
	if err != nil {
		e.Close()
	}
	return db, err
}

// These tests shape bbolt files as other versions of fleetcam leave them,
// so they open bbolt stores (Open, OpenMigrations) rather than whichever
// engine storetest gives.

// The names of the bbolt file these tests shape (store/bolt/buckets.go).
var (
	bucketMeta             = []byte("meta")
	bucketGPS              = []byte("gps")
	bucketPartners         = []byte("partners")
	bucketOrgEventHours    = []byte("org_event_hours")
	bucketWebhookReceivers = []byte("webhook_receivers")
	keySchemaVersion       = []byte("schema_version")
	keyEventHours          = []byte("org_event_hours") // in meta: the counts are complete
)

// latestVersion is the version of the last migration this build knows.
func latestVersion() int { ms := Migrations(); return ms[len(ms)-1].Version }

// storedVersion reads the schema version of the closed store at path
// straight from the bbolt file.
func storedVersion(t *testing.T, path string) int {
	t.Helper()
	var v int
	withBolt(t, path, func(btx *bolt.Tx) error {
		if raw := btx.Bucket(bucketMeta).Get(keySchemaVersion); raw != nil {
			v = int(binary.BigEndian.Uint64(raw))
		}
		return nil
	})
	return v
}

// withBolt runs fn in a bbolt write transaction on the closed store at
// path, to shape the file as another version of fleetcam would leave it.
func withBolt(t *testing.T, path string, fn func(btx *bolt.Tx) error) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// counted wraps each migration of list so that runs[version] counts its runs.
func counted(list []Migration, runs map[int]int) []Migration {
	out := make([]Migration, len(list))
	for i, m := range list {
		out[i] = m
		out[i].Up = func(tx *Tx) error {
			runs[m.Version]++
			return m.Up(tx)
		}
	}
	return out
}

func TestMigrationsAreNumberedFromOneInOrder(t *testing.T) {
	t.Parallel()
	for i, m := range Migrations() {
		if m.Version != i+1 || m.Name == "" || m.Up == nil {
			t.Fatalf("migration %d is {version %d, name %q, up set %v}; want version %d with a name and a function",
				i, m.Version, m.Name, m.Up != nil, i+1)
		}
	}
}

func TestNewStoreRecordsTheLatestVersion(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fleetcam.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got := storedVersion(t, path); got != latestVersion() {
		t.Fatalf("a new store records version %d, want %d", got, latestVersion())
	}
}

// A store written before migrations were versioned (no version, no hourly
// event counts, no webhook receivers index) runs every migration once.
func TestUnversionedStoreIsMigratedOnce(t *testing.T) {
	t.Parallel()
	storetest.Use(t, "bbolt") // the buckets of a store's file
	f := newEventFixture(t)
	f.ingest(f.dev, EventInput{Type: EventButton, Time: eventT0})
	f.update(func(tx *Tx) error {
		return tx.PutWebhookSettings(&WebhookSettings{OrganizationID: f.org.ID, GPSURLs: []string{"https://r.example.com/g"}})
	})
	path := f.db.Path()
	f.db.Close()
	withBolt(t, path, func(btx *bolt.Tx) error {
		for _, name := range [][]byte{bucketOrgEventHours, bucketWebhookReceivers} {
			if err := btx.DeleteBucket(name); err != nil {
				return err
			}
		}
		meta := btx.Bucket(bucketMeta)
		return errors.Join(meta.Delete(keyEventHours), meta.Delete(keySchemaVersion))
	})

	runs := map[int]int{}
	for range 2 {
		db, err := OpenMigrations(path, Options{Now: f.clock}, counted(Migrations(), runs))
		if err != nil {
			t.Fatal(err)
		}
		err = db.View(t.Context(), func(tx *Tx) error {
			if !tx.HasWebhookReceivers(f.org.ID, WebhookTypeGPS) {
				t.Error("webhook receivers index not rebuilt")
			}
			return nil
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		withBolt(t, path, func(btx *bolt.Tx) error {
			if btx.Bucket(bucketOrgEventHours).Stats().KeyN != 1 {
				t.Error("hourly event counts not backfilled")
			}
			return nil
		})
	}
	for _, m := range Migrations() {
		if runs[m.Version] != 1 {
			t.Errorf("migration %d ran %d times over two opens, want once", m.Version, runs[m.Version])
		}
	}
	if got := storedVersion(t, path); got != latestVersion() {
		t.Fatalf("migrated store records version %d, want %d", got, latestVersion())
	}
}

// A store whose recorded version is below the latest runs only the
// migrations above it.
func TestStoreRunsOnlyTheMigrationsItHasNotRecorded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fleetcam.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	withBolt(t, path, func(btx *bolt.Tx) error {
		return btx.Bucket(bucketMeta).Put(keySchemaVersion, binary.BigEndian.AppendUint64(nil, 1))
	})
	runs := map[int]int{}
	db, err = OpenMigrations(path, Options{}, counted(Migrations(), runs))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if runs[1] != 0 || runs[2] != 1 {
		t.Fatalf("from version 1: runs %v, want only migration 2 once", runs)
	}
}

func TestStoreFromANewerVersionDoesNotOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fleetcam.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	future := latestVersion() + 1
	// The newer version recorded its version and retired a bucket this one has.
	withBolt(t, path, func(btx *bolt.Tx) error {
		if err := btx.DeleteBucket(bucketGPS); err != nil {
			return err
		}
		return btx.Bucket(bucketMeta).Put(keySchemaVersion, binary.BigEndian.AppendUint64(nil, uint64(future)))
	})
	db, err = Open(path, Options{})
	if err == nil {
		db.Close()
		t.Fatal("a store from a newer version opened")
	}
	want := fmt.Sprintf("schema version %d and this version knows up to %d", future, latestVersion())
	if !errors.Is(err, ErrNewerStore) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q: want ErrNewerStore naming the file and %q", err, want)
	}
	withBolt(t, path, func(btx *bolt.Tx) error {
		if btx.Bucket(bucketGPS) != nil {
			t.Error("the refused open created a bucket")
		}
		return nil
	})
	if got := storedVersion(t, path); got != future {
		t.Fatalf("the refused open changed the version to %d", got)
	}
}

// A failing migration leaves its writes and its version unrecorded, says
// which migration failed, and the next open tries it again.
func TestFailingMigrationIsRolledBack(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fleetcam.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	broken := errors.New("disk full")
	failing := Migration{Version: latestVersion() + 1, Name: "split the partners", Up: func(tx *Tx) error {
		if _, err := tx.CreatePartner("Half-written"); err != nil {
			return err
		}
		return broken
	}}
	_, err = OpenMigrations(path, Options{}, append(Migrations(), failing))
	want := fmt.Sprintf("migration %d (split the partners) failed, the store is left at version %d", failing.Version, latestVersion())
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v: want %q wrapping the migration's error", err, want)
	}
	if got := storedVersion(t, path); got != latestVersion() {
		t.Fatalf("after the failed migration the store records version %d, want %d", got, latestVersion())
	}
	withBolt(t, path, func(btx *bolt.Tx) error {
		if n := btx.Bucket(bucketPartners).Stats().KeyN; n != 0 {
			t.Errorf("the failed migration left %d partners", n)
		}
		return nil
	})

	runs := map[int]int{}
	failing.Up = func(*Tx) error { return nil }
	db, err = OpenMigrations(path, Options{}, counted(append(Migrations(), failing), runs))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if runs[failing.Version] != 1 || len(runs) != 1 {
		t.Fatalf("after the fix: runs %v, want only migration %d once", runs, failing.Version)
	}
}
